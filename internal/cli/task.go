package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/workspace"
	"github.com/cra-dev/cra/internal/world"
)

func newTaskCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "task",
		Short: "Add, list, show, edit and move tasks on the board",
		Long: `The task board: one YAML file per task in .clean_room/tasks/<folder>/,
in the folders pending, in-progress, completed, failed, completed-finalized
and failed-blocked.

The world log is the truth and the folder a view of it: every change is
logged before the file moves, and 'cra task rebuild' puts every file back
where the log says.

  [agent:start]              pending              cra task add
  [agent:active]             in-progress          a run starts (cra task run, the processor)
  [agent:finish] exit 0 …    completed
  [agent:finish] run failed: failed
  [agent:retry]              pending
  [agent:verified]           completed-finalized
  [agent:failed]             failed-blocked`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(
		newTaskAddCmd(d, nil),
		newTaskListCmd(d, nil),
		newTaskShowCmd(d, nil),
		newTaskEditCmd(d, nil),
		newTaskMoveCmd(d, nil),
		newTaskRunCmd(d, nil),
		newTaskMigrateCmd(d, nil),
		newTaskRebuildCmd(d, nil),
	)
	return cmd
}

// taskCommon are the flags of every 'cra task' subcommand.
type taskCommon struct {
	repo string
	json bool
}

func addTaskCommon(cmd *cobra.Command, c *taskCommon) {
	cmd.Flags().StringVar(&c.repo, "repo", ".", "repository root, or a directory inside it")
	cmd.Flags().BoolVar(&c.json, "json", false, "print JSON")
}

// taskBoard is an opened board and the workspace it came from.
type taskBoard struct {
	*board.Board
	ws *workspace.Workspace
}

func (tb *taskBoard) Close() error { return tb.ws.Close() }

// openBoard opens the board of the repository at repoFlag (the nearest one
// holding .clean_room/). With create it makes the state directory; without,
// a repository that has none has an empty board (board is nil).
func openBoard(ctx context.Context, d *deps, repoFlag string, create bool) (*taskBoard, error) {
	ws, err := openWorkspace(ctx, d, repoFlag, false)
	if err != nil {
		return nil, err
	}
	if !workspace.HasState(ws.Root) {
		if !create {
			ws.Close()
			return nil, nil
		}
		if _, err := config.EnsureStateDir(ws.Root); err != nil {
			ws.Close()
			return nil, err
		}
	}
	l, err := ws.Log()
	if err != nil {
		ws.Close()
		return nil, err
	}
	l.Now = d.now
	if ws.Config != nil && ws.Config.World != nil && ws.Config.World.Fsync != "" {
		if l.Sync, err = world.ParseSyncPolicy(ws.Config.World.Fsync); err != nil {
			ws.Close()
			return nil, err
		}
	}
	name := relPath(ws.Root, l.Path())
	l.Malformed = func(r *world.Record) { logWarnMalformed(d, name, r) }
	b := board.New(board.NewFileStore(ws.StateDir), l)
	b.Now = d.now
	return &taskBoard{Board: b, ws: ws}, nil
}

// openTaskBoard opens the board for a command about task id: the id is
// checked first, and a repository without a board says how one begins.
func openTaskBoard(ctx context.Context, d *deps, repoFlag, id string) (*taskBoard, error) {
	if err := board.CheckID(id); err != nil {
		return nil, usageError{err: err}
	}
	b, err := openBoard(ctx, d, repoFlag, false)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, fmt.Errorf("task %s: %w: the repository has no board yet (add a task with 'cra task add')", id, board.ErrNotFound)
	}
	return b, nil
}

// taskJSON is a task as JSON output: every field and its folder.
type taskJSON struct {
	*board.Task
	Folder board.Folder `json:"folder"`
}

// warnTaskFile reports a task file that cannot be read and is skipped.
func warnTaskFile(d *deps, err error) {
	fmt.Fprintf(d.errOut, "warning: skipped: %v\n", err)
}
