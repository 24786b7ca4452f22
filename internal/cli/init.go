package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/run"
	"github.com/cra-dev/cra/internal/workspace"
)

// initOptions are the inputs of 'cra init'. A nil pointer or empty string is
// a value the user did not give: it is never written (seed 001 §10.1).
type initOptions struct {
	repo               string
	coding             string
	reasoning          string
	baseURL            string
	provider           string
	apiKeyEnv          string
	codingWindow       *int
	reasoningWindow    *int
	contextWindow      *int
	reservedTokens     *int
	stages             string
	maxAttempts        *int
	maxRefinementLoops *int
	validationTest     string
	validationLint     string
	validationTypes    string
	validationTimeout  string
}

func newInitCmd(d *deps, runF func(context.Context, *deps, *initOptions) error) *cobra.Command {
	opts := &initOptions{}
	var cw, rt, ma, mrl, ccw, rcw int
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write .clean_room/config.toml: models, budget, solve limits, stages, validation",
		Long: `Write the repository's .clean_room/config.toml.

Values come from flags or, on a terminal, from answers to prompts. Only
values you give are written, any subset of them: cra has no hidden
defaults for required inputs, and a command that needs a missing one names
the flags to pass. Re-running on an existing config changes only the values
given. The commands that call a model need --coding, --reasoning and
--base-url; 'cra retrieve --deterministic' needs none of them.

.clean_room/ ignores itself (its own .gitignore holds "*"): your tracked
.gitignore is left alone.`,
		Example: `  cra init --coding qwen2.5-coder:3b-instruct --reasoning qwen3:4b-instruct-2507 \
           --base-url http://localhost:11434
  cra init --context-window 32768 --reserved-tokens 4096 --stages scope,precision
  cra init --max-attempts 3 --max-refinement-loops 2
  cra init --validation-test "go test ./..." --validation-lint "go vet ./..."
  cra init --coding-context-window 32768 --reasoning-context-window 32768
  cra init --provider openai --base-url http://localhost:8000/v1 --api-key-env VLLM_API_KEY`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			setInt := func(name string, v int) *int {
				if f.Changed(name) {
					return &v
				}
				return nil
			}
			opts.contextWindow = setInt("context-window", cw)
			opts.reservedTokens = setInt("reserved-tokens", rt)
			opts.maxAttempts = setInt("max-attempts", ma)
			opts.maxRefinementLoops = setInt("max-refinement-loops", mrl)
			opts.codingWindow = setInt("coding-context-window", ccw)
			opts.reasoningWindow = setInt("reasoning-context-window", rcw)
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return initRun(cmd.Context(), d, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.repo, "repo", ".", "repository root")
	f.StringVar(&opts.coding, "coding", "", "coding model tag (code edits), e.g. qwen2.5-coder:3b-instruct")
	f.StringVar(&opts.reasoning, "reasoning", "", "reasoning model tag (analysis, retrieval, plans), e.g. qwen3:4b-instruct-2507")
	f.StringVar(&opts.baseURL, "base-url", "", "model server URL, e.g. http://localhost:11434")
	f.StringVar(&opts.provider, "provider", "", `protocol of --base-url: "ollama" (the default when unset) or "openai" (an OpenAI-compatible /v1 URL)`)
	f.StringVar(&opts.apiKeyEnv, "api-key-env", "", "name of the environment variable holding the server's API key (the key is never written)")
	f.IntVar(&ccw, "coding-context-window", 0, "coding model's context window in tokens (Ollama num_ctx)")
	f.IntVar(&rcw, "reasoning-context-window", 0, "reasoning model's context window in tokens (Ollama num_ctx; bounds enrichment prompts)")
	f.IntVar(&cw, "context-window", 0, "execute model's context window in tokens")
	f.IntVar(&rt, "reserved-tokens", 0, "tokens reserved for system prompt, task, retries and the reply")
	f.StringVar(&opts.stages, "stages", "", "default retrieval stages, comma-separated (e.g. scope,precision)")
	f.IntVar(&ma, "max-attempts", 0, "cra solve: attempts before giving up")
	f.IntVar(&mrl, "max-refinement-loops", 0, "cra solve: context refinements allowed")
	f.StringVar(&opts.validationTest, "validation-test", "", `cra solve: the test command run in the worktree after each edit, e.g. "go test ./..."`)
	f.StringVar(&opts.validationLint, "validation-lint", "", "cra solve: the lint command, e.g. \"ruff check .\"")
	f.StringVar(&opts.validationTypes, "validation-typecheck", "", `cra solve: the type-check command, e.g. "mypy ."`)
	f.StringVar(&opts.validationTimeout, "validation-timeout", "", `cra solve: bound of each validation command, e.g. "5m" (default 10m)`)
	return cmd
}

