// Package llmtest is a fake model server for tests: one httptest server
// that speaks both Ollama's native API (/api/chat, /api/tags,
// /api/version, and the blobs and /api/create that deploy an adapter) and the OpenAI-compatible one (/v1/chat/completions,
// /v1/models, and the Responses API's /v1/responses), in their real wire formats, streaming when a request asks
// for it (Ollama's NDJSON is the default when "stream" is absent; OpenAI's
// SSE when "stream" is true).
//
// Replies are scripted per test, by order (Enqueue) or by matcher (On):
// text with token counts, or calls of the tools a request offers, so
// that a real agent CLI runs its own tools against the server (see
// agents.go). They can be faults instead: an error status (500, 429 with Retry-After),
// a slow reply, a malformed JSON body or a dropped connection. Every
// request is recorded for assertions. ScriptCmd makes the server usable
// from testscript. tailscale's testcontrol is the model.
package llmtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Reply is one scripted answer to a chat request.
type Reply struct {
	// Text is the assistant message.
	Text string
	// PromptTokens and CompletionTokens are the counts reported; 0 counts
	// the words of the prompt and of Text.
	PromptTokens     int
	CompletionTokens int
	// CachedTokens is the part of the prompt reported as read from the
	// provider's cache (OpenAI's cached_tokens).
	CachedTokens int
	// ToolCalls, when set, make the reply a request to call tools, after
	// Text if that is set too.
	ToolCalls []ToolCall
	// Status, when set and not 200, makes the reply an error with this
	// status and Error as its message.
	Status int
	Error  string
	// RetryAfter is sent as the Retry-After header when set.
	RetryAfter string
	// Delay holds the reply back (a slow server); it ends early when the
	// client goes away or the server closes.
	Delay time.Duration
	// Malformed sends a 200 whose body is not valid JSON.
	Malformed bool
	// Drop closes the connection without an answer.
	Drop bool
}

// Text is a reply with the given assistant message.
func Text(s string) Reply { return Reply{Text: s} }

// Status is an error reply.
func Status(code int, message string) Reply { return Reply{Status: code, Error: message} }

// RateLimited is a 429 reply asking to retry after the given value of
// Retry-After (seconds or an HTTP date).
func RateLimited(retryAfter string) Reply {
	return Reply{Status: http.StatusTooManyRequests, Error: "rate limited", RetryAfter: retryAfter}
}

// Slow is a reply sent after d.
func Slow(d time.Duration, text string) Reply { return Reply{Text: text, Delay: d} }

// Malformed is a 200 reply whose body is broken JSON.
func Malformed() Reply { return Reply{Malformed: true} }

// Drop is a connection closed without an answer.
func Drop() Reply { return Reply{Drop: true} }

// Request is one request the server received.
type Request struct {
	Protocol string // "ollama" or "openai"; "" for other paths
	Method   string
	Path     string
	Header   http.Header
	Body     []byte
	// Status is the HTTP status the server answered.
	Status int

	// Create is the decoded body of POST /api/create.
	Create *CreateRequest

	// Decoded from a chat request's body.
	Model    string
	Messages []Message
	Stream   bool
	JSON     bool           // Ollama format "json" or OpenAI response_format json_object
	Options  map[string]any // Ollama's options: num_ctx, num_predict, temperature, stop
	// Temperature, MaxTokens and Stop are the OpenAI fields, or the
	// matching Ollama options.
	Temperature *float64
	MaxTokens   int
	Stop        []string
	// Tools are the tools the request offers the model, in its order.
	Tools []Tool
}

// Message is one message of a chat request, normalized across the
// protocols: Content is the text of its parts; a tool's result has role
// "tool" (a Responses API function_call_output too).
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ToolCallID is the call a tool's result answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// Chat reports whether the request is a chat completion (a Responses API
// request included).
func (r Request) Chat() bool {
	return r.Path == "/api/chat" || r.Path == "/v1/chat/completions" || r.Path == "/v1/responses"
}

// Prompt is the text of every message, one per line, for matching.
func (r Request) Prompt() string {
	var b strings.Builder
	for _, m := range r.Messages {
		b.WriteString(m.Content)
		b.WriteByte('\n')
	}
	return b.String()
}

// NumCtx is Ollama's num_ctx option, 0 when absent.
func (r Request) NumCtx() int {
	v, _ := r.Options["num_ctx"].(float64)
	return int(v)
}

