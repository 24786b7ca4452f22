package cli

import (
	"context"
	"fmt"

	"github.com/cra-dev/cra/internal/fleet"
	"github.com/spf13/cobra"
)

// taskMoveOptions are the inputs of 'cra task move'.
type taskMoveOptions struct {
	taskCommon
	id     string
	folder string
	why    string
}

func newTaskMoveCmd(d *deps, runF func(context.Context, *deps, *taskMoveOptions) error) *cobra.Command {
	opts := &taskMoveOptions{}
	cmd := &cobra.Command{
		Use:   "move <id> <folder>",
		Short: "A person's move of a task to another folder, logged first",
		Long: `Move a task to a folder as a person. The world log stays the truth: the
move is logged as [event:user][ID] moved from F to T: WHY, then as the
lifecycle entry that puts a task in the target folder, and only then does
the file move:

  pending              [agent:retry]      (also out of failed-blocked)
  completed            [agent:finish]     (after a run began)
  failed               [agent:finish] run failed: …
  completed-finalized  [agent:verified]   (after a finish)
  failed-blocked       [agent:failed]

A move the lifecycle does not allow is refused, logs nothing, and says
where the task can go. in-progress is never a person's move: a task is
active only while a run goes on. Moving into a terminal folder sets
processor_auto_requeue false; moving back to pending from one sets it true.`,
		Example: `  cra task move t-1a2b3c4d failed-blocked --why "needs a design decision"
  cra task move t-1a2b3c4d pending --why "decided: use the flag"`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.id, opts.folder = args[0], args[1]
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return taskMoveRun(cmd.Context(), d, opts)
		},
	}
	addTaskCommon(cmd, &opts.taskCommon)
	cmd.Flags().StringVar(&opts.why, "why", "", "the reason, kept in the log")
	return cmd
}

func taskMoveRun(ctx context.Context, d *deps, opts *taskMoveOptions) error {
	if err := fleet.CheckID(opts.id); err != nil {
		return usageError{err: err}
	}
	to, err := fleet.ParseFolder(opts.folder)
	if err != nil {
		return usageError{err: err}
	}
	b, err := openTaskOps(ctx, d, opts.repo, opts.id, "cra task move")
	if err != nil {
		return err
	}
	defer b.Close()
	from, err := b.Move(ctx, opts.id, to, opts.why)
	if err != nil {
		return err
	}
	if opts.json {
		return encodeJSON(d.out, struct {
			ID   string       `json:"id"`
			From fleet.Folder `json:"from"`
			To   fleet.Folder `json:"folder"`
		}{opts.id, from, to})
	}
	_, err = fmt.Fprintf(d.out, "moved %s: %s → %s\n", opts.id, from, to)
	return err
}
