package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/fleet"
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
	d.relaxGC()
	var folder fleet.Folder
	if opts.folder != "" {
		f, err := fleet.ParseFolder(opts.folder)
		if err != nil {
			return usageError{err: fmt.Errorf("--folder: %w", err)}
		}
		folder = f
	}
	if opts.needsYou {
		return taskNeedsYouRun(ctx, d, opts)
	}
	out, err := listTasks(ctx, d, opts.repo, folder)
	if err != nil {
		return err
	}
	if opts.json {
		return encodeTaskList(d.out, out)
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
type needsYouJSON = fleet.NeedsYou

// taskNeedsYouRun lists the tasks in failed-blocked with their need lines.
func taskNeedsYouRun(ctx context.Context, d *deps, opts *taskListOptions) error {
	out := []needsYouJSON{}
	b, err := openOps(ctx, d, opts.repo, false, "cra task list --needs-you")
	if err != nil {
		return err
	}
	if b != nil {
		defer b.Close()
		if out, err = b.NeedsYou(ctx); err != nil {
			return err
		}
	}
	if opts.json {
		return encodeJSONArray(d.out, out)
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

// listTasks reads folder's tasks ("" for all) of the repository's board
// (none when it has no board), reporting unreadable files and the world
// log's skipped entries on stderr.
func listTasks(ctx context.Context, d *deps, repo string, folder fleet.Folder) ([]taskJSON, error) {
	b, err := openOps(ctx, d, repo, false, "cra task list")
	if err != nil || b == nil {
		return []taskJSON{}, err
	}
	defer b.Close()
	l, err := b.List(ctx, folder)
	if err != nil {
		return nil, err
	}
	for _, p := range l.Problems {
		fmt.Fprintf(d.errOut, "warning: skipped: %s\n", p)
	}
	for _, s := range l.Skipped {
		fmt.Fprintf(d.errOut, "warning: skipped, the lifecycle forbids it: world log %s\n", s)
	}
	return l.Tasks, nil
}
