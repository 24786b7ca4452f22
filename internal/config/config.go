// Package config loads and writes .clean_room/config.toml (seed 001 §10).
//
// The file is a convenience for not retyping flags, never a silent fallback:
// every value is optional in the file, and the command that needs a value
// resolves it as flag > config > hard error naming the flag (§10.2). Code
// holds no defaults for required values; the only defaults here are tuning
// knobs the seed allows (temperatures) and indexer bounds that are not
// user-facing requirements.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/BurntSushi/toml"
)

// ErrNoModels is returned when an LLM-using command finds no [models] section.
var ErrNoModels = errors.New("no [models] section in config: run 'cra init --coding MODEL --reasoning MODEL --base-url URL' first")

// Config mirrors config.toml. Pointer and zero values mean "not set": the
// file records only what the user gave (§10.1).
type Config struct {
	Models *Models `toml:"models,omitempty"`
	Budget *Budget `toml:"budget,omitempty"`
	Solve  *Solve  `toml:"solve,omitempty"`
	// Validation is the [validation] section: how cra solve checks edits.
	Validation *Validation `toml:"validation,omitempty"`
	Stages     *Stages     `toml:"stages,omitempty"`
	Index      *Index      `toml:"index,omitempty"`
	World      *World      `toml:"world,omitempty"`
	// Recycler and Notify are [recycler], how finished tasks re-enter the
	// queue (seed 004), and [notify], how a person hears that a task ended
	// or needs them.
	Recycler *Recycler `toml:"recycler,omitempty"`
	Notify   *Notify   `toml:"notify,omitempty"`
	// Board and Agents are [board] and the [agents.NAME] profiles the
	// task board's processor runs (seed 004).
	Board  *Board           `toml:"board,omitempty"`
	Agents map[string]Agent `toml:"agents,omitempty"`
	// Supervisors is [supervisors]: seed 003's supervisor agents.
	Supervisors *Supervisors `toml:"supervisors,omitempty"`
	// Train is [train]: the trainer hand-off and train-plan's defaults.
	Train *Train `toml:"train,omitempty"`
	// Fleet is [fleet]: hosts sharing one PostgreSQL (issue 34).
	Fleet   *Fleet   `toml:"fleet,omitempty"`
	Unknown []string `toml:"-"` // keys present in the file that cra does not know
}

// Models is the [models] section (§3.2, §10.1): the coding and reasoning
// models on one server, tuning knobs, per-stage overrides, and the
// supervisor and summarizer roles of seed 003, which may live elsewhere.
type Models struct {
	Coding    string `toml:"coding,omitempty"`
	Reasoning string `toml:"reasoning,omitempty"`
	BaseURL   string `toml:"base_url,omitempty"`
	// Provider is the protocol base_url speaks: "ollama" (Ollama's native
	// /api/chat) or "openai" (an OpenAI-compatible /v1: OpenRouter, vLLM,
	// llama.cpp server, LM Studio; base_url then ends in /v1). Unset means
	// ollama, because seed 001 §6.3 defines base_url as the Ollama URL.
	Provider string `toml:"provider,omitempty"`
	// APIKeyEnv names the environment variable holding the API key sent to
	// base_url. The key itself is never written to config or logs.
	APIKeyEnv string `toml:"api_key_env,omitempty"`
	// CodingContextWindow and ReasoningContextWindow are the models'
	// context windows in tokens: Ollama's num_ctx (without it Ollama
	// silently truncates prompts to its small default) and the bound of
	// prompts built for the model. Unset, [budget] context_window is used.
	CodingContextWindow    *int `toml:"coding_context_window,omitempty"`
	ReasoningContextWindow *int `toml:"reasoning_context_window,omitempty"`
	// CodingTemperature and ReasoningTemperature default to 0.0 (§6.4).
	CodingTemperature    *float64 `toml:"coding_temperature,omitempty"`
	ReasoningTemperature *float64 `toml:"reasoning_temperature,omitempty"`
	// MaxTokens caps a reply's length when the caller sets no cap.
	MaxTokens *int `toml:"max_tokens,omitempty"`
	// MaxReplyBytes bounds the bytes of one reply read from the server,
	// whatever the provider: past it the reply is cut, recorded once and
	// counted as a malformed attempt. Unset means 1 MiB.
	MaxReplyBytes *int `toml:"max_reply_bytes,omitempty"`
	// Timeout bounds each attempt of a call, as a Go duration ("5m").
	Timeout string `toml:"timeout,omitempty"`
	// MaxRetries is how often a call is retried after a transport failure
	// (connection error, timeout, 429, 5xx; seed 001 §15).
	MaxRetries *int              `toml:"max_retries,omitempty"`
	Overrides  map[string]string `toml:"overrides,omitempty"`
	// Supervisor and Summarizer configure the roles of seed 003; each falls
	// back to the reasoning model when its table is absent.
	Supervisor *Endpoint `toml:"supervisor,omitempty"`
	Summarizer *Endpoint `toml:"summarizer,omitempty"`
	// Agent is the endpoint the board's preset agents use when their
	// profile names none (Config.AgentEndpoint); absent, they use the
	// coding model on the main server.
	Agent *Endpoint `toml:"agent,omitempty"`
}

