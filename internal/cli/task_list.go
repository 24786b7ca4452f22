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
	folder   string
	needsYou bool
}

func newTaskListCmd(d *deps, runF func(context.Context, *deps, *taskListOptions) error) *cobra.Command {
	opts := &taskListOptions{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the tasks, folder by folder",
		Long: `List the tasks of every folder, or of one with --folder, in folder order
(pending, in-progress, completed, failed, completed-finalized,
failed-blocked) and by id within a folder. A task file that cannot be read
is reported on standard error, naming the field and the fix, and skipped.

--needs-you lists the tasks that wait for a person (failed-blocked), each
with its need: line, what the person must do; answer one with
'cra answer ID TEXT'.`,
		Example: `  cra task list
  cra task list --folder pending --json
  cra task list --needs-you`,
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
	cmd.Flags().BoolVar(&opts.needsYou, "needs-you", false, "only the tasks that wait for a person, with what they need")
	cmd.MarkFlagsMutuallyExclusive("folder", "needs-you")
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
	if opts.needsYou {
		return taskNeedsYouRun(ctx, d, opts)
	}
	b, out, err := listTasks(ctx, d, opts.repo, folder)
	if err != nil {
		return err
	}
	if b != nil {
		defer b.Close()
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

// needsYouJSON is a task of 'cra task list --needs-you --json'.
type needsYouJSON struct {
	taskJSON
	// Need is what a person must do: the need: of the task's latest
	// [agent:failed] entry.
	Need string `json:"need_you"`
}

// taskNeedsYouRun lists the tasks in failed-blocked with their need lines.
func taskNeedsYouRun(ctx context.Context, d *deps, opts *taskListOptions) error {
	b, tasks, err := listTasks(ctx, d, opts.repo, board.FailedBlocked)
	if err != nil {
		return err
	}
	out := make([]needsYouJSON, 0, len(tasks))
	if b != nil {
		defer b.Close()
	}
	for _, t := range tasks {
		a, _, err := b.Log.Lookup(ctx, t.ID)
		if err != nil {
			return err
		}
		if _, dup := board.IsCollapsed(a); dup {
			continue // a duplicate cleanup collapsed waits for no one
		}
		out = append(out, needsYouJSON{taskJSON: t, Need: a.Need})
	}
	if opts.json {
		return encodeJSON(d.out, out)
	}
	if len(out) == 0 {
		_, err := fmt.Fprintln(d.out, "no task waits for you")
		return err
	}
	for _, t := range out {
		need := t.Need
		if need == "" {
			need = "(no need: line: read 'cra task show " + t.ID + "')"
		}
		fmt.Fprintf(d.out, "%s  %s\n  need: %s\n", t.ID, clipRunes(t.Title, 72), need)
	}
	_, err = fmt.Fprintln(d.out, "answer one with: cra answer ID TEXT")
	return err
}

// listTasks opens the board (nil when the repository has none) and reads
// folder's tasks ("" for all), reporting unreadable files on stderr. The
// caller closes the board.
func listTasks(ctx context.Context, d *deps, repo string, folder board.Folder) (*taskBoard, []taskJSON, error) {
	b, err := openBoard(ctx, d, repo, false)
	if err != nil || b == nil {
		return nil, []taskJSON{}, err
	}
	listed, err := b.Store.List(ctx, folder)
	if err != nil {
		b.Close()
		return nil, nil, err
	}
	out := make([]taskJSON, 0, len(listed))
	for _, l := range listed {
		if l.Err != nil {
			warnTaskFile(d, l.Err)
			continue
		}
		out = append(out, taskJSON{Task: l.Task, Folder: l.Folder})
	}
	return b, out, nil
}