// Matcher picks the chat requests a rule answers.
type Matcher func(Request) bool

// Contains matches requests whose prompt (system included) contains s.
func Contains(s string) Matcher {
	return func(r Request) bool { return strings.Contains(r.Prompt(), s) }
}

// Matches matches requests whose prompt matches the regular expression.
func Matches(re *regexp.Regexp) Matcher {
	return func(r Request) bool { return re.MatchString(r.Prompt()) }
}

// Model matches requests for the model.
func Model(name string) Matcher { return func(r Request) bool { return r.Model == name } }

type rule struct {
	match   Matcher
	replies []Reply // consumed in order; the last one repeats
}

// Server is the fake model server. It is safe for concurrent use.
type Server struct {
	// URL is the server's root: the Ollama base URL.
	URL string

	srv       *httptest.Server
	closing   chan struct{}
	closeOnce sync.Once

	mu         sync.Mutex
	rules      []*rule
	queue      []Reply
	fallback   *Reply
	models     []string
	requests   []Request
	blobs      map[string][]byte // digest "sha256:<hex>" → content
	created    []CreateRequest
	pullable   map[string]time.Duration // full model name → how long its pull takes
	pullStalls bool                     // pulls stream nothing after their first line (SetPullStalls)
	strict     bool
	calls      int // tool calls numbered so far (callIDs)
}

// NewServer starts a server that tb closes at cleanup.
func NewServer(tb testing.TB) *Server {
	tb.Helper()
	s := Start()
	tb.Cleanup(s.Close)
	return s
}

// Start starts a server on a loopback port; Close stops it.
func Start() *Server {
	s := &Server{closing: make(chan struct{}), blobs: map[string][]byte{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close stops the server, ending slow replies at once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closing)
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}

// OllamaURL is the base URL an Ollama client is given.
func (s *Server) OllamaURL() string { return s.URL }

// OpenAIURL is the base URL an OpenAI-compatible client is given.
func (s *Server) OpenAIURL() string { return s.URL + "/v1" }

// Enqueue adds replies answered in order to chat requests no rule matches.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, replies...)
}

// On answers the chat requests m matches with replies, in order; the last
// one then answers every further match. Rules are tried in the order they
// were added, before the queue.
func (s *Server) On(m Matcher, replies ...Reply) {
	if len(replies) == 0 {
		panic("llmtest: On needs at least one reply")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, &rule{match: m, replies: replies})
}

// SetDefault answers chat requests that no rule matches once the queue is
// empty. Without a default such a request gets a 500 saying so.
func (s *Server) SetDefault(r Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fallback = &r
}

// SetModels sets the models /api/tags and /v1/models list, and that
// /api/create accepts as a base; a model created later is added to them.
func (s *Server) SetModels(names ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = append([]string(nil), names...)
}

// SetStrict makes the Ollama chat answer only the models it lists
// (SetModels, and those /api/create made), others with Ollama's 404
// "model … not found, try pulling it first"; by default any model answers.
func (s *Server) SetStrict(strict bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.strict = strict
}

// Requests returns every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// ChatRequests returns the chat requests received so far, in order.
func (s *Server) ChatRequests() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Chat() {
			out = append(out, r)
		}
	}
	return out
}

