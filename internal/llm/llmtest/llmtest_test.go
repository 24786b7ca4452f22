package llmtest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/ollama/ollama/api"
	openai "github.com/sashabaranov/go-openai"
)

func ollamaClient(t *testing.T, s *Server) *api.Client {
	u, err := url.Parse(s.OllamaURL())
	if err != nil {
		t.Fatal(err)
	}
	return api.NewClient(u, http.DefaultClient)
}

func openAIClient(s *Server) *openai.Client {
	cfg := openai.DefaultConfig("")
	cfg.BaseURL = s.OpenAIURL()
	return openai.NewClientWithConfig(cfg)
}

// TestOllamaStreaming speaks to the server with the real client, which
// streams NDJSON unless told otherwise.
func TestOllamaStreaming(t *testing.T) {
	s := NewServer(t)
	s.Enqueue(Reply{Text: "hello streaming world", PromptTokens: 9, CompletionTokens: 3})
	var parts []string
	var final api.ChatResponse
	err := ollamaClient(t, s).Chat(context.Background(), &api.ChatRequest{Model: "m", Messages: []api.Message{{Role: "user", Content: "hi"}}},
		func(r api.ChatResponse) error {
			parts = append(parts, r.Message.Content)
			if r.Done {
				final = r
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) < 3 || strings.Join(parts, "") != "hello streaming world" {
		t.Errorf("got chunks %q, want several that join to the text", parts)
	}
	if !final.Done || final.PromptEvalCount != 9 || final.EvalCount != 3 || final.DoneReason != "stop" {
		t.Errorf("final message: got %+v", final)
	}
	if r := s.ChatRequests()[0]; !r.Stream || r.Protocol != "ollama" {
		t.Errorf("recorded request: got stream=%v protocol=%s, want a streamed ollama request", r.Stream, r.Protocol)
	}
}

func TestOpenAIStreaming(t *testing.T) {
	s := NewServer(t)
	s.Enqueue(Text("hello streaming world"))
	stream, err := openAIClient(s).CreateChatCompletionStream(context.Background(), openai.ChatCompletionRequest{
		Model: "m", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "one two"}}, Stream: true,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var text strings.Builder
	var usage *openai.Usage
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range chunk.Choices {
			text.WriteString(c.Delta.Content)
		}
		if chunk.Usage != nil {
			usage = chunk.Usage
		}
	}
	if text.String() != "hello streaming world" {
		t.Errorf("got %q", text.String())
	}
	if usage == nil || usage.PromptTokens != 2 || usage.CompletionTokens != 3 {
		t.Errorf("usage: got %+v, want 2 prompt and 3 completion tokens (counted words)", usage)
	}
}

func TestOpenAINonStreaming(t *testing.T) {
	s := NewServer(t)
	s.Enqueue(Reply{Text: "done", PromptTokens: 4, CompletionTokens: 1})
	r, err := openAIClient(s).CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
		Model: "m", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "x"}}, MaxTokens: 7,
		ResponseFormat: &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Choices[0].Message.Content != "done" || r.Usage.PromptTokens != 4 || r.Usage.CompletionTokens != 1 || r.Choices[0].FinishReason != "stop" {
		t.Errorf("got %+v", r)
	}
	if req := s.ChatRequests()[0]; req.MaxTokens != 7 || !req.JSON || req.Stream {
		t.Errorf("recorded: got max_tokens=%d json=%v stream=%v", req.MaxTokens, req.JSON, req.Stream)
	}
}

