package llm

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/config"
)

// Adapter is a stage's active LoRA adapter as the router uses it (seed
// 001 §16.1): a row of the curated adapter_metadata table, read by kb.
type Adapter struct {
	ModelTag  string // the model tag that serves it
	BaseModel string // the role it was trained on: coding or reasoning
}

// AdapterSource finds the active LoRA adapter of a stage, nil when it has
// none (seed 001 §4.5, §16.1). workspace makes one of the index.
type AdapterSource interface {
	AdapterForStage(ctx context.Context, stage string) (*Adapter, error)
}

// AdapterFunc is an AdapterSource made of a function.
type AdapterFunc func(ctx context.Context, stage string) (*Adapter, error)

// AdapterForStage implements AdapterSource.
func (f AdapterFunc) AdapterForStage(ctx context.Context, stage string) (*Adapter, error) {
	return f(ctx, stage)
}

// Router resolves (role, stage) to a model (seed 001 §6.3, §16.1). It is
// built once per command from the loaded config and handed to whatever
// makes calls.
type Router struct {
	cfg      *config.Config
	adapters AdapterSource
	// Logger notes adapters passed over because they were trained for the
	// other base model; nil discards.
	Logger *slog.Logger
}

// NewRouter returns a router over cfg (which may be nil: every Resolve then
// fails naming 'cra init') and adapters (nil when there is no curated
// database: the adapter step is skipped).
func NewRouter(cfg *config.Config, adapters AdapterSource) *Router {
	return &Router{cfg: cfg, adapters: adapters}
}

// Resolve returns the model of a role for a stage ("" for none), in this
// order:
//
//  1. [models.overrides] has a key for the stage: that model tag;
//  2. the curated adapter_metadata has an active adapter for the stage,
//     trained on the role's base model: its model tag;
//  3. the role's model: [models] coding or reasoning, or the
//     [models.supervisor] / [models.summarizer] table, which fall back to
//     the reasoning model when absent;
//  4. none of these: a hard error that names 'cra init'.
//
// Overrides and adapters keep the role's server and settings: a LoRA is
// another tag on the same Ollama (§16.1).
func (r *Router) Resolve(ctx context.Context, role Role, stage string) (ModelConfig, error) {
	m, err := r.base(role)
	if err != nil {
		return ModelConfig{}, err
	}
	m.Stage = stage
	if stage == "" {
		return m, nil
	}
	if tag := r.cfg.Models.Overrides[stage]; tag != "" {
		m.Model, m.Source = tag, "override"
		return m, nil
	}
	if r.adapters != nil && (role == RoleCoding || role == RoleReasoning) {
		a, err := r.adapters.AdapterForStage(ctx, stage)
		if err != nil {
			return ModelConfig{}, fmt.Errorf("resolve model for stage %s: %w", stage, err)
		}
		switch {
		case a == nil:
		case a.BaseModel == string(role):
			m.Model, m.Source = a.ModelTag, "adapter"
		case r.Logger != nil:
			r.Logger.Warn("adapter not used: trained for another base model",
				"stage", stage, "adapter", a.ModelTag, "base_model", a.BaseModel, "role", role)
		}
	}
	return m, nil
}

// base is step 3 of Resolve: the role's own model, with every setting
// resolved.
func (r *Router) base(role Role) (ModelConfig, error) {
	var ms *config.Models
	if r.cfg != nil {
		ms = r.cfg.Models
	}
	if ms == nil {
		return ModelConfig{}, config.ErrNoModels
	}
	main := ModelConfig{
		Provider:      Provider(ms.Provider),
		BaseURL:       strings.TrimRight(ms.BaseURL, "/"),
		APIKeyEnv:     ms.APIKeyEnv,
		MaxTokens:     deref(ms.MaxTokens, DefaultMaxTokens),
		Timeout:       DefaultTimeout,
		MaxReplyBytes: int64(deref(ms.MaxReplyBytes, 0)), // 0: DefaultMaxReplyBytes
		MaxRetries:    deref(ms.MaxRetries, DefaultMaxRetries),
		Source:        "role",
	}
	if main.Provider == "" {
		main.Provider = ProviderOllama // seed 001 §6.3: base_url is the Ollama URL
	}
	if ms.Timeout != "" {
		if d, err := time.ParseDuration(ms.Timeout); err == nil && d > 0 {
			main.Timeout = d
		}
	}
	budgetWindow := 0
	if b := r.cfg.Budget; b != nil && b.ContextWindow != nil {
		budgetWindow = *b.ContextWindow
	}
	reasoning := func() (ModelConfig, error) {
		m := main
		m.Role, m.Model = RoleReasoning, ms.Reasoning
		m.Temperature = deref(ms.ReasoningTemperature, 0)
		m.ContextWindow = deref(ms.ReasoningContextWindow, budgetWindow)
		return m, r.complete(m, "--reasoning MODEL")
	}
	switch role {
	case RoleCoding:
		m := main
		m.Role, m.Model = RoleCoding, ms.Coding
		m.Temperature = deref(ms.CodingTemperature, 0)
		m.ContextWindow = deref(ms.CodingContextWindow, budgetWindow)
		return m, r.complete(m, "--coding MODEL")
	case RoleReasoning:
		return reasoning()
	case RoleSupervisor, RoleSummarizer:
		ep := ms.Supervisor
		if role == RoleSummarizer {
			ep = ms.Summarizer
		}
		if ep == nil || ep.Model == "" {
			m, err := reasoning()
			m.Role, m.Source = role, "reasoning"
			return m, err
		}
		m := main
		m.Role, m.Model = role, ep.Model
		if ep.BaseURL != "" {
			m.Provider, m.BaseURL, m.APIKeyEnv = Provider(ep.Provider), strings.TrimRight(ep.BaseURL, "/"), ep.APIKeyEnv
		}
		m.Temperature = deref(ep.Temperature, 0)
		m.MaxTokens = deref(ep.MaxTokens, m.MaxTokens)
		window := budgetWindow
		if ep.BaseURL == "" {
			window = deref(ms.ReasoningContextWindow, budgetWindow)
		}
		m.ContextWindow = deref(ep.ContextWindow, window)
		return m, r.complete(m, "")
	}
	return ModelConfig{}, fmt.Errorf("unknown model role %q: use coding, reasoning, supervisor or summarizer", role)
}

// complete checks that m names a model and a server; flag is the cra init
// flag that sets the model.
func (r *Router) complete(m ModelConfig, flag string) error {
	var missing, flags []string
	if m.Model == "" && flag != "" {
		missing, flags = append(missing, "models."+string(m.Role)), append(flags, flag)
	}
	if m.BaseURL == "" {
		missing, flags = append(missing, "models.base_url"), append(flags, "--base-url URL")
	}
	if len(missing) == 0 {
		return nil
	}
	return &missingModelError{missing: missing, flags: flags}
}

// missingModelError is a [models] section that lacks what a role needs. It
// matches config.ErrNoModels.
type missingModelError struct{ missing, flags []string }

func (e *missingModelError) Error() string {
	return fmt.Sprintf("config has no %s: run 'cra init %s' first", strings.Join(e.missing, ", "), strings.Join(e.flags, " "))
}

func (e *missingModelError) Is(target error) bool { return target == config.ErrNoModels }

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
