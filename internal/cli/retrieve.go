package cli

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/preflight"
	"github.com/cra-dev/cra/internal/retrieve"
	"github.com/cra-dev/cra/internal/store"
	"github.com/cra-dev/cra/internal/world"
)

// budgetFlags are the budget inputs shared by retrieve, plan and solve
// (seed 001 §9.3): the pair of numbers or a file, mutually exclusive.
type budgetFlags struct {
	contextWindow  *int
	reservedTokens *int
	budgetConfig   string
	safetyMargin   float64
}

func addBudgetFlags(cmd *cobra.Command, b *budgetFlags) func() {
	var cw, rt int
	f := cmd.Flags()
	f.IntVar(&cw, "context-window", 0, "execute model's context window in tokens (with --reserved-tokens)")
	f.IntVar(&rt, "reserved-tokens", 0, "tokens kept for system prompt, task, retries and the reply")
	f.StringVar(&b.budgetConfig, "budget-config", "", "TOML file with context_window and reserved_tokens (instead of the two flags)")
	f.Float64Var(&b.safetyMargin, "safety-margin", retrieve.DefaultSafetyMargin, "share of the budget left free for the chars/4 estimate's error")
	return func() {
		if f.Changed("context-window") {
			b.contextWindow = &cw
		}
		if f.Changed("reserved-tokens") {
			b.reservedTokens = &rt
		}
	}
}

// resolveBudget applies flag > file > config > hard error (seed 001 §9.3,
// §10.2) and validates the result (§7.5).
func resolveBudget(b budgetFlags, cfg *config.Config) (retrieve.Budget, error) {
	out := retrieve.Budget{SafetyMargin: b.safetyMargin}
	pair := b.contextWindow != nil || b.reservedTokens != nil
	switch {
	case b.budgetConfig != "" && pair:
		return out, usageError{errors.New("--budget-config and --context-window/--reserved-tokens are mutually exclusive: pass one or the other")}
	case b.budgetConfig != "":
		var file struct {
			ContextWindow  *int `toml:"context_window"`
			ReservedTokens *int `toml:"reserved_tokens"`
		}
		md, err := toml.DecodeFile(b.budgetConfig, &file)
		if err != nil {
			return out, usageError{fmt.Errorf("--budget-config %s: %w", b.budgetConfig, err)}
		}
		if u := md.Undecoded(); len(u) > 0 {
			return out, usageError{fmt.Errorf("--budget-config %s: unknown key %s (only context_window and reserved_tokens)", b.budgetConfig, u[0])}
		}
		if file.ContextWindow == nil || file.ReservedTokens == nil {
			return out, usageError{fmt.Errorf("--budget-config %s: needs both context_window and reserved_tokens", b.budgetConfig)}
		}
		out.ContextWindow, out.ReservedTokens = *file.ContextWindow, *file.ReservedTokens
	case pair:
		if b.contextWindow == nil || b.reservedTokens == nil {
			return out, usageError{errors.New("--context-window and --reserved-tokens go together: pass both")}
		}
		out.ContextWindow, out.ReservedTokens = *b.contextWindow, *b.reservedTokens
	default:
		if cfg == nil || cfg.Budget == nil || cfg.Budget.ContextWindow == nil || cfg.Budget.ReservedTokens == nil {
			return out, usageError{errors.New("missing budget: pass --context-window N --reserved-tokens N or --budget-config FILE, " +
				"or store them with 'cra init --context-window N --reserved-tokens N'")}
		}
		out.ContextWindow, out.ReservedTokens = *cfg.Budget.ContextWindow, *cfg.Budget.ReservedTokens
	}
	if err := out.Validate(); err != nil {
		return out, usageError{fmt.Errorf("invalid budget: %w", err)}
	}
	return out, nil
}

// resolveStages applies flag > config > hard error and checks every name.
func resolveStages(flag string, cfg *config.Config) ([]retrieve.Stage, string, error) {
	list := flag
	if list == "" && cfg != nil && cfg.Stages != nil {
		list = cfg.Stages.Default
	}
	if list == "" {
		return nil, "", usageError{errors.New("missing --stages: pass --stages scope,precision, or store a default with 'cra init --stages scope,precision'")}
	}
	stages, err := retrieve.ParseStages(list)
	if err != nil {
		return nil, "", usageError{err}
	}
	return stages, list, nil
}

// newTaskID returns a random UUID (version 4), the task id of seed 001 §4.4.
func newTaskID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

type retrieveOptions struct {
	task          string
	repo          string
	stages        string
	budget        budgetFlags
	deterministic bool
	json          bool
	taskID        string
}

