package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/run"
)

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

The stages run in the order given: scope ranks and selects
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
	f.StringVar(&opts.stages, "stages", "", "retrieval stages in order, comma-separated: "+strings.Join(run.StageNames(), ", "))
	f.BoolVar(&opts.deterministic, "deterministic", false, "call no model: the deterministic ranking and selection only")
	f.BoolVar(&opts.json, "json", false, "print the package as JSON")
	finishBudget = addBudgetFlags(cmd, &opts.budget)
	return cmd
}

func retrieveRun(ctx context.Context, d *deps, opts *retrieveOptions) error {
	ws, spec, err := openRun(ctx, d, run.ModeRetrieve, opts.repo, opts.stages, opts.budget, opts.taskID, !opts.deterministic)
	if err != nil {
		return err
	}
	defer ws.Close()
	spec.Task, spec.Deterministic = opts.task, opts.deterministic
	res, err := run.Retrieve(ctx, ws, spec)
	if errors.Is(err, config.ErrNoModels) {
		// Preflight (seed 001 §14): [models] only when a model is called.
		return fmt.Errorf("%w (or pass --deterministic to retrieve without a model)", err)
	}
	if err != nil {
		return runError(err)
	}
	if opts.json {
		return encodeJSON(d.out, struct {
			TaskID string `json:"task_id"`
			*run.Result
		}{res.TaskID, res.Result})
	}
	fmt.Fprint(d.out, res.Package.Markdown(opts.task, run.Made{TaskID: res.TaskID, Stages: spec.StageList, Deterministic: opts.deterministic}))
	return nil
}