// Endpoint is a [models.supervisor] or [models.summarizer] table. Model is
// required. Without base_url the role runs on the main server (provider,
// base_url and api_key_env of [models]); with one, provider is required
// too, since a URL does not say which protocol it speaks.
type Endpoint struct {
	Provider      string   `toml:"provider,omitempty"`
	Model         string   `toml:"model,omitempty"`
	BaseURL       string   `toml:"base_url,omitempty"`
	APIKeyEnv     string   `toml:"api_key_env,omitempty"`
	ContextWindow *int     `toml:"context_window,omitempty"`
	Temperature   *float64 `toml:"temperature,omitempty"`
	MaxTokens     *int     `toml:"max_tokens,omitempty"`
}

// The providers a [models] section can name.
const (
	ProviderOllama = "ollama"
	ProviderOpenAI = "openai"
)

// Budget is the [budget] section (§7.1).
type Budget struct {
	ContextWindow  *int `toml:"context_window,omitempty"`
	ReservedTokens *int `toml:"reserved_tokens,omitempty"`
}

// Solve is the [solve] section.
type Solve struct {
	MaxAttempts        *int `toml:"max_attempts,omitempty"`
	MaxRefinementLoops *int `toml:"max_refinement_loops,omitempty"`
	// KeepWorktree says when cra solve leaves its worktree
	// (.clean_room/worktrees/<task_id>) on disk after a run: "always",
	// "on_failure" (for inspection; unset means this) or "never". The
	// branch cra/<task_id> keeps the edits, committed, in every case.
	KeepWorktree string `toml:"keep_worktree,omitempty"`
}

// The values of solve.keep_worktree.
const (
	KeepAlways    = "always"
	KeepOnFailure = "on_failure"
	KeepNever     = "never"
)

// Validation is the [validation] section: shell commands cra solve runs
// in its worktree after applying edits. Any may be absent; a run with
// none validates nothing and says so.
type Validation struct {
	// Test runs the tests ("go test ./...", "pytest -q", "npm test").
	// Failing test names are read from go test, pytest, jest, vitest
	// and node:test output.
	Test string `toml:"test,omitempty"`
	// Lint and Typecheck run a linter and a type checker.
	Lint      string `toml:"lint,omitempty"`
	Typecheck string `toml:"typecheck,omitempty"`
	// Timeout bounds each command, as a Go duration ("2m"); unset means
	// 10 minutes.
	Timeout string `toml:"timeout,omitempty"`
	// Protected are globs of files a branch may not change, beyond the
	// ones cra protects itself (the files the commands name, the tests
	// that exist at a branch's base): the recycler validates a branch
	// with them at their base version, and a branch that changes one is
	// not verified unless its task allows test changes. Relative to the
	// repository's directory, path.Match syntax per segment, "**" for
	// any number of directories ("ci/**", "**/*.golden").
	Protected []string `toml:"protected,omitempty"`
	// Caches are the directories outside the checkout the commands may
	// write in their sandbox (a build cache, a package cache): absolute,
	// under ~/, or starting with an environment variable ($GOCACHE),
	// expanded when validation runs. Go's build cache is one: `go env
	// GOCACHE`.
	Caches []string `toml:"caches,omitempty"`
}

