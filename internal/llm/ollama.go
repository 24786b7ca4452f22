package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/ollama/ollama/api"
)

// Ollama is a client of Ollama's native /api/chat. It sets num_ctx on every
// call, because Ollama silently truncates a prompt longer than its default
// window, and asks for one JSON reply rather than the default NDJSON stream
// (a stream is read all the same).
type Ollama struct {
	model ModelConfig
	base  *url.URL

	// Retry bounds the retries; NewOllama sets it from the model config.
	Retry RetryPolicy
	// Transport carries the requests; nil means http.DefaultTransport.
	Transport http.RoundTripper
	// Logger gets one line per retry; nil discards them.
	Logger *slog.Logger
}

var _ Client = (*Ollama)(nil)

// NewOllama returns a client of the Ollama server at m.BaseURL.
func NewOllama(m ModelConfig) (*Ollama, error) {
	base, err := parseBaseURL(m)
	if err != nil {
		return nil, err
	}
	return &Ollama{model: m, base: base, Retry: policyFor(m)}, nil
}

func parseBaseURL(m ModelConfig) (*url.URL, error) {
	if m.Model == "" {
		return nil, fmt.Errorf("%s model: no model tag", m.Role)
	}
	u, err := url.Parse(m.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s: base_url %q is not an http(s) URL", m, m.BaseURL)
	}
	return u, nil
}

func (o *Ollama) engine(key string) *engine {
	return &engine{model: o.model, policy: o.Retry, transport: o.Transport, logger: o.Logger, apiKey: key, message: ollamaMessage}
}

// ollamaMessage is the error text of an Ollama status reply.
func ollamaMessage(err error) string {
	var se api.StatusError
	if errors.As(err, &se) && se.ErrorMessage != "" {
		return se.ErrorMessage
	}
	var ae api.AuthorizationError
	if errors.As(err, &ae) {
		return "unauthorized"
	}
	return err.Error()
}

// NumCtx is the num_ctx a request is sent with: the caller's budgeted
// window, else the model's configured window; 0 when neither is known.
func (o *Ollama) NumCtx(req Request) int {
	if req.ContextWindow > 0 {
		return req.ContextWindow
	}
	return o.model.ContextWindow
}

// Complete sends req to /api/chat.
func (o *Ollama) Complete(ctx context.Context, req Request) (Response, error) {
	numCtx := o.NumCtx(req)
	if numCtx <= 0 {
		return Response{}, &CallError{Model: o.model, Err: fmt.Errorf("%w for the %s model: set models.%s_context_window or budget.context_window in .clean_room/config.toml (cra init --context-window N)",
			ErrNoContextWindow, o.model.Role, contextWindowRole(o.model.Role))}
	}
	key, err := apiKey(o.model)
	if err != nil {
		return Response{}, &CallError{Model: o.model, Unavailable: true, Err: err}
	}
	chat := o.chatRequest(req, numCtx)
	return o.engine(key).run(ctx, func(ctx context.Context, hc *http.Client) (Response, error) {
		var (
			text strings.Builder
			resp Response
			done bool
		)
		err := api.NewClient(o.base, hc).Chat(ctx, chat, func(r api.ChatResponse) error {
			text.WriteString(r.Message.Content)
			if r.Done {
				done = true
				resp.PromptTokens, resp.CompletionTokens = r.PromptEvalCount, r.EvalCount
			}
			return nil
		})
		if err != nil {
			return Response{}, err
		}
		if !done {
			return Response{}, &protocolError{err: errors.New("the reply ended before its final message")}
		}
		resp.Text = text.String()
		return resp, nil
	})
}

// contextWindowRole is the config key prefix of a role's window.
func contextWindowRole(r Role) string {
	if r == RoleCoding {
		return "coding"
	}
	return "reasoning"
}

func (o *Ollama) chatRequest(req Request, numCtx int) *api.ChatRequest {
	msgs := make([]api.Message, 0, len(req.Messages)+1)
	if req.System != "" {
		msgs = append(msgs, api.Message{Role: "system", Content: req.System})
	}
	for _, m := range req.Messages {
		msgs = append(msgs, api.Message{Role: m.Role, Content: m.Content})
	}
	temperature, maxTokens := o.model.settings(req)
	options := map[string]any{
		"num_ctx":     numCtx,
		"temperature": temperature,
	}
	if maxTokens > 0 {
		options["num_predict"] = maxTokens
	}
	if len(req.Stop) > 0 {
		options["stop"] = req.Stop
	}
	stream := false
	chat := &api.ChatRequest{Model: o.model.Model, Messages: msgs, Stream: &stream, Options: options}
	if req.JSON {
		chat.Format = json.RawMessage(`"json"`)
	}
	return chat
}

// ListModels lists the models the server has (/api/tags), in one attempt.
func (o *Ollama) ListModels(ctx context.Context) ([]string, error) {
	key, err := apiKey(o.model)
	if err != nil {
		return nil, &CallError{Model: o.model, Unavailable: true, Err: err}
	}
	e := o.engine(key)
	e.policy.MaxRetries = 0
	var names []string
	_, err = e.run(ctx, func(ctx context.Context, hc *http.Client) (Response, error) {
		list, err := api.NewClient(o.base, hc).List(ctx)
		if err != nil {
			return Response{}, err
		}
		for _, m := range list.Models {
			names = append(names, m.Name)
			if m.Model != "" && m.Model != m.Name {
				names = append(names, m.Model)
			}
		}
		return Response{}, nil
	})
	return names, err
}
