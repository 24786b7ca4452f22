package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/board"
)

// taskListOptions are the inputs of 'cra task list'.
type taskListOptions struct {
	taskCommon
	folder string
}

func newTaskListCmd(d *deps, runF func(context.Context, *deps, *taskListOptions) error) *cobra.Command {
	opts := &taskListOptions{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the tasks, folder by folder",
		Long: `List the tasks of every folder, or of one with --folder, in folder order
(pending, in-progress, completed, failed, completed-finalized,
failed-blocked) and by id within a folder. A task file that cannot be read
is reported on standard error, naming the field and the fix, and skipped.`,
		Example: `  cra task list
  cra task list --folder pending --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return taskListRun(cmd.Context(), d, opts)
		},
	}
	addTaskCommon(cmd, &opts.taskCommon)
	cmd.Flags().StringVar(&opts.folder, "folder", "", "only this folder")
	return cmd
}

func taskListRun(ctx context.Context, d *deps, opts *taskListOptions) error {
	var folder board.Folder
	if opts.folder != "" {
		f, err := board.ParseFolder(opts.folder)
		if err != nil {
			return usageError{err: fmt.Errorf("--folder: %w", err)}
		}
		folder = f
	}
	b, err := openBoard(ctx, d, opts.repo, false)
	if err != nil {
		return err
	}
	var listed []board.Listed
	if b != nil {
		defer b.Close()
		if listed, err = b.Store.List(ctx, folder); err != nil {
			return err
		}
	}
	out := make([]taskJSON, 0, len(listed))
	for _, l := range listed {
		if l.Err != nil {
			warnTaskFile(d, l.Err)
			continue
		}
		out = append(out, taskJSON{Task: l.Task, Folder: l.Folder})
	}
	if opts.json {
		return encodeJSON(d.out, out)
	}
	if len(out) == 0 {
		_, err := fmt.Fprintln(d.out, "no tasks: add one with 'cra task add TITLE'")
		return err
	}
	rows := [][]string{{"ID", "FOLDER", "KIND", "PRIORITY", "RUNS", "TITLE"}}
	for _, t := range out {
		rows = append(rows, []string{t.ID, string(t.Folder), string(t.Kind), string(t.Priority), fmt.Sprint(t.Runs), clipRunes(t.Title, 72)})
	}
	return writeTable(d.out, rows)
}
