package cli

import (
	"context"
	"fmt"

	"github.com/cra-dev/cra/internal/fleet"
	"github.com/spf13/cobra"
)

// taskRebuildOptions are the inputs of 'cra task rebuild'.
type taskRebuildOptions struct {
	taskCommon
	check bool
}

func newTaskRebuildCmd(d *deps, runF func(context.Context, *deps, *taskRebuildOptions) error) *cobra.Command {
	opts := &taskRebuildOptions{}
	cmd := &cobra.Command{
		Use:   "rebuild",
		Short: "Put every task file where the world log says it belongs",
		Long: `Rebuild the folders from the world log, the truth (DESIGN.md principle 1):
each task file goes to the folder of its latest lifecycle entry; of a task
in two folders the copy where the log puts it (or else the newest) is kept;
a file dropped into pending/ by hand gets its start entry, as 'cra task add'
would log it; temp files of writes that never finished are removed. Each
repair is logged as an [event:system] line before it is made.

Reported and left for a person: a task the log knows whose file is gone,
a file outside pending/ the log does not know, a file that cannot be read.

--check changes nothing: it reports each disagreement and exits 1 when
there is one.`,
		Example: `  cra task rebuild --check
  cra task rebuild`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return taskRebuildRun(cmd.Context(), d, opts)
		},
	}
	addTaskCommon(cmd, &opts.taskCommon)
	cmd.Flags().BoolVar(&opts.check, "check", false, "only report disagreements; exit 1 if there are any")
	return cmd
}

func taskRebuildRun(ctx context.Context, d *deps, opts *taskRebuildOptions) error {
	b, err := openBoard(ctx, d, opts.repo, false)
	if err != nil {
		return err
	}
	var rep fleet.RepairReport
	if b != nil {
		defer b.Close()
		if rep, err = b.Rebuild(ctx, opts.check); err != nil {
			return err
		}
	}
	if rep.Repairs == nil {
		rep.Repairs = []fleet.Repair{}
	}
	left := 0
	for _, r := range rep.Repairs {
		if !r.Fixed {
			left++
		}
	}
	if opts.json {
		if err := encodeJSON(d.out, rep); err != nil {
			return err
		}
	} else {
		rows := make([][]string, 0, len(rep.Repairs))
		for _, r := range rep.Repairs {
			state := "fixed"
			switch {
			case opts.check:
				state = "found"
			case !r.Fixed:
				state = "left"
			}
			rows = append(rows, []string{state, r.What, r.ID, r.Detail})
		}
		writeColumns(d.out, "", rows)
		switch {
		case rep.Clean():
			fmt.Fprintf(d.out, "the board agrees with the world log (%s)\n", countNoun(rep.Tasks, "task"))
		case opts.check:
			fmt.Fprintf(d.out, "%s: run 'cra task rebuild' to repair what the log can tell\n", countNoun(len(rep.Repairs), "disagreement"))
		case left > 0:
			fmt.Fprintf(d.out, "repaired %d; %d left for a person (see above)\n", len(rep.Repairs)-left, left)
		default:
			fmt.Fprintf(d.out, "repaired %d; the board agrees with the world log\n", len(rep.Repairs))
		}
	}
	if opts.check && !rep.Clean() {
		return silentError{code: exitFailure}
	}
	return nil
}
