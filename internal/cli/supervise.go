package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

type superviseOptions struct {
	repo   string
	once   bool
	dryRun bool
}

func newSuperviseCmd(d *deps, runF func(context.Context, *deps, *superviseOptions) error) *cobra.Command {
	opts := &superviseOptions{}
	cmd := &cobra.Command{
		Use:   "supervise",
		Short: "Keep the world log and the machine in agreement (Level 1, no LLM)",
		Long: `Compare the agents the world log calls active with the runs alive on this
machine, and act on what disagrees:

  an active agent whose run is gone    restarted (its task back to pending,
                                       with backoff: 10 s doubling to 5 min),
                                       or failed for a person past 5 starts
                                       in 10 minutes
  a process tagged CRA_TASK_ID that    its process group is killed, after its
  the log does not call active, or     start time is checked again
  of a stale run

A run is known by its pid, its process start time and its run number,
never by pid alone: a process that reuses a dead run's pid is not touched.
Every action is logged as an [event:system] line.

'cra serve' runs a pass at start and every few seconds; --once runs one
now. --dry-run prints what it would do, naming each pid, and does nothing.`,
		Example: `  cra supervise --once --dry-run
  cra supervise --once`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return superviseRun(cmd.Context(), d, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.repo, "repo", ".", "repository root, or a directory inside it")
	f.BoolVar(&opts.once, "once", false, "run one pass now and exit")
	f.BoolVar(&opts.dryRun, "dry-run", false, "print each action, naming the pid, and take none")
	return cmd
}

func superviseRun(ctx context.Context, d *deps, opts *superviseOptions) error {
	if !opts.once {
		return usageError{err: errors.New("cra supervise runs one pass with --once ('cra serve' runs them continuously): pass --once, with --dry-run to only look")}
	}
	tb, err := openBoard(ctx, d, opts.repo, false)
	if err != nil {
		return err
	}
	if tb == nil {
		fmt.Fprintln(d.out, "nothing to supervise: no .clean_room/ here")
		return nil
	}
	defer tb.Close()
	taken, err := tb.fleet.Supervise(ctx, opts.dryRun, d.out)
	switch {
	case taken == 0 && err == nil:
		fmt.Fprintln(d.out, "the log and the machine agree")
	case opts.dryRun:
		fmt.Fprintf(d.out, "dry run: %d action%s, none taken\n", taken, plural(taken))
	}
	return err
}
