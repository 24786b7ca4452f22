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

	"github.com/cra-dev/cra/internal/agent"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/retrieve"
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
		return out, usageError{err: errors.New("--budget-config and --context-window/--reserved-tokens are mutually exclusive: pass one or the other")}
	case b.budgetConfig != "":
		type pairKeys struct {
			ContextWindow  *int `toml:"context_window"`
			ReservedTokens *int `toml:"reserved_tokens"`
		}
		var file struct {
			pairKeys
			// A [budget] table, as config.toml has it, reads the same.
			Budget *pairKeys `toml:"budget"`
		}
		md, err := toml.DecodeFile(b.budgetConfig, &file)
		if err != nil {
			return out, usageError{err: fmt.Errorf("--budget-config %s: %w", b.budgetConfig, err)}
		}
		if u := md.Undecoded(); len(u) > 0 {
			return out, usageError{err: fmt.Errorf("--budget-config %s: unknown key %s (only context_window and reserved_tokens)", b.budgetConfig, u[0])}
		}
		if file.Budget != nil {
			if file.ContextWindow != nil || file.ReservedTokens != nil {
				return out, usageError{err: fmt.Errorf("--budget-config %s: the keys are both at the top and under [budget]: keep one place", b.budgetConfig)}
			}
			file.pairKeys = *file.Budget
		}
		if file.ContextWindow == nil || file.ReservedTokens == nil {
			return out, usageError{err: fmt.Errorf("--budget-config %s: needs both context_window and reserved_tokens", b.budgetConfig)}
		}
		out.ContextWindow, out.ReservedTokens = *file.ContextWindow, *file.ReservedTokens
	case pair:
		if b.contextWindow == nil || b.reservedTokens == nil {
			return out, usageError{err: errors.New("--context-window and --reserved-tokens go together: pass both")}
		}
		out.ContextWindow, out.ReservedTokens = *b.contextWindow, *b.reservedTokens
	default:
		if cfg == nil || cfg.Budget == nil || cfg.Budget.ContextWindow == nil || cfg.Budget.ReservedTokens == nil {
			return out, usageError{err: errors.New("missing budget: pass --context-window N --reserved-tokens N or --budget-config FILE, " +
				"or store them with 'cra init --context-window N --reserved-tokens N'")}
		}
		out.ContextWindow, out.ReservedTokens = *cfg.Budget.ContextWindow, *cfg.Budget.ReservedTokens
	}
	if err := out.Validate(); err != nil {
		return out, usageError{err: fmt.Errorf("invalid budget: %w", err)}
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
		return nil, "", usageError{err: errors.New("missing --stages: pass --stages scope,precision, or store a default with 'cra init --stages scope,precision'")}
	}
	stages, err := retrieve.ParseStages(list)
	if err != nil {
		if flag == "" {
			err = fmt.Errorf("[stages] default in .clean_room/config.toml: %w (store good ones with 'cra init --stages scope,precision', or pass --stages)", err)
		}
		return nil, "", usageError{err: err}
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
	r, err := openExec(ctx, d, "retrieve", opts.repo, opts.stages, opts.budget, opts.taskID)
	if err != nil {
		return err
	}
	defer r.close()
	if strings.TrimSpace(opts.task) == "" {
		return usageError{err: retrieve.ErrEmptyTask}
	}
	// Preflight (seed 001 §14): [models] only when a model is called.
	if err := r.openStores(ctx, !opts.deterministic); err != nil {
		if errors.Is(err, config.ErrNoModels) {
			return fmt.Errorf("%w (or pass --deterministic to retrieve without a model)", err)
		}
		return err
	}
	executeModel := "none"
	if r.cfg != nil && r.cfg.Models != nil && r.cfg.Models.Coding != "" {
		executeModel = r.cfg.Models.Coding
	}
	if r.runLog, err = agent.StartRun(ctx, corpus.New(r.raw), agent.TaskRun{TaskID: r.taskID, Repo: r.repo, Mode: "retrieve",
		ExecuteModel: executeModel, Budget: r.budget, Stages: r.stageList}); err != nil {
		return err
	}
	if opts.deterministic {
		fmt.Fprintln(d.errOut, "deterministic: no model is called")
	}
	_, res, runErr := r.retrieve(ctx, opts.task, r.repo, r.stages, nil, opts.deterministic)
	// The session is archived and removed whatever happened (seed 001 §11.1).
	if r.session != nil {
		if err := r.session.Archive(ctx, r.factory, corpus.New(r.raw), r.taskID); err != nil && runErr == nil {
			runErr = err
		}
		r.session = nil
	}
	outcome := agent.RunOutcome{Success: runErr == nil, Tokens: r.judgeTokens(), Latency: time.Since(r.started)}
	if err := r.runLog.Finish(ctx, outcome); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		world.NoteEvent(ctx, d.errOut, r.stateDir, world.SourceRetrieve, r.taskID, "retrieve failed: "+runErr.Error())
		return runErr
	}
	if len(res.Package.Files) == 0 && len(res.Package.Trimmed) > 0 {
		fmt.Fprintf(d.errOut, "warning: a budget of %d tokens holds none of the %d items found: raise --context-window or lower --reserved-tokens\n",
			res.Package.Budget, len(res.Package.Trimmed))
	}
	summary := fmt.Sprintf("%d files, %d of %d tokens, stages %s", len(res.Package.Files), res.Package.Tokens, res.Package.Budget, r.stageList)
	world.NoteEvent(ctx, d.errOut, r.stateDir, world.SourceRetrieve, r.taskID, summary)
	taskID, stageList := r.taskID, r.stageList
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
	fmt.Fprintf(d.out, "# Context for: %s\n\n", agent.FirstLine(opts.task, 100))
	fmt.Fprintf(d.out, "task %s · stages %s (%s) · %d files · %d of %d tokens\n", taskID, stageList, mode, len(res.Package.Files), res.Package.Tokens, res.Package.Budget)
	fmt.Fprint(d.out, res.Package.Render())
	return nil
}