// Stages is the [stages] section.
type Stages struct {
	Default string `toml:"default,omitempty"`
}

// Index is the [index] section: bounds for the git history miner. Both are
// optional; the indexer documents its own defaults because they are
// resource bounds, not required inputs.
type Index struct {
	// HistoryDepth caps how many commits are mined (newest first).
	HistoryDepth *int `toml:"history_depth,omitempty"`
	// MaxCommitFiles leaves commits touching more files than this out of
	// co-change counting as noise (mass renames, formatting sweeps).
	MaxCommitFiles *int `toml:"max_commit_files,omitempty"`
}

// World is the [world] section: the world log's durability.
type World struct {
	// Fsync says which appends are fsynced before they return: "agent"
	// (lifecycle entries only), "always" or "never". The --fsync flag
	// overrides it; unset means "agent".
	Fsync string `toml:"fsync,omitempty"`
}

// Load reads the config file at path (statedir.Dir.Config). A missing
// file returns (nil, nil): config is optional for commands that need no
// model (§10.3).
func Load(path string) (*Config, error) {
	c, _, err := LoadUnchecked(path)
	if err != nil || c == nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// Parse decodes config.toml text and validates it. Unknown keys are
// collected in Config.Unknown so the caller can warn about them instead of
// ignoring them.
func Parse(data []byte) (*Config, error) {
	c, err := Decode(data)
	if err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// Decode reads config.toml text without validating the values: 'cra init'
// loads a config this way so that its flags can replace a bad value.
func Decode(data []byte) (*Config, error) {
	var c Config
	md, err := toml.Decode(string(data), &c)
	if err != nil {
		return nil, &SyntaxError{err}
	}
	for _, k := range md.Undecoded() {
		c.Unknown = append(c.Unknown, k.String())
	}
	sort.Strings(c.Unknown)
	return &c, nil
}

// SyntaxError is a config file that is not TOML.
type SyntaxError struct{ Err error }

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("parse config.toml: %v (fix that line of the file: 'cra init' rewrites only a file it can read)", e.Err)
}

func (e *SyntaxError) Unwrap() error { return e.Err }

// LoadUnchecked is Load without validating the values (see Decode), and
// returns the file's bytes too.
func LoadUnchecked(path string) (*Config, []byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read config: %w", err)
	}
	c, err := Decode(data)
	return c, data, err
}

// Lossy reports whether writing c over the file data came from would drop
// something a person wrote: a comment other than the header Encode writes,
// or a key cra does not know.
func (c *Config) Lossy(data []byte) bool {
	if len(c.Unknown) > 0 {
		return true
	}
	own := strings.Split(fileHeader, "\n")
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if i := commentAt(l); i >= 0 && !(i == 0 && slices.Contains(own, l)) {
			return true
		}
	}
	return false
}

// commentAt returns where a TOML comment starts in line, -1 for none: the
// first '#' outside a basic ("...", with \ escapes) or literal ('...')
// string. A line inside a multi-line string is read as a line of its own;
// the config has none.
func commentAt(line string) int {
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote == '"' && c == '\\':
			i++ // the escaped character
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#':
			return i
		}
	}
	return -1
}

