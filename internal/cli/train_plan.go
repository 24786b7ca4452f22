package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/run"
	"github.com/cra-dev/cra/internal/train"
	"github.com/cra-dev/cra/internal/workspace"
)

type trainPlanOptions struct {
	repo   string
	stages string
	budget budgetFlags
	source string
	target string
	json   bool
	raw    []string
	taskID string // tests set it; a new UUID otherwise
}

func newTrainPlanCmd(d *deps, runF func(context.Context, *deps, *trainPlanOptions) error) *cobra.Command {
	opts := &trainPlanOptions{}
	var finishBudget func()
	cmd := &cobra.Command{
		Use:   "train-plan",
		Short: "Find the weakest pipeline stage in the logs and plan its LoRA training",
		Long: `Read the raw database (every logged call, retrieval decision and run
outcome) with the log-analysis stages, find the weakest pipeline stage
with the numbers that say so, and ask the reasoning model for a training
plan: the stage, the data to select, hyperparameters and the improvement
expected. A reply that does not parse is retried once, naming the problem;
then a conservative plan is derived from the evidence (marked fallback).

The plan is recorded in training_plans and written to
.clean_room/training/plans/plan-<id>.toml, which you may edit before
'cra curate-data --plan FILE'.

Log-analysis stages (--stages or [train] stages): ` + strings.Join(train.AnalysisStages, ", ") + `.
Budget: --context-window and --reserved-tokens, or --budget-config FILE, or
[budget] in .clean_room/config.toml. It bounds the planning prompt, and
the training examples (hyperparameters.max_seq_length).

It needs logged runs ('cra solve', 'cra plan') or datasets from 'cra
bootstrap': without --source it plans from the logged runs, or from the
bootstrapped data when nothing is logged yet, and says so.

A fleet's hosts each keep their own raw.sqlite: --raw FILE… reads other
hosts' copies too, merged with this host's (a run or a call read twice
counts once); the plan is recorded in this host's.`,
		Example: `  cra train-plan --stages stage_rates,failure_patterns,decision_outcomes --context-window 8192 --reserved-tokens 2048
  cra train-plan --stages stage_rates --source synthetic --budget-config budget.toml
  cra train-plan --stages failure_patterns --target execute_code --json
  cra train-plan --stages stage_rates --raw /srv/hosts/*/raw.sqlite`,
		RunE: func(cmd *cobra.Command, args []string) error {
			finishBudget()
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return trainPlanRun(cmd.Context(), d, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.repo, "repo", ".", "repository root")
	f.StringVar(&opts.stages, "stages", "", "log-analysis stages, comma-separated: "+strings.Join(train.AnalysisStages, ", "))
	f.StringVar(&opts.source, "source", "", "plan from logged runs (logged) or from bootstrapped data (synthetic); by default logged, or synthetic when there are no logged runs")
	f.StringVar(&opts.target, "target", "", "train this stage instead of the weakest: "+strings.Join(train.Stages(), ", "))
	f.BoolVar(&opts.json, "json", false, "print the evidence and the plan as JSON")
	addRawFlag(cmd, &opts.raw)
	finishBudget = addBudgetFlags(cmd, &opts.budget)
	return cmd
}

// resolveAnalysisStages applies flag > [train] stages > hard error.
func resolveAnalysisStages(flag string, cfg *config.Config) ([]string, error) {
	list := flag
	if list == "" && cfg != nil && cfg.Train != nil {
		list = cfg.Train.Stages
	}
	if list == "" {
		all := strings.Join(train.AnalysisStages, ",")
		return nil, usageError{err: &missingValue{name: "--stages", init: "",
			msg: fmt.Sprintf("missing --stages: pass --stages %s, or store a default as [train] stages = %q in .clean_room/config.toml", all, all)}}
	}
	stages, err := train.ParseStages(list)
	if err != nil {
		if flag == "" {
			err = fmt.Errorf("[train] stages in .clean_room/config.toml: %w (fix it, or pass --stages)", err)
		}
		return nil, usageError{err: err}
	}
	return stages, nil
}

func trainPlanRun(ctx context.Context, d *deps, opts *trainPlanOptions) error {
	if opts.source != "" && opts.source != train.SourceLogged && opts.source != train.SourceSynthetic {
		return usageError{err: fmt.Errorf("--source %q: use %s or %s", opts.source, train.SourceLogged, train.SourceSynthetic)}
	}
	if opts.target != "" {
		if err := train.CheckStage(opts.target); err != nil {
			return usageError{err: fmt.Errorf("--target: %w", err)}
		}
	}
	ws, err := openWorkspace(ctx, d, opts.repo, false)
	if err != nil {
		return err
	}
	defer ws.Close()
	// One at a time: 'cra init' stores the budget but not [train] stages.
	stages, err := resolveAnalysisStages(opts.stages, ws.Config)
	if err != nil {
		return err
	}
	budget, err := resolveBudget(opts.budget, ws.Config)
	if err == nil {
		err = runError(run.CheckWindow(ws.Config, run.ModePlan, budget))
	}
	if err := gather([]error{err}); err != nil {
		return err
	}
	// Preflight (seed 001 §14): the models, then the logs.
	if err := workspace.CheckModels(ws.Config); err != nil {
		return err
	}
	c, err := ws.Corpus(ctx)
	if err != nil {
		return err
	}
	rc, err := readCorpus(ctx, d, ws, opts.raw)
	if err != nil {
		return err
	}
	defer rc.Close()
	ev, err := train.Gather(ctx, rc.Corpus, opts.source, stages, opts.target)
	if err != nil {
		if errors.Is(err, train.ErrNoRuns) || errors.Is(err, train.ErrNoSynthetic) {
			return err
		}
		return usageError{err: err}
	}
	taskID := opts.taskID
	if taskID == "" {
		taskID = run.NewTaskID()
	}
	// The logs are all it reads: a repository that only bootstrapped data
	// has no index, and needs none (the router uses the index's adapters
	// when there is one).
	model, m, err := train.PlanModel(ctx, ws.Router(ctx), c, d.logger, taskID)
	if err != nil {
		return err
	}
	reply := min(m.MaxTokens, budget.ReservedTokens/2)
	if reply <= 0 {
		return usageError{err: fmt.Errorf("--reserved-tokens %d leaves no room for the model's reply: reserve at least the reply's tokens", budget.ReservedTokens)}
	}
	if ev.Chosen {
		fmt.Fprintln(d.errOut, "no logged runs yet: planning from the bootstrapped datasets (--source synthetic)")
	}
	fmt.Fprintf(d.errOut, "weakest stage: %s (%s)\n", ev.Weakest, ev.Why)
	planner := &train.Planner{Model: model, PromptTokens: budget.ContextWindow - budget.ReservedTokens, ReplyTokens: reply, ContextWindow: budget.ContextWindow}
	drafted, err := planner.Draft(ctx, ev)
	if err != nil {
		return err
	}
	for i, p := range drafted.Problems {
		fmt.Fprintf(d.errOut, "reply %d refused: %s\n", i+1, p)
	}
	if drafted.Plan.Fallback {
		fmt.Fprintln(d.errOut, "warning: the reasoning model's replies did not parse twice: the plan is the conservative fallback derived from the evidence (fallback = true)")
	}
	path, err := train.Save(ctx, c, train.NewLayout(ws.Root), drafted, taskID)
	if err != nil {
		return err
	}
	p := drafted.Plan
	rel := relPath(ws.Root, path)
	fmt.Fprintf(d.errOut, "plan %d saved to %s (edit it, then: cra curate-data --plan %s)\n", p.ID, rel, rel)
	if opts.json {
		return encodeJSON(d.out, struct {
			TaskID   string              `json:"task_id"`
			File     string              `json:"file"`
			Plan     *train.Plan         `json:"plan"`
			Evidence *train.Evidence     `json:"evidence"`
			Raw      []*workspace.Merged `json:"raw,omitempty"`
		}{taskID, path, p, ev, rc.Merged})
	}
	origin := "written by the reasoning model"
	if p.Fallback {
		origin = "fallback, derived from the evidence"
	}
	fmt.Fprintf(d.out, "plan %d: train %s (%s model), %s\n", p.ID, p.Stage, p.BaseModel, origin)
	fmt.Fprintf(d.out, "why: %s\n", p.Rationale)
	fmt.Fprintf(d.out, "data: successful runs' calls, up to %d", p.Data.MaxExamples)
	if p.Data.IncludeNegatives {
		fmt.Fprintf(d.out, "; failed runs' as negatives, at most %.0f%%", 100*p.Data.MaxNegativeShare)
	}
	if p.Data.MixSynthetic {
		fmt.Fprintf(d.out, "; bootstrapped examples, at most %.0f%%", 100*p.Data.SyntheticShare)
	}
	fmt.Fprintln(d.out)
	h := p.Hyper
	fmt.Fprintf(d.out, "hyperparameters: iters %d, learning rate %g, LoRA rank %d, alpha %d, batch %d, max sequence %d\n",
		h.Iters, h.LearningRate, h.LoraRank, h.LoraAlpha, h.BatchSize, h.MaxSeqLength)
	fmt.Fprintf(d.out, "target: %s %.2f → %.2f\n", p.Targets.Metric, p.Targets.Baseline, p.Targets.Target)
	fmt.Fprintf(d.out, "file: %s\n", rel)
	return nil
}
