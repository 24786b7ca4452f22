package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/fleet"
	"github.com/cra-dev/cra/internal/run"
	"github.com/cra-dev/cra/internal/server"
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
		newTaskStopCmd(d),
		newTaskCloseCmd(d),
		newTaskReopenCmd(d),
		newTaskMergeCmd(d),
		newTaskPRCmd(d),
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

// taskBoard is an opened fleet, its board and the workspace it came
// from.
type taskBoard struct {
	*fleet.Board
	fleet *fleet.Fleet
	ws    *workspace.Workspace
}

func (tb *taskBoard) Close() error { return tb.fleet.Close() }

// openBoard opens the fleet of the repository at repoFlag (the nearest
// one holding .clean_room/). With create it makes the state directory;
// without, a repository that has none has an empty board (board is nil).
func openBoard(ctx context.Context, d *deps, repoFlag string, create bool) (*taskBoard, error) {
	ws, err := openWorkspace(ctx, d, repoFlag, false)
	if err != nil {
		return nil, err
	}
	f, err := openFleet(ctx, d, ws, create)
	if err != nil || f == nil {
		ws.Close()
		return nil, err
	}
	return &taskBoard{Board: f.Board, fleet: f, ws: ws}, nil
}

// openFleet opens the fleet over ws; nil when the repository has no
// state directory and create is unset.
func openFleet(ctx context.Context, d *deps, ws *workspace.Workspace, create bool) (*fleet.Fleet, error) {
	if !create && !workspace.HasState(ws.Root) {
		return nil, nil
	}
	var name string
	f, err := fleet.Open(ctx, ws, fleet.Options{Create: create, Now: d.now, Logger: d.logger, Out: d.errOut, Context: run.AgentContext, Version: hostVersion(),
		Malformed: func(r *world.Record) { logWarnMalformed(d, name, r) }})
	if errors.Is(err, fleet.ErrNoBoard) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	name = "the world log in PostgreSQL"
	if fl, err := world.AsFile(f.Board.Log); err == nil {
		name = relPath(ws.Root, fl.Path())
	}
	return f, nil
}

// boardOps are the fleet's operations for one command: through the
// repository's running daemon when serve.json names a live one, else in
// process (gopls's connect). remote says which answered.
type boardOps struct {
	fleet.Ops
	root   string
	remote bool
}

// openOps opens the operations of the repository at repoFlag for the
// command named command ('cra task add'). Without a board and without
// create it returns nil.
func openOps(ctx context.Context, d *deps, repoFlag string, create bool, command string) (*boardOps, error) {
	ws, err := openWorkspace(ctx, d, repoFlag, false)
	if err != nil {
		return nil, err
	}
	if workspace.HasState(ws.Root) {
		c, err := server.Dial(ctx, ws.StateDir, os.Getenv(tokenEnv), command)
		if err != nil {
			ws.Close()
			return nil, err
		}
		if c != nil {
			root := ws.Root
			ws.Close()
			return &boardOps{Ops: c, root: root, remote: true}, nil
		}
	}
	f, err := openFleet(ctx, d, ws, create)
	if err != nil || f == nil {
		ws.Close()
		return nil, err
	}
	return &boardOps{Ops: f, root: ws.Root}, nil
}

// openTaskOps opens the operations for a command about task id: the id
// is checked first, and a repository without a board says how one
// begins.
func openTaskOps(ctx context.Context, d *deps, repoFlag, id, command string) (*boardOps, error) {
	if err := fleet.CheckID(id); err != nil {
		return nil, usageError{err: err}
	}
	b, err := openOps(ctx, d, repoFlag, false, command)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, fmt.Errorf("task %s: %w: the repository has no board yet (add a task with 'cra task add')", id, fleet.ErrNotFound)
	}
	return b, nil
}

// inputError makes an error about the request's own input a usage
// error, whether the board refused a field in process or the daemon did.
func inputError(err error) error {
	var fe *fleet.FieldError
	var ae *server.APIError
	if errors.As(err, &fe) || errors.As(err, &ae) && ae.Invalid() {
		return usageError{err: err}
	}
	return err
}

// taskJSON is a task as JSON output: every field and its folder.
type taskJSON = fleet.TaskView