// Validate checks the values that are present. It never complains about a
// missing value: that is the job of the command that needs it.
func (c *Config) Validate() error {
	var problems []string
	if b := c.Budget; b != nil {
		if b.ContextWindow != nil && *b.ContextWindow <= 0 {
			problems = append(problems, "budget.context_window must be > 0")
		}
		if b.ReservedTokens != nil && *b.ReservedTokens < 0 {
			problems = append(problems, "budget.reserved_tokens must be >= 0")
		}
		if b.ContextWindow != nil && b.ReservedTokens != nil && *b.ReservedTokens >= *b.ContextWindow {
			problems = append(problems, "budget.reserved_tokens must be < budget.context_window")
		}
	}
	if s := c.Solve; s != nil {
		if s.MaxAttempts != nil && *s.MaxAttempts < 1 {
			problems = append(problems, "solve.max_attempts must be >= 1")
		}
		if s.MaxRefinementLoops != nil && *s.MaxRefinementLoops < 0 {
			problems = append(problems, "solve.max_refinement_loops must be >= 0")
		}
		switch s.KeepWorktree {
		case "", KeepAlways, KeepOnFailure, KeepNever:
		default:
			problems = append(problems, fmt.Sprintf("solve.keep_worktree is %q: use always, on_failure or never", s.KeepWorktree))
		}
	}
	if v := c.Validation; v != nil {
		problems = append(problems, v.validate()...)
	}
	if ix := c.Index; ix != nil {
		if ix.HistoryDepth != nil && *ix.HistoryDepth < 0 {
			problems = append(problems, "index.history_depth must be >= 0")
		}
		if ix.MaxCommitFiles != nil && *ix.MaxCommitFiles < 2 {
			problems = append(problems, "index.max_commit_files must be >= 2")
		}
	}
	if m := c.Models; m != nil {
		problems = append(problems, m.validate()...)
	}
	if w := c.World; w != nil {
		switch w.Fsync {
		case "", "agent", "always", "never":
		default:
			problems = append(problems, fmt.Sprintf("world.fsync is %q: use agent, always or never", w.Fsync))
		}
	}
	problems = append(problems, c.validateBoard()...)
	problems = append(problems, c.validateRecycler()...)
	problems = append(problems, c.Supervisors.Validate()...)
	problems = append(problems, c.Fleet.Validate()...)
	problems = append(problems, c.Train.validate()...)
	if len(problems) > 0 {
		return fmt.Errorf("invalid config.toml: %s", strings.Join(problems, "; "))
	}
	return nil
}

// MaxRetriesLimit bounds models.max_retries: more retries only hide a
// server that is down.
const MaxRetriesLimit = 20

var envNamePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// OverrideStages are the stages [models.overrides] may name: the
// pipeline's (seed 001 §16), enrichment's and the supervisors'.
var OverrideStages = []string{"task_analysis", "scope", "precision", "execute_plan", "execute_code", "enrichment", "code_style", "design", "internaliser"}

// hasUserInfo reports whether an http(s) URL carries a user or password.
func hasUserInfo(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.User != nil
}

// redactURL is raw without its password, for messages.
func redactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		return u.Redacted()
	}
	return raw
}