// next picks the reply to a chat request.
func (s *Server) next(req Request) Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.rules {
		if !r.match(req) {
			continue
		}
		reply := r.replies[0]
		if len(r.replies) > 1 {
			r.replies = r.replies[1:]
		}
		return reply
	}
	if len(s.queue) > 0 {
		reply := s.queue[0]
		s.queue = s.queue[1:]
		return reply
	}
	if s.fallback != nil {
		return *s.fallback
	}
	return Status(http.StatusInternalServerError, "llmtest: no reply scripted for this request")
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body := new(bytes.Buffer)
	body.ReadFrom(r.Body)
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body.Bytes()}
	switch {
	case strings.HasPrefix(req.Path, "/api/"):
		req.Protocol = "ollama"
	case strings.HasPrefix(req.Path, "/v1/"):
		req.Protocol = "openai"
	}
	decodeErr := decodeChat(&req)
	if req.Path == "/api/create" && len(req.Body) > 0 {
		var cr CreateRequest
		if json.Unmarshal(req.Body, &cr) == nil {
			req.Create = &cr
		}
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	n := len(s.requests) - 1
	models := append([]string(nil), s.models...)
	s.mu.Unlock()
	sw := &statusWriter{ResponseWriter: w}
	w = sw
	defer func() {
		s.mu.Lock()
		s.requests[n].Status = sw.status
		s.mu.Unlock()
	}()

	switch {
	case r.Method == http.MethodGet && (req.Path == "/" || req.Path == ""):
		fmt.Fprint(w, "Ollama is running")
	case r.Method == http.MethodGet && req.Path == "/api/version":
		writeJSON(w, http.StatusOK, map[string]string{"version": "0.0.0-llmtest"})
	case r.Method == http.MethodGet && req.Path == "/api/tags":
		list := []map[string]any{}
		for _, m := range models {
			list = append(list, map[string]any{"name": m, "model": m, "modified_at": "2024-01-01T00:00:00Z",
				"size": 1, "digest": "sha256:0", "details": map[string]any{"format": "gguf"}})
		}
		writeJSON(w, http.StatusOK, map[string]any{"models": list})
	case r.Method == http.MethodGet && req.Path == "/v1/models":
		list := []map[string]any{}
		for _, m := range models {
			list = append(list, map[string]any{"id": m, "object": "model", "created": 0, "owned_by": "llmtest"})
		}
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": list})
	case (r.Method == http.MethodHead || r.Method == http.MethodPost) && strings.HasPrefix(req.Path, "/api/blobs/"):
		s.serveBlob(w, req)
	case r.Method == http.MethodPost && req.Path == "/api/create":
		s.serveCreate(w, r, req)
	case r.Method == http.MethodPost && req.Chat():
		if decodeErr != nil {
			s.writeError(w, req, Status(http.StatusBadRequest, "llmtest: cannot decode the request: "+decodeErr.Error()))
			return
		}
		s.mu.Lock()
		unknown := s.strict && req.Protocol == "ollama" && !s.hasModel(req.Model)
		s.mu.Unlock()
		if unknown {
			s.writeError(w, req, Status(http.StatusNotFound, fmt.Sprintf("model %q not found, try pulling it first", req.Model)))
			return
		}
		s.answer(w, r, req, s.next(req))
	default:
		s.writeError(w, req, Status(http.StatusNotFound, "404 page not found"))
	}
}