// checkInitFlags refuses a bad flag value by the flag's name, before the
// config file is judged.
func checkInitFlags(o *initOptions) error {
	ints := []struct {
		flag string
		v    *int
		min  int
	}{
		{"--context-window", o.contextWindow, 1},
		{"--reserved-tokens", o.reservedTokens, 0},
		{"--coding-context-window", o.codingWindow, 1},
		{"--reasoning-context-window", o.reasoningWindow, 1},
		{"--max-attempts", o.maxAttempts, 1},
		{"--max-refinement-loops", o.maxRefinementLoops, 0},
	}
	for _, f := range ints {
		if f.v != nil && *f.v < f.min {
			return usageError{err: fmt.Errorf("%s %d: must be at least %d", f.flag, *f.v, f.min)}
		}
	}
	if o.contextWindow != nil && o.reservedTokens != nil && *o.reservedTokens >= *o.contextWindow {
		return usageError{err: fmt.Errorf("--reserved-tokens %d leaves nothing of --context-window %d: reserve less", *o.reservedTokens, *o.contextWindow)}
	}
	if o.validationTimeout != "" {
		if d, err := time.ParseDuration(o.validationTimeout); err != nil || d <= 0 {
			return usageError{err: fmt.Errorf("--validation-timeout %q: use a duration like \"90s\" or \"10m\"", o.validationTimeout)}
		}
	}
	if o.stages != "" {
		if _, err := run.ParseStages(o.stages); err != nil {
			return usageError{err: fmt.Errorf("--stages %q: %w", o.stages, err)}
		}
	}
	return nil
}

func initRun(ctx context.Context, d *deps, opts *initOptions) error {
	// The .clean_room/ every other command would use: a second one in a
	// subdirectory would shadow the repository's there.
	repo, err := workspace.Find(opts.repo)
	if err != nil {
		return err
	}
	if dir, _ := workspace.Dir(opts.repo); dir != repo {
		// Not past the git repository opts.repo is in: the .clean_room/
		// of a directory around it is another repository's.
		if top, _, err := workspace.TopLevel(ctx, dir); err == nil && top != repo && strings.HasPrefix(top, repo+string(filepath.Separator)) {
			repo = top
		} else {
			fmt.Fprintf(d.errOut, "using %s of %s, which commands run in %s read\n", filepath.Base(workspace.StateDir(repo)), repo, opts.repo)
		}
	}
	// Unchecked: a bad value in the file is what these flags may be here
	// to replace. The result is validated before it is written.
	cfg, old, err := config.LoadUnchecked(workspace.ConfigPath(repo))
	if err != nil {
		return err
	}
	warnUnknownKeys(d, repo, cfg)
	if err := checkInitFlags(opts); err != nil {
		return err
	}
	existed := cfg != nil
	if cfg == nil {
		cfg = &config.Config{}
	}
	fileErr := cfg.Validate()
	if d.terminal {
		if err := askMissing(d, cfg, opts); err != nil {
			return err
		}
	}
	set, err := applyInit(cfg, opts)
	if err != nil {
		return err
	}
	if !existed && len(set) == 0 {
		return usageError{err: errors.New("no values given, nothing to write: pass the ones to store, e.g. 'cra init --coding MODEL --reasoning MODEL --base-url URL' or 'cra init --stages scope,precision'")}
	}
	if err := cfg.Validate(); err != nil {
		if fileErr == nil {
			// The file was fine: the values given clash with it.
			return usageError{err: fmt.Errorf("the values given clash with %s: %w", relPath(repo, workspace.ConfigPath(repo)), err)}
		}
		return fmt.Errorf("%w (edit %s, or pass the flag that sets the value, e.g. 'cra init --context-window 32768')", err, relPath(repo, workspace.ConfigPath(repo)))
	}
	if _, err := workspace.EnsureStateDir(repo); err != nil {
		return err
	}
	var backup []byte
	if existed && len(set) > 0 && cfg.Lossy(old) {
		// Encoding drops comments and unknown keys: keep what was written.
		backup = old
	}
	bak, err := workspace.SaveConfig(repo, cfg, backup)
	if bak != "" {
		fmt.Fprintf(d.errOut, "note: the rewritten config keeps no comments or unknown keys; the previous file is in %s\n", relPath(repo, bak))
	}
	if err != nil {
		return err
	}
	verb := "wrote"
	if existed {
		verb = "updated"
	}
	if len(set) == 0 {
		fmt.Fprintf(d.out, "%s unchanged\n", relPath(repo, workspace.ConfigPath(repo)))
	} else {
		fmt.Fprintf(d.out, "%s %s (set: %s)\n", verb, relPath(repo, workspace.ConfigPath(repo)), strings.Join(set, ", "))
	}
	if missing := missingModelFlags(cfg); len(missing) > 0 {
		fmt.Fprintf(d.out, "note: commands that call a model also need %s\n", strings.Join(missing, ", "))
	}
	return nil
}

// section returns the config section *p, made when absent.
func section[T any](p **T) *T {
	if *p == nil {
		*p = new(T)
	}
	return *p
}

