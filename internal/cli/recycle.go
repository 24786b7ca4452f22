package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/cra-dev/cra/internal/fleet"
	"github.com/spf13/cobra"
)

type recycleOptions struct {
	repo string
	once bool
	json bool
}

func newRecycleCmd(d *deps, runF func(context.Context, *deps, *recycleOptions) error) *cobra.Command {
	opts := &recycleOptions{}
	cmd := &cobra.Command{
		Use:   "recycle",
		Short: "Review finished runs: evidence first, the model second; requeue, finalize or block",
		Long: `Run one tick of the recycler, which 'cra serve' runs every
recycler.interval_seconds:

  1. tasks a person answered (cra answer) go back to pending;
  2. Level 2: a live run with no output and no log line for
     recycler.stale_after, or looping, is stopped and its task requeued
     with "continue" (at Level 1's start limit it is blocked instead);
  3. the first eligible task in completed/, then failed/ is reviewed:
     the harness collects the evidence (exit status, the [validation]
     commands re-run in the task's worktree, the diff against its base,
     deleted or weakened tests, loops in the output), then the summarizer
     model writes the note and a classification, which the evidence may
     lower and never raise. Streaks decide: at completion_threshold
     complete reviews in a row the task is verified (completed-finalized),
     at failure_threshold failures in a row, or when the model says a
     person is needed, it is blocked (failed-blocked); otherwise it goes
     back to pending with the note and guidance for its next run;
  4. [notify] command and webhook are told of tasks verified, blocked or
     waiting for a person.

Every review is kept in .clean_room/runs/<id>/reviews.jsonl ('cra task
show' prints them) and every model call in raw.sqlite.`,
		Example: `  cra recycle --once
  cra recycle --once --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return recycleRun(cmd.Context(), d, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.repo, "repo", ".", "repository root, or a directory inside it")
	f.BoolVar(&opts.once, "once", false, "run one tick now and exit")
	f.BoolVar(&opts.json, "json", false, "print the tick's report as JSON")
	return cmd
}

func recycleRun(ctx context.Context, d *deps, opts *recycleOptions) error {
	if !opts.once {
		return usageError{err: errors.New("cra recycle runs one tick with --once ('cra serve' runs it continuously): pass --once")}
	}
	b, err := openOps(ctx, d, opts.repo, false, "cra recycle --once")
	if err != nil {
		return err
	}
	if b == nil {
		fmt.Fprintln(d.out, "nothing to recycle: no .clean_room/ here")
		return nil
	}
	defer b.Close()
	var out io.Writer = d.out
	if opts.json {
		out = d.errOut
	}
	rep, err := b.RecycleOnce(ctx, out)
	if err != nil {
		return err
	}
	if opts.json {
		return encodeJSON(d.out, rep)
	}
	switch {
	case rep.Disabled != "":
		fmt.Fprintf(d.out, "no review: %s\n", rep.Disabled)
	case !rep.PausedUntil.IsZero():
		fmt.Fprintf(d.out, "no review: the recycler is paused until %s after model errors\n", rep.PausedUntil.UTC().Format("15:04:05"))
	case rep.Review == nil && len(rep.Warnings) == 0:
		fmt.Fprintln(d.out, "nothing to review: no eligible task in completed/ or failed/")
	}
	if rv := rep.Review; rv != nil {
		for _, why := range rv.Lowered {
			fmt.Fprintf(d.out, "  lowered from %s: %s\n", rv.Model, why)
		}
		switch {
		case rv.Action == fleet.ReviewWaits:
			fmt.Fprintf(d.out, "  waits for the model: %s\n", rv.Fallback)
		case rv.Fallback != "":
			fmt.Fprintf(d.out, "  conservative note: %s\n", rv.Fallback)
		}
	}
	return nil
}
