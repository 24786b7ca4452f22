package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/adapter"
)

type adaptersEvalOptions struct {
	repo      string
	tag       string
	datasetID int64
	json      bool
}

func newAdaptersEvalCmd(d *deps, runF func(context.Context, *deps, *adaptersEvalOptions) error) *cobra.Command {
	opts := &adaptersEvalOptions{}
	cmd := &cobra.Command{
		Use:   "eval TAG",
		Short: "Score an adapter against the model its stage runs on now",
		Long: `Run the adapter's stage on the validation split of a dataset (--dataset,
else the one it was trained on) twice: with the model the stage runs on
without this adapter, and with the adapter. Each reply is scored with the
stage's metric, and the mean of each is stored in adapter_registry.eval_metrics:

  scope          gold_file_recall    share of the commit's files judged relevant
  execute_code   reproduced_commits  share of examples whose blocks apply and reproduce the commit
  execute_plan   plan_file_recall    share of the commit's files a valid plan names
  task_analysis  name_f1             F1 of the files and symbols implied, against the reference
  precision      tier_accuracy       share of the reference's symbols given the same tier

A reply that cannot be read scores 0. 'cra adapters activate' needs the
adapter to have scored higher.`,
		Example: `  cra adapters eval qwen3:4b-scope-v1
  cra adapters eval qwen3:4b-scope-v1 --dataset 7 --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.tag = args[0]
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return adaptersEvalRun(cmd.Context(), d, opts)
		},
	}
	cmd.Flags().StringVar(&opts.repo, "repo", ".", "repository root, or a directory inside it")
	cmd.Flags().Int64Var(&opts.datasetID, "dataset", 0, "the training_datasets id whose validation split is used")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the evaluation as JSON")
	return cmd
}

func adaptersEvalRun(ctx context.Context, d *deps, opts *adaptersEvalOptions) error {
	ws, err := openWorkspace(ctx, d, opts.repo, false)
	if err != nil {
		return err
	}
	defer ws.Close()
	eo := adapter.EvalOptions{DatasetID: opts.datasetID}
	progress := newTermProgress(d.errOut, "evaluating")
	if isTerminal(d.errOut) && !opts.json {
		eo.Progress = progress.report
	}
	ev, err := adapter.Evaluate(ctx, ws, opts.tag, eo)
	progress.finish()
	if err != nil {
		return err
	}
	if opts.json {
		return encodeJSON(d.out, ev)
	}
	fmt.Fprintf(d.out, "%s %s on %s of dataset %d", ev.Stage, ev.Metric, countNoun(ev.Examples, "example"), ev.DatasetID)
	if ev.Skipped > 0 {
		fmt.Fprintf(d.out, " (%d skipped: nothing to score against)", ev.Skipped)
	}
	fmt.Fprintln(d.out, ":")
	for _, s := range []adapter.Score{ev.Adapter, ev.Baseline} {
		fmt.Fprintf(d.out, "  %-30s %.2f  (%s", s.Model, s.Score, s.Source)
		if s.Unusable > 0 {
			fmt.Fprintf(d.out, ", %d unusable", s.Unusable)
		}
		fmt.Fprintln(d.out, ")")
	}
	if ev.Better {
		fmt.Fprintf(d.out, "%s beats %s: activate it with 'cra adapters activate %s'\n", ev.Adapter.Model, ev.Baseline.Model, ev.Adapter.Model)
	} else {
		fmt.Fprintf(d.out, "%s does not beat %s: 'cra adapters activate' refuses it without --force\n", ev.Adapter.Model, ev.Baseline.Model)
	}
	return nil
}