// applyInit copies the given options into cfg and returns the keys it set.
func applyInit(cfg *config.Config, o *initOptions) ([]string, error) {
	var set []string
	if o.coding != "" {
		section(&cfg.Models).Coding = o.coding
		set = append(set, "models.coding")
	}
	if o.reasoning != "" {
		section(&cfg.Models).Reasoning = o.reasoning
		set = append(set, "models.reasoning")
	}
	if o.baseURL != "" {
		u, err := url.Parse(o.baseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, usageError{err: fmt.Errorf("--base-url %q is not an http(s) URL: pass e.g. http://localhost:11434", o.baseURL)}
		}
		section(&cfg.Models).BaseURL = strings.TrimRight(o.baseURL, "/")
		set = append(set, "models.base_url")
	}
	if o.provider != "" {
		if o.provider != config.ProviderOllama && o.provider != config.ProviderOpenAI {
			return nil, usageError{err: fmt.Errorf("--provider %q: use ollama or openai", o.provider)}
		}
		section(&cfg.Models).Provider = o.provider
		set = append(set, "models.provider")
	}
	if o.apiKeyEnv != "" {
		section(&cfg.Models).APIKeyEnv = o.apiKeyEnv
		set = append(set, "models.api_key_env")
	}
	if o.codingWindow != nil {
		section(&cfg.Models).CodingContextWindow = o.codingWindow
		set = append(set, "models.coding_context_window")
	}
	if o.reasoningWindow != nil {
		section(&cfg.Models).ReasoningContextWindow = o.reasoningWindow
		set = append(set, "models.reasoning_context_window")
	}
	if o.contextWindow != nil {
		section(&cfg.Budget).ContextWindow = o.contextWindow
		set = append(set, "budget.context_window")
	}
	if o.reservedTokens != nil {
		section(&cfg.Budget).ReservedTokens = o.reservedTokens
		set = append(set, "budget.reserved_tokens")
	}
	if o.maxAttempts != nil {
		section(&cfg.Solve).MaxAttempts = o.maxAttempts
		set = append(set, "solve.max_attempts")
	}
	if o.maxRefinementLoops != nil {
		section(&cfg.Solve).MaxRefinementLoops = o.maxRefinementLoops
		set = append(set, "solve.max_refinement_loops")
	}
	for _, v := range []struct {
		value string
		dst   *string
		key   string
	}{
		{o.validationTest, &section(&cfg.Validation).Test, "validation.test"},
		{o.validationLint, &section(&cfg.Validation).Lint, "validation.lint"},
		{o.validationTypes, &section(&cfg.Validation).Typecheck, "validation.typecheck"},
		{o.validationTimeout, &section(&cfg.Validation).Timeout, "validation.timeout"},
	} {
		if v.value != "" {
			*v.dst = v.value
			set = append(set, v.key)
		}
	}
	if cfg.Validation != nil && cfg.Validation.Empty() {
		cfg.Validation = nil // made by section above, nothing in it
	}
	if o.stages != "" {
		names := strings.Split(o.stages, ",")
		for i, n := range names {
			names[i] = strings.TrimSpace(n)
		}
		cfg.Stages = &config.Stages{Default: strings.Join(names, ",")}
		set = append(set, "stages.default")
	}
	return set, nil
}

func missingModelFlags(cfg *config.Config) []string {
	var missing []string
	m := cfg.Models
	if m == nil {
		m = &config.Models{}
	}
	if m.Coding == "" {
		missing = append(missing, "--coding")
	}
	if m.Reasoning == "" {
		missing = append(missing, "--reasoning")
	}
	if m.BaseURL == "" {
		missing = append(missing, "--base-url")
	}
	return missing
}

// askMissing prompts on a terminal for each value that is neither given nor
// already in the config. An empty answer leaves the value unset.
func askMissing(d *deps, cfg *config.Config, o *initOptions) error {
	in := bufio.NewScanner(d.in)
	ask := func(prompt string) (string, error) {
		fmt.Fprintf(d.out, "%s: ", prompt)
		if !in.Scan() {
			if err := in.Err(); err != nil {
				return "", err
			}
			return "", nil
		}
		return strings.TrimSpace(in.Text()), nil
	}
	askInt := func(prompt string, dst **int) error {
		for {
			s, err := ask(prompt)
			if err != nil || s == "" {
				return err
			}
			v, err := strconv.Atoi(s)
			if err == nil {
				*dst = &v
				return nil
			}
			fmt.Fprintf(d.out, "%q is not a whole number\n", s)
		}
	}
	m := cfg.Models
	if m == nil {
		m = &config.Models{}
	}
	var err error
	if o.coding == "" && m.Coding == "" {
		if o.coding, err = ask("Coding model tag (e.g. qwen2.5-coder:3b-instruct)"); err != nil {
			return err
		}
	}
	if o.reasoning == "" && m.Reasoning == "" {
		if o.reasoning, err = ask("Reasoning model tag (e.g. qwen3:4b-instruct-2507)"); err != nil {
			return err
		}
	}
	if o.baseURL == "" && m.BaseURL == "" {
		if o.baseURL, err = ask("Model server URL (e.g. http://localhost:11434)"); err != nil {
			return err
		}
	}
	if cfg.Budget == nil && o.contextWindow == nil && o.reservedTokens == nil {
		if err := askInt("Context window in tokens (empty to skip)", &o.contextWindow); err != nil {
			return err
		}
		if err := askInt("Reserved tokens (empty to skip)", &o.reservedTokens); err != nil {
			return err
		}
	}
	return nil
}