func newRetrieveCmd(d *deps, runF func(context.Context, *deps, *retrieveOptions) error) *cobra.Command {
	opts := &retrieveOptions{}
	var finishBudget func()
	cmd := &cobra.Command{
		Use:   "retrieve <task>",
		Short: "Print the context a model needs for a task, within a token budget",
		Long: `Analyse the task, rank the repository's files, select the symbols that
matter and assemble a context package that fits the budget: Markdown ready
to paste into any agent, or --json.

The stages (seed 001 §5) run in the order given: scope ranks and selects
files, precision decides how much of each symbol to show. With
--deterministic no model is called and no [models] config is needed;
otherwise the reasoning model judges the candidates and every call is
recorded in .clean_room/raw.sqlite.

Budget: --context-window and --reserved-tokens, or --budget-config FILE, or
[budget] in .clean_room/config.toml. Stages: --stages or [stages] default.`,
		Example: `  cra retrieve "pager command is resolved twice" --stages scope,precision \
      --context-window 8192 --reserved-tokens 2048 --deterministic
  cra retrieve "$(cat issue.md)" --budget-config budget.toml --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.task = args[0]
			finishBudget()
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return retrieveRun(cmd.Context(), d, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.repo, "repo", ".", "repository root")
	f.StringVar(&opts.stages, "stages", "", "retrieval stages in order, comma-separated: "+strings.Join(retrieve.StageNames(), ", "))
	f.BoolVar(&opts.deterministic, "deterministic", false, "call no model: the deterministic ranking and selection only")
	f.BoolVar(&opts.json, "json", false, "print the package as JSON")
	finishBudget = addBudgetFlags(cmd, &opts.budget)
	return cmd
}

func retrieveRun(ctx context.Context, d *deps, opts *retrieveOptions) error {
	repo, err := findRepo(opts.repo)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(d, repo)
	if err != nil {
		return err
	}
	stages, stageList, err := resolveStages(opts.stages, cfg)
	if err != nil {
		return err
	}
	budget, err := resolveBudget(opts.budget, cfg)
	if err != nil {
		return err
	}
	if strings.TrimSpace(opts.task) == "" {
		return usageError{retrieve.ErrEmptyTask}
	}
	// Preflight, in seed 001 §14's order.
	if !opts.deterministic {
		if err := preflight.CheckModels(cfg); err != nil {
			return fmt.Errorf("%w (or pass --deterministic to retrieve without a model)", err)
		}
	}
	stateDir := config.StateDir(repo)
	factory := store.NewFactory(stateDir)
	if err := preflight.CheckCurated(ctx, factory, repo); err != nil {
		return err
	}
	curated, err := factory.Open(ctx, store.Curated, "", true)
	if err != nil {
		return err
	}
	defer curated.Close()
	r, err := kb.New(curated).Repo(ctx, repo)
	if err != nil {
		return err
	}
	raw, err := factory.Open(ctx, store.Raw, "", false)
	if err != nil {
		return err
	}
	defer raw.Close()

	taskID := opts.taskID
	if taskID == "" {
		taskID = newTaskID()
	}
	session, err := factory.OpenSession(ctx, taskID)
	if err != nil {
		return err
	}
	p := &retrieve.Pipeline{Curated: curated, Raw: raw, RepoID: r.ID, Root: repo, Session: session}
	executeModel := "none"
	if cfg != nil && cfg.Models != nil && cfg.Models.Coding != "" {
		executeModel = cfg.Models.Coding
	}
	var usage *llmUsage
	if opts.deterministic {
		fmt.Fprintln(d.errOut, "deterministic: no model is called")
	} else {
		j, u, err := newJudge(ctx, d, cfg, factory, raw, taskID, budget)
		if err != nil {
			session.Close()
			return err
		}
		p.Judge, usage = j, u
		p.PromptTokens = u.promptTokens
	}
	start := time.Now()
	res, runErr := p.Run(ctx, taskID, opts.task, stages, budget)
	elapsed := time.Since(start)
	// The session is archived and removed whatever happened (seed 001 §11.1).
	if err := session.Archive(ctx, factory, raw, taskID); err != nil && runErr == nil {
		runErr = err
	}
	if err := recordTaskRun(ctx, raw, taskID, repo, "retrieve", executeModel, budget, stageList, runErr == nil, usage, elapsed); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		world.NoteEvent(ctx, d.errOut, stateDir, world.SourceRetrieve, taskID, "retrieve failed: "+runErr.Error())
		return runErr
	}
	for _, info := range res.Info {
		fmt.Fprintf(d.errOut, "info: %s\n", info)
	}
	summary := fmt.Sprintf("%d files, %d of %d tokens, stages %s", len(res.Package.Files), res.Package.Tokens, res.Package.Budget, stageList)
	world.NoteEvent(ctx, d.errOut, stateDir, world.SourceRetrieve, taskID, summary)
	if opts.json {
		enc := json.NewEncoder(d.out)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			TaskID string `json:"task_id"`
			*retrieve.Result
		}{taskID, res})
	}
	mode := "deterministic"
	if !opts.deterministic {
		mode = "with the reasoning model"
	}
	fmt.Fprintf(d.out, "# Context for: %s\n\n", firstLine(opts.task, 100))
	fmt.Fprintf(d.out, "task %s · stages %s (%s) · %d files · %d of %d tokens\n", taskID, stageList, mode, len(res.Package.Files), res.Package.Tokens, res.Package.Budget)
	fmt.Fprint(d.out, res.Package.Render())
	return nil
}

func firstLine(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
