package llm

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/kb/kbtest"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
)

func parseConfig(t *testing.T, text string) *config.Config {
	t.Helper()
	c, err := config.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fakeAdapters is an AdapterSource with a function field.
type fakeAdapters struct {
	forStage func(stage string) (*Adapter, error)
}

var _ AdapterSource = (*fakeAdapters)(nil)

func (f *fakeAdapters) AdapterForStage(_ context.Context, stage string) (*Adapter, error) {
	return f.forStage(stage)
}

// curatedAdapters opens the kbtest fixture, whose active adapter for
// "scope" is qwen3:4b-scope-v2 (reasoning) and whose "precision" adapter
// is inactive, read as workspace.Adapters reads the index.
func curatedAdapters(t *testing.T) AdapterSource {
	t.Helper()
	dir := t.TempDir()
	kbtest.Write(t, dir, "/src/shop")
	db, err := store.NewFactory(statedir.At(dir)).Open(context.Background(), store.Curated, "", true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	k := kb.New(db)
	return AdapterFunc(func(ctx context.Context, stage string) (*Adapter, error) {
		a, err := k.AdapterForStage(ctx, stage)
		if err != nil || a == nil {
			return nil, err
		}
		return &Adapter{ModelTag: a.ModelTag, BaseModel: a.BaseModel}, nil
	})
}

const seedConfig = `[models]
coding = "qwen2.5-coder:3b-instruct"
reasoning = "qwen3:4b-instruct-2507"
base_url = "http://localhost:11434/"

[models.overrides]
execute_code = "qwen2.5-coder:3b-code-v1"
task_analysis = "qwen3:4b-analysis-v1"

[budget]
context_window = 32768
reserved_tokens = 4096
`

func TestResolveOrder(t *testing.T) {
	cfg := parseConfig(t, seedConfig)
	r := NewRouter(cfg, curatedAdapters(t))
	base := ModelConfig{Provider: ProviderOllama, BaseURL: "http://localhost:11434", MaxTokens: DefaultMaxTokens,
		ContextWindow: 32768, Timeout: DefaultTimeout, MaxRetries: DefaultMaxRetries}
	with := func(role Role, stage, model, source string) ModelConfig {
		m := base
		m.Role, m.Stage, m.Model, m.Source = role, stage, model, source
		return m
	}
	tests := []struct {
		name  string
		role  Role
		stage string
		want  ModelConfig
	}{
		{"1. override for the stage", RoleCoding, "execute_code", with(RoleCoding, "execute_code", "qwen2.5-coder:3b-code-v1", "override")},
		{"1. override for a reasoning stage", RoleReasoning, "task_analysis", with(RoleReasoning, "task_analysis", "qwen3:4b-analysis-v1", "override")},
		{"2. active adapter of the stage", RoleReasoning, "scope", with(RoleReasoning, "scope", "qwen3:4b-scope-v2", "adapter")},
		{"2. an inactive adapter is not used", RoleReasoning, "precision", with(RoleReasoning, "precision", "qwen3:4b-instruct-2507", "role")},
		{"3. the role's model", RoleCoding, "execute_plan", with(RoleCoding, "execute_plan", "qwen2.5-coder:3b-instruct", "role")},
		{"3. no stage", RoleReasoning, "", with(RoleReasoning, "", "qwen3:4b-instruct-2507", "role")},
		{"3. supervisor without a table falls back to reasoning", RoleSupervisor, "", with(RoleSupervisor, "", "qwen3:4b-instruct-2507", "reasoning")},
		{"3. summarizer without a table falls back to reasoning", RoleSummarizer, "", with(RoleSummarizer, "", "qwen3:4b-instruct-2507", "reasoning")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.Resolve(context.Background(), tc.role, tc.stage)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolveAdapters(t *testing.T) {
	cfg := parseConfig(t, seedConfig)
	t.Run("trained for the other base model", func(t *testing.T) {
		r := NewRouter(cfg, &fakeAdapters{forStage: func(string) (*Adapter, error) {
			return &Adapter{BaseModel: "coding", ModelTag: "qwen2.5-coder:3b-scope"}, nil
		}})
		m, err := r.Resolve(context.Background(), RoleReasoning, "scope")
		if err != nil || m.Model != "qwen3:4b-instruct-2507" || m.Source != "role" {
			t.Errorf("got %s (%s), %v, want the reasoning model: a coding LoRA cannot serve it", m.Model, m.Source, err)
		}
	})
	t.Run("an override beats an active adapter", func(t *testing.T) {
		r := NewRouter(cfg, &fakeAdapters{forStage: func(string) (*Adapter, error) {
			return &Adapter{BaseModel: "coding", ModelTag: "adapter-tag"}, nil
		}})
		m, err := r.Resolve(context.Background(), RoleCoding, "execute_code")
		if err != nil || m.Model != "qwen2.5-coder:3b-code-v1" || m.Source != "override" {
			t.Errorf("got %s (%s), %v, want the override", m.Model, m.Source, err)
		}
	})
	t.Run("lookup fails", func(t *testing.T) {
		r := NewRouter(cfg, &fakeAdapters{forStage: func(string) (*Adapter, error) { return nil, sql.ErrConnDone }})
		if _, err := r.Resolve(context.Background(), RoleReasoning, "scope"); !errors.Is(err, sql.ErrConnDone) {
			t.Errorf("got %v, want the lookup's error", err)
		}
	})
	t.Run("not consulted for supervisors", func(t *testing.T) {
		r := NewRouter(cfg, &fakeAdapters{forStage: func(string) (*Adapter, error) {
			t.Error("adapter lookup for the supervisor role")
			return nil, nil
		}})
		if _, err := r.Resolve(context.Background(), RoleSupervisor, "design"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("no curated database", func(t *testing.T) {
		m, err := NewRouter(cfg, nil).Resolve(context.Background(), RoleReasoning, "scope")
		if err != nil || m.Model != "qwen3:4b-instruct-2507" {
			t.Errorf("got %s, %v", m.Model, err)
		}
	})
}

func TestResolveHardErrors(t *testing.T) {
	tests := []struct {
		name    string
		cfg     *config.Config
		role    Role
		wantErr string
	}{
		{"no config", nil, RoleReasoning, "no [models] section in config: run 'cra init --coding MODEL --reasoning MODEL --base-url URL' first"},
		{"no [models]", parseConfig(t, "[budget]\ncontext_window = 10\n"), RoleCoding, "run 'cra init --coding MODEL --reasoning MODEL --base-url URL' first"},
		{"no coding model", parseConfig(t, "[models]\nreasoning = \"r\"\nbase_url = \"http://h:1\"\n"), RoleCoding, "config has no models.coding: run 'cra init --coding MODEL' first"},
		{"no reasoning model", parseConfig(t, "[models]\ncoding = \"c\"\nbase_url = \"http://h:1\"\n"), RoleReasoning, "config has no models.reasoning: run 'cra init --reasoning MODEL' first"},
		{"supervisor falls back to a missing reasoning model", parseConfig(t, "[models]\ncoding = \"c\"\nbase_url = \"http://h:1\"\n"), RoleSupervisor, "run 'cra init --reasoning MODEL' first"},
		{"no base url", parseConfig(t, "[models]\ncoding = \"c\"\nreasoning = \"r\"\n"), RoleReasoning, "config has no models.base_url: run 'cra init --base-url URL' first"},
		{"summarizer on a main server without url", parseConfig(t, "[models]\nreasoning = \"r\"\n[models.summarizer]\nmodel = \"s\"\n"), RoleSummarizer, "config has no models.base_url: run 'cra init --base-url URL' first"},
		{"unknown role", parseConfig(t, seedConfig), Role("primary"), `unknown model role "primary"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewRouter(tc.cfg, nil).Resolve(context.Background(), tc.role, "")
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
			}
			if tc.role != "primary" && !errors.Is(err, config.ErrNoModels) {
				t.Errorf("got %v, want it to match config.ErrNoModels", err)
			}
		})
	}
}

func TestResolveSettings(t *testing.T) {
	cfg := parseConfig(t, `[models]
provider = "openai"
coding = "c"
reasoning = "r"
base_url = "http://localhost:8000/v1"
api_key_env = "VLLM_KEY"
coding_context_window = 16384
reasoning_context_window = 40960
coding_temperature = 0.1
reasoning_temperature = 0.2
max_tokens = 1000
timeout = "90s"
max_retries = 5

[models.supervisor]
provider = "openai"
model = "anthropic/claude-sonnet-4"
base_url = "https://openrouter.ai/api/v1"
api_key_env = "OPENROUTER_API_KEY"
temperature = 0.3

[models.summarizer]
model = "qwen2.5:0.5b"
max_tokens = 200
`)
	r := NewRouter(cfg, nil)
	common := ModelConfig{Provider: ProviderOpenAI, BaseURL: "http://localhost:8000/v1", APIKeyEnv: "VLLM_KEY", MaxTokens: 1000,
		Timeout: 90 * time.Second, MaxRetries: 5, Source: "role"}
	want := map[Role]ModelConfig{}
	m := common
	m.Role, m.Model, m.Temperature, m.ContextWindow = RoleCoding, "c", 0.1, 16384
	want[RoleCoding] = m
	m = common
	m.Role, m.Model, m.Temperature, m.ContextWindow = RoleReasoning, "r", 0.2, 40960
	want[RoleReasoning] = m
	// Its own server: nothing of the main one but the transport bounds.
	want[RoleSupervisor] = ModelConfig{Role: RoleSupervisor, Provider: ProviderOpenAI, Model: "anthropic/claude-sonnet-4",
		BaseURL: "https://openrouter.ai/api/v1", APIKeyEnv: "OPENROUTER_API_KEY", Temperature: 0.3, MaxTokens: 1000,
		Timeout: 90 * time.Second, MaxRetries: 5, Source: "role"}
	// The main server, with the reasoning model's window.
	m = common
	m.Role, m.Model, m.MaxTokens, m.ContextWindow = RoleSummarizer, "qwen2.5:0.5b", 200, 40960
	want[RoleSummarizer] = m
	for _, role := range Roles() {
		got, err := r.Resolve(context.Background(), role, "")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want[role], got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", role, diff)
		}
	}
	// Without provider the seed's meaning holds: base_url is an Ollama URL.
	m2, err := NewRouter(parseConfig(t, "[models]\nreasoning = \"r\"\nbase_url = \"http://h:1\"\n"), nil).Resolve(context.Background(), RoleReasoning, "")
	if err != nil || m2.Provider != ProviderOllama || m2.ContextWindow != 0 || m2.Temperature != 0 {
		t.Errorf("got %+v, %v, want ollama, no window, temperature 0", m2, err)
	}
}