func (m *Models) validate() []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if !validProvider(m.Provider) {
		add("models.provider is %q: use ollama or openai", m.Provider)
	}
	if m.BaseURL != "" && !httpURL(m.BaseURL) {
		add("models.base_url %q is not an http(s) URL", redactURL(m.BaseURL))
	} else if hasUserInfo(m.BaseURL) {
		add("models.base_url carries a user or password, which would reach the world log and raw.sqlite: keep secrets out of the file, put a token in an environment variable and name it in models.api_key_env")
	}
	if m.APIKeyEnv != "" && !envNamePattern().MatchString(m.APIKeyEnv) {
		add("models.api_key_env is not an environment variable name (name the variable, e.g. OPENROUTER_API_KEY, not the key, which this message leaves out)")
	}
	positive := func(key string, v *int) {
		if v != nil && *v <= 0 {
			add("%s must be > 0", key)
		}
	}
	temperature := func(key string, v *float64) {
		if v != nil && !(*v >= 0 && *v <= 2) {
			add("%s must be between 0 and 2", key)
		}
	}
	positive("models.coding_context_window", m.CodingContextWindow)
	positive("models.reasoning_context_window", m.ReasoningContextWindow)
	positive("models.max_tokens", m.MaxTokens)
	if m.MaxReplyBytes != nil && (*m.MaxReplyBytes < 1024 || *m.MaxReplyBytes > 8_000_000) {
		add("models.max_reply_bytes is %d: use 1024 to 8000000 (8 MB, the longest line Ollama's client reads)", *m.MaxReplyBytes)
	}
	temperature("models.coding_temperature", m.CodingTemperature)
	temperature("models.reasoning_temperature", m.ReasoningTemperature)
	if m.Timeout != "" {
		if d, err := time.ParseDuration(m.Timeout); err != nil || d <= 0 {
			add("models.timeout is %q: use a duration like \"90s\" or \"5m\"", m.Timeout)
		}
	}
	if m.MaxRetries != nil && (*m.MaxRetries < 0 || *m.MaxRetries > MaxRetriesLimit) {
		add("models.max_retries must be between 0 and %d", MaxRetriesLimit)
	}
	stages := make([]string, 0, len(m.Overrides))
	for stage := range m.Overrides {
		stages = append(stages, stage)
	}
	sort.Strings(stages)
	for _, stage := range stages {
		if !slices.Contains(OverrideStages, stage) {
			add("models.overrides.%s names no stage: use one of %s", stage, strings.Join(OverrideStages, ", "))
		}
		if strings.TrimSpace(m.Overrides[stage]) == "" {
			add("models.overrides.%s is empty: name a model tag or remove the key", stage)
		}
	}
	for _, e := range []struct {
		role string
		ep   *Endpoint
	}{{"supervisor", m.Supervisor}, {"summarizer", m.Summarizer}, {"agent", m.Agent}} {
		if e.ep == nil {
			continue
		}
		key := "models." + e.role
		ep := e.ep
		switch {
		case ep.Model == "" && e.role == "agent":
			add("[%s] has no model: set %s.model or remove the table (preset agents then use the coding model)", key, key)
		case ep.Model == "":
			add("[%s] has no model: set %s.model or remove the table (the role then uses the reasoning model)", key, key)
		}
		if !validProvider(ep.Provider) {
			add("%s.provider is %q: use ollama or openai", key, ep.Provider)
		}
		switch {
		case ep.BaseURL == "" && (ep.Provider != "" || ep.APIKeyEnv != ""):
			add("%s sets provider or api_key_env without base_url: set %s.base_url too, or remove them to use the main server", key, key)
		case ep.BaseURL != "" && ep.Provider == "":
			add("%s.base_url is set: also set %s.provider (ollama or openai)", key, key)
		case ep.BaseURL != "" && !httpURL(ep.BaseURL):
			add("%s.base_url %q is not an http(s) URL", key, redactURL(ep.BaseURL))
		case hasUserInfo(ep.BaseURL):
			add("%s.base_url carries a user or password: keep secrets out of the file, put a token in an environment variable and name it in %s.api_key_env", key, key)
		}
		if ep.APIKeyEnv != "" && !envNamePattern().MatchString(ep.APIKeyEnv) {
			add("%s.api_key_env is not an environment variable name (name the variable, not the key, which this message leaves out)", key)
		}
		positive(key+".context_window", ep.ContextWindow)
		positive(key+".max_tokens", ep.MaxTokens)
		temperature(key+".temperature", ep.Temperature)
	}
	return problems
}

func validProvider(p string) bool { return p == "" || p == ProviderOllama || p == ProviderOpenAI }

func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// RequireModels returns the [models] section or ErrNoModels (§3.2, §14.1).
func (c *Config) RequireModels() (*Models, error) {
	if c == nil || c.Models == nil || (c.Models.Coding == "" && c.Models.Reasoning == "") {
		return nil, ErrNoModels
	}
	return c.Models, nil
}

// fileHeader opens every config file Encode writes.
const fileHeader = "# cra configuration. Written by 'cra init'; edit freely.\n" +
	"# Only values you gave are here: a command that needs a missing value says which flag to pass."

// Encode renders the config as TOML. Only set values appear.
func (c *Config) Encode() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(fileHeader + "\n\n")
	enc := toml.NewEncoder(&buf)
	enc.Indent = ""
	if err := enc.Encode(c); err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	return buf.Bytes(), nil
}
