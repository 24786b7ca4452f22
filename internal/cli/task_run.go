package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/fleet"
)

// taskRunOptions are the inputs of 'cra task run'.
type taskRunOptions struct {
	taskCommon
	id     string
	dryRun bool
}

func newTaskRunCmd(d *deps, runF func(context.Context, *deps, *taskRunOptions) error) *cobra.Command {
	opts := &taskRunOptions{}
	cmd := &cobra.Command{
		Use:   "run <id>",
		Short: "Run one task now, in the foreground, as the processor would",
		Long: `Run a task once, now, through the same code as the board's processor
(seed 004, "Execution Processor"): [agent:active][ID] run N: PROFILE is
logged and the file moves to in-progress; the task's agent profile runs in
its worktree (.clean_room/worktrees/ID, branch cra/ID, made from HEAD on
the first run and kept across runs), under the profile's timeout, with
CRA_TASK_ID and CRA_RUN_ID in its environment; then [agent:finish][ID] is
logged and the file moves:

  exit 0                        [agent:finish] exit 0: LAST LINE        completed
  exit N, killed, timed out     [agent:finish] run failed: …            failed

The profile is the task's agent, else [board] default_agent, else the
built-in "cra" (cra's own solve). Any other profile is an [agents.NAME]
command in .clean_room/config.toml, run by sh -c with {prompt_file},
{task_id}, {worktree} and {branch} filled in. The prompt file
(.clean_room/runs/ID/prompt-N.md) holds the title, description, need,
latest note, a retry's guidance or a person's answer, and the project
knowledge; the output goes to .clean_room/runs/ID/run-N.log (the first
and the last MiB kept).

A task in pending runs as it is; one in completed or failed is first
moved back to pending as a person's move (an [event:user] and an
[agent:retry]). A task in progress or in a terminal folder is refused.
The run is not requeued afterwards: that is the recycler's job.

The exit status is 0 when the run completed and 1 when it failed.

--dry-run prints the command the run would start, with the variables a
preset sets and its key masked, and starts nothing.`,
		Example: `  cra task run t-1a2b3c4d
  cra task run t-1a2b3c4d --dry-run
  cra task run t-1a2b3c4d --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.id = args[0]
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return taskRunRun(cmd.Context(), d, opts)
		},
	}
	addTaskCommon(cmd, &opts.taskCommon)
	cmd.Flags().BoolVar(&opts.dryRun, "dry-run", false, "print the command the run would start (secrets masked) and start nothing")
	return cmd
}

// taskDryRun prints the command the task's next run would start. It reads
// the board in process: nothing changes.
func taskDryRun(ctx context.Context, d *deps, opts *taskRunOptions) error {
	if err := fleet.CheckID(opts.id); err != nil {
		return usageError{err: err}
	}
	tb, err := openBoard(ctx, d, opts.repo, false)
	if err != nil {
		return err
	}
	if tb == nil {
		return fmt.Errorf("task %s: %w: the repository has no board yet (add a task with 'cra task add')", opts.id, fleet.ErrNotFound)
	}
	defer tb.Close()
	line, err := tb.fleet.DryRun(ctx, opts.id)
	if err != nil {
		return inputError(err)
	}
	if opts.json {
		return encodeJSON(d.out, struct {
			ID      string `json:"id"`
			Command string `json:"command"`
		}{opts.id, line})
	}
	_, err = fmt.Fprintln(d.out, line)
	return err
}

// taskRunJSON is the --json output: the outcome with paths relative to
// the repository.
type taskRunJSON struct {
	*fleet.Outcome
	DurationMS int64 `json:"duration_ms"`
}

func taskRunRun(ctx context.Context, d *deps, opts *taskRunOptions) error {
	if opts.dryRun {
		return taskDryRun(ctx, d, opts)
	}
	b, err := openTaskOps(ctx, d, opts.repo, opts.id, "cra task run")
	if err != nil {
		return err
	}
	defer b.Close()
	o, err := b.RunOne(ctx, opts.id)
	if err != nil {
		return err
	}
	if opts.json {
		if err := encodeJSON(d.out, taskRunJSON{Outcome: o, DurationMS: o.Duration.Milliseconds()}); err != nil {
			return err
		}
	} else {
		exit := "no exit status"
		if o.ExitCode != nil {
			exit = fmt.Sprintf("exit %d", *o.ExitCode)
		}
		fmt.Fprintf(d.out, "task %s run %d (%s): %s, %s after %s\n", o.ID, o.Run, o.Profile, o.Folder, exit, o.Duration.Round(time.Millisecond))
		fmt.Fprintf(d.out, "finish: %s\n", o.Finish)
		if o.Need != "" {
			fmt.Fprintf(d.out, "need: %s\n", o.Need)
		}
		if o.LogPath != "" {
			fmt.Fprintf(d.out, "log: %s\n", relPath(b.root, o.LogPath))
		}
		if o.Branch != "" {
			fmt.Fprintf(d.out, "branch: %s\n", o.Branch)
		}
	}
	if !o.Completed() {
		return silentError{code: exitFailure}
	}
	return nil
}