// answer writes reply to a chat request, or the fault it describes.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, req Request, reply Reply) {
	if reply.Delay > 0 {
		t := time.NewTimer(reply.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		case <-s.closing:
			t.Stop()
			return
		}
	}
	switch {
	case reply.Drop:
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler) // aborts the response without an answer
	case reply.Status != 0 && reply.Status != http.StatusOK:
		if reply.RetryAfter != "" {
			w.Header().Set("Retry-After", reply.RetryAfter)
		}
		s.writeError(w, req, reply)
	case reply.Malformed:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"model": "`+req.Model+`", "message": {"role": "assistant", "content": ]}`)
	case req.Protocol == "ollama":
		writeOllama(w, req, reply)
	case req.Path == "/v1/responses":
		writeResponses(w, req, reply, s.callIDs(reply))
	case len(reply.ToolCalls) > 0:
		writeChatToolCalls(w, req, reply, s.callIDs(reply))
	default:
		writeOpenAI(w, req, reply)
	}
}

func (s *Server) writeError(w http.ResponseWriter, req Request, reply Reply) {
	msg := reply.Error
	if msg == "" {
		msg = http.StatusText(reply.Status)
	}
	if req.Protocol == "openai" {
		writeJSON(w, reply.Status, map[string]any{"error": map[string]any{"message": msg, "type": "llmtest_error", "code": reply.Status}})
		return
	}
	writeJSON(w, reply.Status, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// counts returns the token counts of a reply.
func counts(req Request, reply Reply) (prompt, completion int) {
	prompt, completion = reply.PromptTokens, reply.CompletionTokens
	if prompt == 0 {
		prompt = len(strings.Fields(req.Prompt()))
	}
	if completion == 0 {
		completion = len(strings.Fields(reply.Text))
	}
	return prompt, completion
}

// chunks splits a reply into up to three pieces for streaming.
func chunks(text string) []string {
	if len(text) < 3 {
		return []string{text}
	}
	a, b := len(text)/3, 2*len(text)/3
	return []string{text[:a], text[a:b], text[b:]}
}

const created = "2024-01-01T00:00:00Z"

func writeOllama(w http.ResponseWriter, req Request, reply Reply) {
	prompt, completion := counts(req, reply)
	final := map[string]any{
		"model": req.Model, "created_at": created, "message": map[string]string{"role": "assistant", "content": reply.Text},
		"done": true, "done_reason": "stop", "total_duration": 1000, "load_duration": 10,
		"prompt_eval_count": prompt, "prompt_eval_duration": 100, "eval_count": completion, "eval_duration": 200,
	}
	if !req.Stream {
		writeJSON(w, http.StatusOK, final)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	for _, c := range chunks(reply.Text) {
		enc.Encode(map[string]any{"model": req.Model, "created_at": created,
			"message": map[string]string{"role": "assistant", "content": c}, "done": false})
		flush(w)
	}
	final["message"] = map[string]string{"role": "assistant", "content": ""}
	enc.Encode(final)
}

func writeOpenAI(w http.ResponseWriter, req Request, reply Reply) {
	usage := openAIUsage(req, reply)
	if !req.Stream {
		writeJSON(w, http.StatusOK, map[string]any{
			"id": "chatcmpl-llmtest", "object": "chat.completion", "created": 1704067200, "model": req.Model,
			"choices": []map[string]any{{"index": 0, "message": map[string]string{"role": "assistant", "content": reply.Text},
				"finish_reason": "stop"}},
			"usage": usage,
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(v any) {
		data, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", data)
		flush(w)
	}
	chunk := func(delta map[string]string, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-llmtest", "object": "chat.completion.chunk", "created": 1704067200, "model": req.Model,
			"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	event(chunk(map[string]string{"role": "assistant"}, nil))
	for _, c := range chunks(reply.Text) {
		event(chunk(map[string]string{"content": c}, nil))
	}
	event(chunk(map[string]string{}, "stop"))
	event(map[string]any{"id": "chatcmpl-llmtest", "object": "chat.completion.chunk", "created": 1704067200, "model": req.Model,
		"choices": []any{}, "usage": usage})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// statusWriter notes the status a handler answered.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack lets a dropped reply close the connection.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("llmtest: connection cannot be hijacked")
	}
	return hj.Hijack()
}

func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// decodeChat fills the chat fields of req from its body.
func decodeChat(req *Request) error {
	if !req.Chat() || len(req.Body) == 0 {
		return nil
	}
	if req.Path == "/v1/responses" {
		return decodeResponses(req)
	}
	var body struct {
		Model          string          `json:"model"`
		Messages       []message       `json:"messages"`
		Tools          json.RawMessage `json:"tools"`
		Stream         *bool           `json:"stream"`
		Format         json.RawMessage `json:"format"`
		Options        map[string]any  `json:"options"`
		Temperature    *float64        `json:"temperature"`
		MaxTokens      int             `json:"max_tokens"`
		MaxCompletion  int             `json:"max_completion_tokens"`
		Stop           []string        `json:"stop"`
		ResponseFormat *struct {
			Type string `json:"type"`
		} `json:"response_format"`
	}
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return err
	}
	req.Model, req.Messages, req.Options = body.Model, chatMessages(body.Messages), body.Options
	req.Tools = chatTools(body.Tools)
	if req.Protocol == "ollama" {
		req.Stream = body.Stream == nil || *body.Stream // Ollama streams unless told not to
		req.JSON = len(body.Format) > 0 && string(body.Format) != "null" && string(body.Format) != `""`
		if t, ok := body.Options["temperature"].(float64); ok {
			req.Temperature = &t
		}
		if n, ok := body.Options["num_predict"].(float64); ok {
			req.MaxTokens = int(n)
		}
		if stop, ok := body.Options["stop"].([]any); ok {
			for _, s := range stop {
				if s, ok := s.(string); ok {
					req.Stop = append(req.Stop, s)
				}
			}
		}
		return nil
	}
	req.Stream = body.Stream != nil && *body.Stream
	req.JSON = body.ResponseFormat != nil && body.ResponseFormat.Type == "json_object"
	req.Temperature, req.Stop = body.Temperature, body.Stop
	req.MaxTokens = body.MaxTokens
	if req.MaxTokens == 0 {
		req.MaxTokens = body.MaxCompletion
	}
	return nil
}
