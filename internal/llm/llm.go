// Package llm is the one layer every LLM call of cra goes through (seed 001
// §6): two providers (Ollama's native /api/chat and OpenAI-compatible
// /v1/chat/completions), transport retries (§15), the model router that
// resolves (role, stage) to a model (§6.3, §16.1), and the recorder that
// writes every call, failed ones too, to the raw database (§4.6).
//
// A pipeline asks a Gateway for a Client with the call's role, stage, type
// and task; the Gateway resolves the model, builds the provider client and
// wraps it so that each Complete is recorded. Tests script the two wire
// protocols with llm/llmtest; no test calls a real model.
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Role is the job a model does (seed 001 §3, seed 003 "Hybrid Model
// Routing").
type Role string

// The model roles.
const (
	RoleCoding     Role = "coding"     // code edits
	RoleReasoning  Role = "reasoning"  // task analysis, retrieval judgments, plans, enrichment, training
	RoleSupervisor Role = "supervisor" // reviewers and supervisor agents; may run on a cloud endpoint
	RoleSummarizer Role = "summarizer" // cheap, frequent summaries and normalisation
)

// Roles lists the roles in the order they are documented.
func Roles() []Role { return []Role{RoleCoding, RoleReasoning, RoleSupervisor, RoleSummarizer} }

// Provider is the wire protocol of a model server.
type Provider string

// The providers.
const (
	ProviderOllama Provider = "ollama" // Ollama's native /api/chat
	ProviderOpenAI Provider = "openai" // an OpenAI-compatible /v1/chat/completions
)

// Message is one turn of a conversation. Role is "user" or "assistant";
// the system prompt is Request.System.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is one completion asked of a model (seed 001 §6.2). Zero values
// take the model's configured defaults.
type Request struct {
	System   string
	Messages []Message
	// Temperature overrides the model's configured temperature when set.
	Temperature *float64
	// MaxTokens caps the reply; 0 uses the model's max_tokens.
	MaxTokens int
	// Stop ends the reply at the first of these strings.
	Stop []string
	// JSON asks for a JSON object where the provider has a JSON mode
	// (Ollama format "json", OpenAI response_format json_object). The
	// reply still goes through ExtractJSON: small models wrap it anyway.
	JSON bool
	// ContextWindow is the window the caller budgeted this prompt against
	// (cra solve's execute-model window); 0 uses the model's configured
	// window. It is Ollama's num_ctx.
	ContextWindow int
}

// UserPrompt returns a request with one user message.
func UserPrompt(system, prompt string) Request {
	return Request{System: system, Messages: []Message{{Role: "user", Content: prompt}}}
}

// PromptText is the text recorded as a call's prompt: the single user
// message itself, or for a conversation the messages as a JSON array of
// {role, content}. The system prompt is recorded apart.
func PromptText(req Request) string {
	if len(req.Messages) == 1 && req.Messages[0].Role == "user" {
		return req.Messages[0].Content
	}
	msgs := req.Messages
	if msgs == nil {
		msgs = []Message{}
	}
	data, _ := json.Marshal(msgs) // strings only: cannot fail
	return string(data)
}

// Response is a model's reply (seed 001 §6.2).
type Response struct {
	Text             string
	PromptTokens     int // as the server counted them; 0 when it did not say
	CompletionTokens int
	// Latency is the wall time of the whole call, retries included.
	Latency time.Duration
	// Attempts is how many requests the call took (1 without retries).
	Attempts int
}

// Client completes requests against one resolved model.
type Client interface {
	Complete(ctx context.Context, req Request) (Response, error)
}

// ModelConfig is a resolved model: everything a provider needs for a call
// (seed 001 §6.3).
type ModelConfig struct {
	Role     Role
	Stage    string // the stage it was resolved for; "" for none
	Provider Provider
	Model    string
	BaseURL  string
	// APIKeyEnv names the environment variable holding the API key; the
	// key is read at call time and never stored.
	APIKeyEnv   string
	Temperature float64
	MaxTokens   int
	// MaxReplyBytes bounds the bytes read of one reply; 0 is
	// DefaultMaxReplyBytes.
	MaxReplyBytes int64
	ContextWindow int // tokens; 0 when no window is configured
	// Timeout bounds each attempt; MaxRetries bounds the retries.
	Timeout    time.Duration
	MaxRetries int
	// Source says which step of the routing order chose Model: "override",
	// "adapter", "role", or "reasoning" for a supervisor or summarizer
	// without a table of its own.
	Source string
}

// settings are the temperature and reply cap of a call: the request's
// where it sets them, else the model's.
func (m ModelConfig) settings(req Request) (temperature float64, maxTokens int) {
	temperature, maxTokens = m.Temperature, m.MaxTokens
	if req.Temperature != nil {
		temperature = *req.Temperature
	}
	if req.MaxTokens > 0 {
		maxTokens = req.MaxTokens
	}
	return temperature, maxTokens
}

// String names the model for messages: "reasoning model qwen3:4b at
// http://localhost:11434 (ollama)".
func (m ModelConfig) String() string {
	return fmt.Sprintf("%s model %s at %s (%s)", m.Role, m.Model, m.BaseURL, m.Provider)
}

// Defaults of the tuning knobs a config may leave unset (seed 001 §6.3:
// "reasonable default OK").
const (
	DefaultMaxTokens  = 4096
	DefaultTimeout    = 5 * time.Minute // per attempt: small local models on a CPU are slow
	DefaultMaxRetries = 3
)

// ErrUnavailable matches the errors of calls that failed in transport:
// the server could not be reached, timed out, or kept answering 429 or
// 5xx through every retry, or the API key is missing. Callers that may
// degrade (supervisors, seed 003 "Graceful Degradation") test for it.
var ErrUnavailable = errors.New("model server unavailable")

// ErrNoContextWindow is returned by an Ollama call that knows no context
// window: without num_ctx Ollama silently truncates long prompts.
var ErrNoContextWindow = errors.New("no context window configured")

// New returns the client of the provider m names.
func New(m ModelConfig) (Client, error) {
	switch m.Provider {
	case ProviderOllama:
		return NewOllama(m)
	case ProviderOpenAI:
		return NewOpenAI(m)
	}
	return nil, fmt.Errorf("unknown provider %q: use ollama or openai", m.Provider)
}