func TestScriptingOrder(t *testing.T) {
	s := NewServer(t)
	s.On(Contains("special"), Text("first special"), Text("later special"))
	s.On(Model("other"), Status(http.StatusServiceUnavailable, "loading"))
	s.Enqueue(Text("q1"), Text("q2"))
	ask := func(model, prompt string) string {
		t.Helper()
		var got string
		err := ollamaClient(t, s).Chat(context.Background(), &api.ChatRequest{Model: model, Messages: []api.Message{{Role: "user", Content: prompt}}},
			func(r api.ChatResponse) error { got += r.Message.Content; return nil })
		if err != nil {
			return "error: " + err.Error()
		}
		return got
	}
	got := []string{ask("m", "plain"), ask("m", "a special one"), ask("m", "special again"), ask("m", "special thrice"), ask("m", "plain"),
		ask("other", "plain"), ask("m", "plain")}
	want := []string{"q1", "first special", "later special", "later special", "q2", "error: 503 Service Unavailable: loading",
		"error: 500 Internal Server Error: llmtest: no reply scripted for this request"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	s.SetDefault(Text("default"))
	if got := ask("m", "x"); got != "default" {
		t.Errorf("with a default: got %q", got)
	}
	if n := len(s.ChatRequests()); n != 8 {
		t.Errorf("got %d recorded chat requests, want 8", n)
	}
}

func TestFaults(t *testing.T) {
	post := func(s *Server, path, body string) (*http.Response, error) {
		return http.Post(s.URL+path, "application/json", strings.NewReader(body))
	}
	t.Run("429 with Retry-After", func(t *testing.T) {
		s := NewServer(t)
		s.Enqueue(RateLimited("7"))
		resp, err := post(s, "/v1/chat/completions", `{"model":"m","messages":[]}`)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" || !strings.Contains(string(body), `"message":"rate limited"`) {
			t.Errorf("got %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	})
	t.Run("malformed", func(t *testing.T) {
		s := NewServer(t)
		s.Enqueue(Malformed())
		resp, err := post(s, "/api/chat", `{"model":"m","messages":[],"stream":false}`)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || strings.HasPrefix(string(body), "{") && isJSON(body) {
			t.Errorf("got %d %s, want a 200 with broken JSON", resp.StatusCode, body)
		}
	})
	t.Run("drop", func(t *testing.T) {
		s := NewServer(t)
		s.Enqueue(Drop())
		if resp, err := post(s, "/api/chat", `{"model":"m"}`); err == nil {
			resp.Body.Close()
			t.Errorf("got a %d reply, want the connection dropped", resp.StatusCode)
		}
	})
	t.Run("slow reply ends when the client leaves", func(t *testing.T) {
		s := NewServer(t)
		s.Enqueue(Slow(time.Minute, "late"))
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/api/chat", strings.NewReader(`{"model":"m"}`))
		start := time.Now()
		if _, err := http.DefaultClient.Do(req); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v, want the client's deadline", err)
		}
		s.Close() // must not wait for the minute
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("took %s", d)
		}
	})
	t.Run("bad request body", func(t *testing.T) {
		s := NewServer(t)
		resp, err := post(s, "/api/chat", `{"model":`)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("got %d, want 400", resp.StatusCode)
		}
	})
}

func isJSON(b []byte) bool {
	var v any
	return json.Unmarshal(b, &v) == nil
}

func TestModelLists(t *testing.T) {
	s := NewServer(t)
	s.SetModels("a:1b", "b:latest")
	list, err := ollamaClient(t, s).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Models) != 2 || list.Models[0].Name != "a:1b" {
		t.Errorf("/api/tags: got %+v", list.Models)
	}
	ml, err := openAIClient(s).ListModels(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ml.Models) != 2 || ml.Models[1].ID != "b:latest" {
		t.Errorf("/v1/models: got %+v", ml.Models)
	}
	if v, err := ollamaClient(t, s).Version(context.Background()); err != nil || v == "" {
		t.Errorf("/api/version: got %q, %v", v, err)
	}
	paths := []string{}
	for _, r := range s.Requests() {
		paths = append(paths, r.Method+" "+r.Path)
	}
	if diff := cmp.Diff([]string{"GET /api/tags", "GET /v1/models", "GET /api/version"}, paths); diff != "" {
		t.Errorf("recorded (-want +got):\n%s", diff)
	}
}

func TestParseReply(t *testing.T) {
	files := map[string]string{"ok.json": `{"a": 1}`}
	read := func(name string) string { return files[name] }
	tests := []struct {
		spec string
		want Reply
		bad  bool
	}{
		{"@ok.json", Text(`{"a": 1}`), false},
		{"text=hi there", Text("hi there"), false},
		{"status=500", Status(500, "llmtest: injected Internal Server Error"), false},
		{"ratelimit=2", RateLimited("2"), false},
		{"slow=2s@ok.json", Slow(2*time.Second, `{"a": 1}`), false},
		{"slow=1ms", Slow(time.Millisecond, ""), false},
		{"malformed", Malformed(), false},
		{"drop", Drop(), false},
		{"status=abc", Reply{}, true},
		{"slow=later", Reply{}, true},
		{"teapot", Reply{}, true},
	}
	for _, tc := range tests {
		got, err := ParseReply(tc.spec, read)
		if (err != nil) != tc.bad {
			t.Errorf("ParseReply(%q): got error %v, want error %v", tc.spec, err, tc.bad)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParseReply(%q) (-want +got):\n%s", tc.spec, diff)
		}
	}
}

func TestMatches(t *testing.T) {
	temp := 0.0
	r := Request{Method: "POST", Path: "/api/chat", Model: "m", Options: map[string]any{"num_ctx": 8192.0}, Temperature: &temp, MaxTokens: 100,
		JSON: true, Messages: []Message{{Role: "system", Content: "sys"}, {Role: "user", Content: "Path: app/db.py"}}}
	if !Matches(regexp.MustCompile(`Path: app/db\.py`))(r) || Contains("app/api.py")(r) || !Contains("sys")(r) {
		t.Error("matchers disagree with the prompt")
	}
	if got := r.Summary(); got != "POST /api/chat model=m num_ctx=8192 max_tokens=100 temperature=0 json=true stream=false messages=2" {
		t.Errorf("summary: got %q", got)
	}
}
