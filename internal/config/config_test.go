package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cra-dev/cra/internal/dataset"
	"github.com/cra-dev/cra/internal/glob"
)

func intp(v int) *int { return &v }

func floatp(v float64) *float64 { return &v }

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    *Config
		wantErr string
	}{
		{name: "empty", in: "", want: &Config{}},
		{
			name: "seed example",
			in: `[models]
coding = "qwen2.5-coder:3b-instruct"
reasoning = "qwen3:4b-instruct-2507"
base_url = "http://localhost:11434"

[models.overrides]
scope = "qwen3:4b-scope-v1"

[budget]
context_window = 32768
reserved_tokens = 4096

[solve]
max_attempts = 3
max_refinement_loops = 2

[stages]
default = "scope,precision"
`,
			want: &Config{
				Models: &Models{Coding: "qwen2.5-coder:3b-instruct", Reasoning: "qwen3:4b-instruct-2507", BaseURL: "http://localhost:11434",
					Overrides: map[string]string{"scope": "qwen3:4b-scope-v1"}},
				Budget: &Budget{ContextWindow: intp(32768), ReservedTokens: intp(4096)},
				Solve:  &Solve{MaxAttempts: intp(3), MaxRefinementLoops: intp(2)},
				Stages: &Stages{Default: "scope,precision"},
			},
		},
		{
			name: "unknown keys are reported",
			in:   "[models]\ncoding = \"c\"\ntemprature = 1\n[extra]\nx = 1\n",
			want: &Config{Models: &Models{Coding: "c"}, Unknown: []string{"extra", "extra.x", "models.temprature"}},
		},
		{name: "syntax error", in: "[models\n", wantErr: "parse config.toml"},
		{name: "wrong type", in: "[budget]\ncontext_window = \"big\"\n", wantErr: "parse config.toml"},
		{name: "reserved >= window", in: "[budget]\ncontext_window = 10\nreserved_tokens = 10\n", wantErr: "reserved_tokens must be < budget.context_window"},
		{name: "zero window", in: "[budget]\ncontext_window = 0\n", wantErr: "context_window must be > 0"},
		{name: "negative reserved", in: "[budget]\nreserved_tokens = -1\n", wantErr: "reserved_tokens must be >= 0"},
		{name: "zero attempts", in: "[solve]\nmax_attempts = 0\n", wantErr: "max_attempts must be >= 1"},
		{name: "bad fsync policy", in: "[world]\nfsync = \"sometimes\"\n", wantErr: `world.fsync is "sometimes": use agent, always or never`},
		{name: "fsync policy", in: "[world]\nfsync = \"never\"\n", want: &Config{World: &World{Fsync: "never"}}},
		{
			name: "model settings",
			in: `[models]
provider = "openai"
coding = "c"
reasoning = "r"
base_url = "http://localhost:8000/v1"
api_key_env = "VLLM_KEY"
coding_context_window = 16384
reasoning_context_window = 32768
coding_temperature = 0.0
reasoning_temperature = 0.3
max_tokens = 2048
timeout = "90s"
max_retries = 2

[models.supervisor]
provider = "openai"
model = "anthropic/claude-sonnet-4"
base_url = "https://openrouter.ai/api/v1"
api_key_env = "OPENROUTER_API_KEY"
context_window = 200000
temperature = 0.2

[models.summarizer]
model = "qwen2.5:0.5b"
`,
			want: &Config{Models: &Models{Provider: "openai", Coding: "c", Reasoning: "r", BaseURL: "http://localhost:8000/v1",
				APIKeyEnv: "VLLM_KEY", CodingContextWindow: intp(16384), ReasoningContextWindow: intp(32768),
				CodingTemperature: floatp(0), ReasoningTemperature: floatp(0.3), MaxTokens: intp(2048), Timeout: "90s", MaxRetries: intp(2),
				Supervisor: &Endpoint{Provider: "openai", Model: "anthropic/claude-sonnet-4", BaseURL: "https://openrouter.ai/api/v1",
					APIKeyEnv: "OPENROUTER_API_KEY", ContextWindow: intp(200000), Temperature: floatp(0.2)},
				Summarizer: &Endpoint{Model: "qwen2.5:0.5b"}}},
		},
		{name: "unknown provider", in: "[models]\nprovider = \"anthropic\"\n", wantErr: `models.provider is "anthropic": use ollama or openai`},
		{name: "bad base url", in: "[models]\nbase_url = \"localhost:11434\"\n", wantErr: `models.base_url "localhost:11434" is not an http(s) URL`},
		{name: "api key instead of its variable", in: "[models]\napi_key_env = \"sk-or-v1-0123\"\n", wantErr: "not an environment variable name"},
		{name: "password in the base url", in: "[models]\nbase_url = \"http://alice:s3cretPW@gpu-box:11434\"\n", wantErr: "models.base_url carries a user or password"},
		{name: "password in a supervisor's base url", in: "[models.supervisor]\nmodel = \"m\"\nprovider = \"openai\"\nbase_url = \"https://alice:s3cretPW@example.org/v1\"\n",
			wantErr: "models.supervisor.base_url carries a user or password"},
		{name: "override of no stage", in: "[models.overrides]\nscoep = \"q:4b-scope-v1\"\n", wantErr: "models.overrides.scoep names no stage: use one of task_analysis, scope"},
		{name: "bad timeout", in: "[models]\ntimeout = \"soon\"\n", wantErr: `models.timeout is "soon"`},
		{name: "negative timeout", in: "[models]\ntimeout = \"-1s\"\n", wantErr: `models.timeout is "-1s"`},
		{name: "too many retries", in: "[models]\nmax_retries = 99\n", wantErr: "models.max_retries must be between 0 and 20"},
		{name: "bad windows and temperature", in: "[models]\ncoding_context_window = 0\nmax_tokens = -1\nreasoning_temperature = 3.5\n",
			wantErr: "models.coding_context_window must be > 0; models.max_tokens must be > 0; models.reasoning_temperature must be between 0 and 2"},
		{name: "nan temperature", in: "[models]\ncoding_temperature = nan\n", wantErr: "models.coding_temperature must be between 0 and 2"},
		{name: "empty override", in: "[models.overrides]\nscope = \"\"\n", wantErr: "models.overrides.scope is empty"},
		{name: "supervisor without model", in: "[models.supervisor]\ntemperature = 0.5\n", wantErr: "[models.supervisor] has no model"},
		{name: "supervisor url without provider", in: "[models.supervisor]\nmodel = \"m\"\nbase_url = \"https://openrouter.ai/api/v1\"\n",
			wantErr: "models.supervisor.base_url is set: also set models.supervisor.provider"},
		{name: "summarizer provider without url", in: "[models.summarizer]\nmodel = \"m\"\nprovider = \"openai\"\n",
			wantErr: "models.summarizer sets provider or api_key_env without base_url"},
		{name: "unknown endpoint key", in: "[models.supervisor]\nmodel = \"m\"\napi_key = \"secret\"\n",
			want: &Config{Models: &Models{Supervisor: &Endpoint{Model: "m"}}, Unknown: []string{"models.supervisor.api_key"}}},
		{
			name: "solve and validation",
			in:   "[solve]\nmax_attempts = 2\nkeep_worktree = \"always\"\n[validation]\ntest = \"go test ./...\"\nlint = \"go vet ./...\"\ntypecheck = \"tsc --noEmit\"\ntimeout = \"90s\"\n",
			want: &Config{Solve: &Solve{MaxAttempts: intp(2), KeepWorktree: KeepAlways},
				Validation: &Validation{Test: "go test ./...", Lint: "go vet ./...", Typecheck: "tsc --noEmit", Timeout: "90s"}},
		},
		{name: "bad keep_worktree", in: "[solve]\nkeep_worktree = \"sometimes\"\n", wantErr: `solve.keep_worktree is "sometimes": use always, on_failure or never`},
		{name: "bad validation timeout", in: "[validation]\ntimeout = \"0s\"\n", wantErr: `validation.timeout is "0s"`},
		{name: "unknown validation key", in: "[validation]\ntests = \"pytest\"\n", want: &Config{Validation: &Validation{}, Unknown: []string{"validation.tests"}}},
		{name: "protected and caches", in: "[validation]\ntest = \"sh check.sh\"\nprotected = [\"ci/**\", \"**/*.golden\"]\ncaches = [\"~/.cache/go-build\", \"/var/cache/pip\"]\n",
			want: &Config{Validation: &Validation{Test: "sh check.sh", Protected: []string{"ci/**", "**/*.golden"}, Caches: []string{"~/.cache/go-build", "/var/cache/pip"}}}},
		{name: "protected outside the repository", in: "[validation]\nprotected = [\"../secrets\", \"/etc/x\"]\n",
			wantErr: `validation.protected: bad pattern: "../secrets" has a segment ".."; write a plain path inside the repository; validation.protected: bad pattern: "/etc/x" is absolute`},
		{name: "protected bad glob", in: "[validation]\nprotected = [\"tests**\", \"[\"]\n", wantErr: `"tests**" uses ** inside a segment`},
		{name: "protected as a string", in: "[validation]\nprotected = \"ci/**\"\n", wantErr: "parse config.toml"},
		{name: "relative cache", in: "[validation]\ncaches = [\".cache\"]\n", wantErr: `validation.caches has ".cache": give an absolute path, one under ~/, or one starting with an environment variable`},
		{name: "train", in: "[train]\ncommand = \"sh train.sh\"\nstages = \"stage_rates\"\ncoding_hf_model = \"Qwen/Qwen2.5-Coder-3B-Instruct\"\n",
			want: &Config{Train: &Train{Command: "sh train.sh", Stages: "stage_rates", CodingHFModel: "Qwen/Qwen2.5-Coder-3B-Instruct"}}},
		{name: "blank train command", in: "[train]\ncommand = \"  \"\n", wantErr: "train.command is blank: name a command or remove the key"},
		{name: "train model with a space", in: "[train]\nreasoning_hf_model = \"Qwen 3\"\n", wantErr: `train.reasoning_hf_model is "Qwen 3": name a Hugging Face model id`},
		{name: "bad index bounds", in: "[index]\nhistory_depth = -1\nmax_commit_files = 1\n", wantErr: "history_depth must be >= 0; index.max_commit_files must be >= 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				for _, secret := range []string{"s3cretPW", "sk-or-v1-0123"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("the error repeats the secret %q: %v", secret, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestEncodeWritesOnlyWhatIsSet pins seed 001 §10.1: cra init never writes a
// value the user did not give.
func TestEncodeWritesOnlyWhatIsSet(t *testing.T) {
	c := &Config{Models: &Models{Coding: "c"}, Budget: &Budget{ContextWindow: intp(100)}}
	data, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, absent := range []string{"reasoning", "base_url", "reserved_tokens", "[solve]", "[validation]", "[stages]", "overrides", "[index]",
		"provider", "api_key_env", "_context_window", "temperature", "max_tokens", "timeout", "max_retries", "supervisor", "summarizer"} {
		if strings.Contains(text, absent) {
			t.Errorf("encoded config contains %q, which was not set:\n%s", absent, text)
		}
	}
	back, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestLoadAndRequireModels(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	c, err := Load(path)
	if c != nil || err != nil {
		t.Fatalf("missing file: got %v, %v, want nil, nil", c, err)
	}
	if _, err := c.RequireModels(); !errors.Is(err, ErrNoModels) || !strings.Contains(err.Error(), "cra init") {
		t.Errorf("nil config: got %v, want ErrNoModels naming cra init", err)
	}
	writeConfig(t, path, &Config{Budget: &Budget{ContextWindow: intp(1)}})
	c, err = Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RequireModels(); !errors.Is(err, ErrNoModels) {
		t.Errorf("config without [models]: got %v, want ErrNoModels", err)
	}
	c.Models = &Models{Coding: "c", Reasoning: "r"}
	if m, err := c.RequireModels(); err != nil || m.Coding != "c" {
		t.Errorf("got %v, %v", m, err)
	}
}

// writeConfig writes c to path as 'cra init' does.
func writeConfig(t *testing.T, path string, c *Config) {
	t.Helper()
	data, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCheckPatternIsGlobCheck: config checks [validation] protected with
// its own copy of glob.Check, so that it imports no package of cra's;
// both accept and refuse the same patterns.
func TestCheckPatternIsGlobCheck(t *testing.T) {
	for _, p := range []string{"", "/abs", `a\b`, "a//b", "./a", "a/..", "**", "a/**", "**/conftest.py", "a**", "a/b**c/d",
		"[", "a/[b", "*.go", "tests/**/x_test.go", "ci/*.yml", "a/b/c", "x?", `\`, "a/./b"} {
		got, want := checkPattern(p), glob.Check(p)
		if (got == nil) != (want == nil) || got != nil && strings.TrimPrefix(got.Error(), "bad pattern") != strings.TrimPrefix(want.Error(), glob.ErrBad.Error()) {
			t.Errorf("checkPattern(%q) = %v, glob.Check = %v", p, got, want)
		}
	}
}

// FuzzParse feeds arbitrary text to the config parser: it returns a config
// or an error, never panics, and a config it accepts re-encodes to an
// equivalent one.
func FuzzParse(f *testing.F) {
	f.Add([]byte("[models]\ncoding = \"c\"\n[budget]\ncontext_window = 10\nreserved_tokens = 2\n"))
	f.Add([]byte("[models.overrides]\nscope = \"x\"\n"))
	f.Add([]byte("[[x]]\na = 1e999\n"))
	f.Add([]byte("[agents]\n[agents.a]\ncommand = \"run {task_id}\"\n[board]\ndefault_agent = \"a\"\n"))
	f.Add([]byte("[models]\nprovider = \"openai\"\ntimeout = \"1m\"\ncoding_temperature = 0.5\n[models.supervisor]\nmodel = \"m\"\nprovider = \"openai\"\nbase_url = \"https://x/v1\"\n"))
	f.Add([]byte("[fleet]\ndatabase_url_env = \"CRA_DATABASE_URL\"\nhost = \"h\"\nremote = \"origin\"\nlease = \"2m\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		if _, err := c.FleetSettings(); err != nil {
			t.Fatalf("a config that validates does not resolve [fleet]: %v", err)
		}
		c.Unknown = nil
		enc, err := c.Encode()
		if err != nil {
			t.Fatalf("encode of a parsed config: %v", err)
		}
		back, err := Parse(enc)
		if err != nil {
			t.Fatalf("re-parse of encoded config: %v\n%s", err, enc)
		}
		back.Unknown = nil
		if !cmp.Equal(c, back, cmpopts.EquateEmpty()) {
			t.Fatalf("round trip changed the config:\n%s", cmp.Diff(c, back))
		}
	})
}

func TestLossy(t *testing.T) {
	written, err := (&Config{Solve: &Solve{MaxAttempts: ptr(3)}}).Encode()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		text string
		want bool
	}{
		{"as cra wrote it", string(written), false},
		{"a comment line", string(written) + "# keep me\n", true},
		{"a comment after a value", "[solve]\nmax_attempts = 3 # three is enough\n", true},
		{"a comment after a string", "[models]\ncoding = \"c\" # small\n", true},
		{"a hash inside a string", "[models]\ncoding = \"c#1\"\nreasoning = 'r#2'\n", false},
		{"an escaped quote before a hash", "[models]\ncoding = \"a\\\"#b\"\n", false},
		{"an unknown key", "[models]\ntemprature = 0.2\n", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Decode([]byte(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Lossy([]byte(tc.text)); got != tc.want {
				t.Errorf("Lossy(%q) = %v, want %v", tc.text, got, tc.want)
			}
		})
	}
}

func TestDecodeLeavesValuesToValidate(t *testing.T) {
	text := []byte("[budget]\ncontext_window = -5\n")
	if _, err := Parse(text); err == nil || !strings.Contains(err.Error(), "budget.context_window must be > 0") {
		t.Fatalf("Parse: got %v, want the bad value named", err)
	}
	c, err := Decode(text)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if c.Budget == nil || c.Budget.ContextWindow == nil || *c.Budget.ContextWindow != -5 {
		t.Errorf("Decode lost the value: %+v", c.Budget)
	}
}

func ptr[T any](v T) *T { return &v }

// TestOverrideStagesHoldTheDatasetStages: every stage a dataset trains an
// adapter for may be overridden.
func TestOverrideStagesHoldTheDatasetStages(t *testing.T) {
	for _, st := range dataset.Stages {
		if !slices.Contains(OverrideStages, st) {
			t.Errorf("stage %s is not among OverrideStages %v", st, OverrideStages)
		}
	}
}

func TestExpandCache(t *testing.T) {
	t.Setenv("HOME", "/home/me")
	t.Setenv("CRA_TEST_CACHE", "/var/cache/go")
	for in, want := range map[string]string{"~/.cache/go-build": "/home/me/.cache/go-build", "/var/cache//pip/": "/var/cache/pip", "$CRA_TEST_CACHE/build": "/var/cache/go/build"} {
		if got, err := ExpandCache(in); err != nil || got != want {
			t.Errorf("ExpandCache(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"cache", "$CRA_TEST_UNSET/x"} {
		if _, err := ExpandCache(in); err == nil {
			t.Errorf("ExpandCache(%q): no error, want one", in)
		}
	}
}

func TestSecretEnv(t *testing.T) {
	c := &Config{Models: &Models{APIKeyEnv: "OPENROUTER_API_KEY", Summarizer: &Endpoint{APIKeyEnv: "SUM_KEY"}, Supervisor: &Endpoint{APIKeyEnv: "OPENROUTER_API_KEY"}},
		Notify: &Notify{WebhookTokenEnv: "HOOK_TOKEN"}}
	if diff := cmp.Diff([]string{"CRA_SERVE_TOKEN", "OPENROUTER_API_KEY", "SUM_KEY", "HOOK_TOKEN"}, c.SecretEnv()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	var none *Config
	if diff := cmp.Diff([]string{"CRA_SERVE_TOKEN"}, none.SecretEnv()); diff != "" {
		t.Errorf("nil config (-want +got):\n%s", diff)
	}
	// With the fleet's state in PostgreSQL, its URL and libpq's
	// variables reach it: validation (the agent's code) gets neither.
	t.Setenv("PGPASSWORD", "secret")
	t.Setenv("PGHOST", "db.internal")
	c.Fleet = &Fleet{DatabaseURLEnv: "CRA_DATABASE_URL"}
	got := c.SecretEnv()
	for _, name := range []string{"CRA_SERVE_TOKEN", "CRA_DATABASE_URL", "PGPASSWORD", "PGHOST", "OPENROUTER_API_KEY"} {
		if !slices.Contains(got, name) {
			t.Errorf("with a fleet database, SecretEnv() = %q: no %s", got, name)
		}
	}
}
