package llm

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// OpenAI is a client of an OpenAI-compatible /v1/chat/completions
// (OpenRouter, vLLM, llama.cpp server, LM Studio). BaseURL is the API root,
// ending in /v1. The API key comes from the environment variable named by
// api_key_env at each call; without one no Authorization header is sent,
// as local servers expect.
type OpenAI struct {
	model ModelConfig

	// Retry bounds the retries; NewOpenAI sets it from the model config.
	Retry RetryPolicy
	// Transport carries the requests; nil means http.DefaultTransport.
	Transport http.RoundTripper
	// Logger gets one line per retry; nil discards them.
	Logger *slog.Logger
}

var _ Client = (*OpenAI)(nil)

// NewOpenAI returns a client of the OpenAI-compatible server at m.BaseURL.
func NewOpenAI(m ModelConfig) (*OpenAI, error) {
	if _, err := parseBaseURL(m); err != nil {
		return nil, err
	}
	return &OpenAI{model: m, Retry: policyFor(m)}, nil
}

func (o *OpenAI) engine() *engine {
	// The key travels in the library's Authorization header, not the
	// transport's.
	return &engine{model: o.model, policy: o.Retry, transport: o.Transport, logger: o.Logger, message: openAIMessage}
}

func (o *OpenAI) client(key string, hc *http.Client) *openai.Client {
	cfg := openai.DefaultConfig(key)
	cfg.BaseURL = strings.TrimRight(o.model.BaseURL, "/")
	cfg.HTTPClient = hc
	return openai.NewClientWithConfig(cfg)
}

// openAIMessage is the error text of an OpenAI-compatible status reply.
func openAIMessage(err error) string {
	var ae *openai.APIError
	if errors.As(err, &ae) && ae.Message != "" {
		return ae.Message
	}
	var re *openai.RequestError
	if errors.As(err, &re) && len(re.Body) > 0 {
		return strings.TrimSpace(string(re.Body))
	}
	return err.Error()
}

// Complete sends req to /chat/completions.
func (o *OpenAI) Complete(ctx context.Context, req Request) (Response, error) {
	key, err := apiKey(o.model)
	if err != nil {
		return Response{}, &CallError{Model: o.model, Unavailable: true, Err: err}
	}
	creq := o.chatRequest(req)
	return o.engine().run(ctx, func(ctx context.Context, hc *http.Client) (Response, error) {
		r, err := o.client(key, hc).CreateChatCompletion(ctx, creq)
		if err != nil {
			return Response{}, err
		}
		if len(r.Choices) == 0 {
			return Response{}, &protocolError{err: errors.New("no choices in the reply")}
		}
		return Response{
			Text:             r.Choices[0].Message.Content,
			PromptTokens:     r.Usage.PromptTokens,
			CompletionTokens: r.Usage.CompletionTokens,
		}, nil
	})
}

func (o *OpenAI) chatRequest(req Request) openai.ChatCompletionRequest {
	msgs := make([]openai.ChatCompletionMessage, 0, len(req.Messages)+1)
	if req.System != "" {
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: req.System})
	}
	for _, m := range req.Messages {
		msgs = append(msgs, openai.ChatCompletionMessage{Role: m.Role, Content: m.Content})
	}
	temperature, maxTokens := o.model.settings(req)
	creq := openai.ChatCompletionRequest{
		Model:       o.model.Model,
		Messages:    msgs,
		MaxTokens:   maxTokens,
		Temperature: float32(temperature),
		Stop:        req.Stop,
	}
	if creq.Temperature == 0 {
		// go-openai omits a zero temperature, and the server's default is
		// 1.0; the smallest float32 is sent instead and is 0 in effect
		// (the library's documented workaround).
		creq.Temperature = math.SmallestNonzeroFloat32
	}
	if req.JSON {
		creq.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}
	}
	return creq
}

// ListModels lists the models the server offers (/v1/models), in one
// attempt.
func (o *OpenAI) ListModels(ctx context.Context) ([]string, error) {
	key, err := apiKey(o.model)
	if err != nil {
		return nil, &CallError{Model: o.model, Unavailable: true, Err: err}
	}
	e := o.engine()
	e.policy.MaxRetries = 0
	var names []string
	_, err = e.run(ctx, func(ctx context.Context, hc *http.Client) (Response, error) {
		list, err := o.client(key, hc).ListModels(ctx)
		if err != nil {
			return Response{}, err
		}
		for _, m := range list.Models {
			names = append(names, m.ID)
		}
		return Response{}, nil
	})
	return names, err
}
