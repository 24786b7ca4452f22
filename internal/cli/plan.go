package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/run"
)

type planOptions struct {
	task          string
	repo          string
	stages        string
	budget        budgetFlags
	output        string
	deterministic bool // retrieval only; the plan always comes from the reasoning model
	json          bool
	taskID        string // tests set it; a new UUID otherwise
}

func newPlanCmd(d *deps, runF func(context.Context, *deps, *planOptions) error) *cobra.Command {
	opts := &planOptions{}
	var finishBudget func()
	cmd := &cobra.Command{
		Use:   "plan <task>",
		Short: "Write a plan for a task: files to change, what, in what order, why",
		Long: `Retrieve the context of the task, then ask the reasoning model for a
structured plan: which files to change, what to change in each, in what
order and why. The plan is validated and saved twice, as
Markdown you can read and edit and as JSON, under .clean_room/plans/ or at
--output; 'cra solve --plan FILE' follows either.

When docs/knowledge/ exists, its conventions and the documents closest to
the task go into the prompt as PROJECT KNOWLEDGE.

Budget: --context-window and --reserved-tokens, or --budget-config FILE, or
[budget] in .clean_room/config.toml. Stages: --stages or [stages] default.`,
		Example: `  cra plan "Resolve the pager command once" --stages scope,precision
  cra plan "$(cat issue.md)" --output plan.md && $EDITOR plan.md
  cra solve --plan plan.md --max-attempts 3 --max-refinement-loops 1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.task = args[0]
			finishBudget()
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return planRun(cmd.Context(), d, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.repo, "repo", ".", "repository root")
	f.StringVar(&opts.stages, "stages", "", "retrieval stages in order, comma-separated: "+strings.Join(run.StageNames(), ", "))
	f.StringVarP(&opts.output, "output", "o", "", "write the plan's Markdown here (and its JSON beside it, .json); default .clean_room/plans/<task_id>.md")
	f.BoolVar(&opts.deterministic, "deterministic-retrieval", false, "retrieve without the reasoning model's judgments (the plan still comes from it)")
	f.BoolVar(&opts.json, "json", false, "print the plan as JSON")
	finishBudget = addBudgetFlags(cmd, &opts.budget)
	return cmd
}

func planRun(ctx context.Context, d *deps, opts *planOptions) error {
	if strings.TrimSpace(opts.task) == "" {
		return usageError{err: run.ErrEmptyTask}
	}
	ws, spec, err := openRun(ctx, d, run.ModePlan, opts.repo, opts.stages, opts.budget, opts.taskID, true)
	if err != nil {
		return err
	}
	defer ws.Close()
	spec.Task, spec.Deterministic = opts.task, opts.deterministic
	ps := run.PlanSpec{Spec: spec}
	if opts.output != "" {
		if strings.EqualFold(filepath.Ext(opts.output), ".json") {
			return usageError{err: fmt.Errorf("--output %s: name the Markdown file; its JSON goes beside it", opts.output)}
		}
		if ps.Output, err = filepath.Abs(opts.output); err != nil {
			return err
		}
		// Before the model is asked: a plan that cannot be saved is wasted.
		if err := run.CheckPlanPath(ps.Output); err != nil {
			return usageError{err: fmt.Errorf("--output: %w", err)}
		}
	}
	res, err := run.Plan(ctx, ws, ps)
	if err != nil {
		return runError(err)
	}
	out, jsonPath := res.Markdown, res.JSON
	fmt.Fprintf(d.errOut, "plan saved to %s and %s (edit it, then: cra solve --plan %s)\n", relPath(ws.Root, out), relPath(ws.Root, jsonPath), relPath(ws.Root, out))
	if opts.json {
		return encodeJSON(d.out, struct {
			*run.PlanDoc
			Markdown string `json:"markdown_file"`
			JSONFile string `json:"json_file"`
		}{res.Plan, out, jsonPath})
	}
	fmt.Fprint(d.out, res.Plan.Markdown())
	return nil
}
