package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/fleet"
)

// A person steers a task and finishes its work: 'cra task stop', 'close',
// 'reopen', 'merge' and 'pr'. Each goes through a running daemon when
// there is one, as the other task commands do.

// taskSteerOptions are the inputs of the steering commands.
type taskSteerOptions struct {
	taskCommon
	id     string
	why    string
	into   string
	squash bool
	force  bool
	remote string
	base   string
}

// steerCommand describes one steering command.
type steerCommand struct {
	use, short, long, example string
	flags                     func(cmd *cobra.Command, o *taskSteerOptions)
	run                       func(ctx context.Context, d *deps, ops fleet.Ops, o *taskSteerOptions) error
}

func newSteerCmd(d *deps, c steerCommand) *cobra.Command {
	opts := &taskSteerOptions{}
	name, _, _ := strings.Cut(c.use, " ")
	cmd := &cobra.Command{
		Use: c.use, Short: c.short, Long: c.long, Example: c.example,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.id = args[0]
			if err := fleet.CheckID(opts.id); err != nil {
				return usageError{err: err}
			}
			ops, err := openTaskOps(cmd.Context(), d, opts.repo, opts.id, "cra task "+name)
			if err != nil {
				return err
			}
			defer ops.Close()
			return c.run(cmd.Context(), d, ops, opts)
		},
	}
	addTaskCommon(cmd, &opts.taskCommon)
	if c.flags != nil {
		c.flags(cmd, opts)
	}
	return cmd
}

func whyFlag(cmd *cobra.Command, o *taskSteerOptions) {
	cmd.Flags().StringVar(&o.why, "why", "", "the reason, kept in the world log")
}

func newTaskStopCmd(d *deps) *cobra.Command {
	return newSteerCmd(d, steerCommand{
		use:   "stop <id>",
		short: "Stop a task's running run; no failure is counted",
		long: `Stop the run a task has going, as a person. The world log first:
[event:user][ID] stopped run N: WHY, then [agent:retry][ID] stopped by a
person: WHY; the file goes to pending with processor_auto_requeue false,
so the processor leaves it there. Then the run's process group ends
(SIGTERM, SIGKILL after a grace). No failure is counted.

Run it again with 'cra task run ID', or give it back to the processor
with 'cra task reopen ID'.`,
		example: `  cra task stop t-1a2b3c4d --why "wrong approach: see the design note"`,
		flags:   whyFlag,
		run: func(ctx context.Context, d *deps, ops fleet.Ops, o *taskSteerOptions) error {
			s, err := ops.Stop(ctx, o.id, o.why)
			if err != nil {
				return err
			}
			if o.json {
				return encodeJSON(d.out, s)
			}
			how := "its process group ended"
			if !s.Killed {
				how = "its process was gone already"
			}
			_, err = fmt.Fprintf(d.out, "stopped %s run %d (%s): held in pending; run it with 'cra task run %s' or give it back to the processor with 'cra task reopen %s'\n",
				o.id, s.Run, how, o.id, o.id)
			return err
		},
	})
}

func newTaskCloseCmd(d *deps) *cobra.Command {
	return newSteerCmd(d, steerCommand{
		use:   "close <id>",
		short: "Close a task as won't-do: it leaves \"needs you\" and never runs again",
		long: `Close a task as won't-do, as a person. The world log first:
[event:user][ID] closed: WHY, then [agent:failed][ID] closed: WHY; the
file goes to failed-blocked with processor_auto_requeue false. A closed
task is not listed as needing you, takes no answer and never runs again
until 'cra task reopen ID'. A running task is stopped first (cra task
stop); a verified one has nothing to close.`,
		example: `  cra task close t-1a2b3c4d --why "superseded by t-9f8e7d6c"`,
		flags:   whyFlag,
		run: func(ctx context.Context, d *deps, ops fleet.Ops, o *taskSteerOptions) error {
			t, err := ops.CloseTask(ctx, o.id, o.why)
			if err != nil {
				return err
			}
			if o.json {
				return encodeJSON(d.out, fleet.TaskView{Task: t, Folder: fleet.FailedBlocked})
			}
			_, err = fmt.Fprintf(d.out, "closed %s: in failed-blocked; reopen it with 'cra task reopen %s'\n", o.id, o.id)
			return err
		},
	})
}

func newTaskReopenCmd(d *deps) *cobra.Command {
	return newSteerCmd(d, steerCommand{
		use:   "reopen <id>",
		short: "Reopen a closed or stopped task",
		long: `Undo a close or a stop. A closed task goes back to pending as a
person's move does ([event:user], [agent:retry], the streaks afresh); a
stopped task, held in pending, is given back to the processor
(processor_auto_requeue true).`,
		example: `  cra task reopen t-1a2b3c4d`,
		run: func(ctx context.Context, d *deps, ops fleet.Ops, o *taskSteerOptions) error {
			t, err := ops.Reopen(ctx, o.id)
			if err != nil {
				return err
			}
			if o.json {
				return encodeJSON(d.out, fleet.TaskView{Task: t, Folder: fleet.Pending})
			}
			_, err = fmt.Fprintf(d.out, "reopened %s: in pending, the processor may run it\n", o.id)
			return err
		},
	})
}

func newTaskMergeCmd(d *deps) *cobra.Command {
	return newSteerCmd(d, steerCommand{
		use:   "merge <id>",
		short: "Merge a verified task's branch cra/ID",
		long: `Merge a task's branch cra/ID into a branch: the one the repository has
checked out, or --into BRANCH. The merge is made whole before anything
moves (git merge-tree, git commit-tree), so a conflict changes nothing and
names the files. A checked-out branch moves by a fast-forward to the
merge, which needs its work tree free of uncommitted changes to tracked
files; another branch moves only if no one moved it meanwhile. --squash
makes one commit of the branch's changes.

Only a verified task (completed-finalized) merges, unless --force. The
merge is logged ([event:user][ID] merged …) and kept in the task file
(merged).`,
		example: `  cra task merge t-1a2b3c4d
  cra task merge t-1a2b3c4d --into release --squash`,
		flags: func(cmd *cobra.Command, o *taskSteerOptions) {
			cmd.Flags().StringVar(&o.into, "into", "", "the branch to merge into (default: the branch checked out)")
			cmd.Flags().BoolVar(&o.squash, "squash", false, "one commit of the branch's changes, not a merge commit")
			cmd.Flags().BoolVar(&o.force, "force", false, "merge a task that is not verified, or merge again")
		},
		run: func(ctx context.Context, d *deps, ops fleet.Ops, o *taskSteerOptions) error {
			t, err := ops.Merge(ctx, o.id, fleet.MergeOptions{Into: o.into, Squash: o.squash, Force: o.force})
			if err != nil {
				return err
			}
			if o.json {
				return encodeJSON(d.out, t)
			}
			how := "merge commit"
			if t.Merged.Squash {
				how = "squashed"
			}
			_, err = fmt.Fprintf(d.out, "merged %s%s into %s at %.12s (%s)\n", fleet.BranchPrefix, o.id, t.Merged.Into, t.Merged.Commit, how)
			return err
		},
	})
}

func newTaskPRCmd(d *deps) *cobra.Command {
	return newSteerCmd(d, steerCommand{
		use:   "pr <id>",
		short: "Push a task's branch and open a pull request",
		long: `Push a task's branch cra/ID to a remote (--remote, default origin or
the only remote) and open a pull request into --base (default: the branch
checked out) with gh, when gh is installed and signed in. Without gh, the
branch is still pushed and the exact command to open the pull request is
printed.`,
		example: `  cra task pr t-1a2b3c4d
  cra task pr t-1a2b3c4d --remote upstream --base main`,
		flags: func(cmd *cobra.Command, o *taskSteerOptions) {
			cmd.Flags().StringVar(&o.remote, "remote", "", "the remote to push to (default: origin, or the only remote)")
			cmd.Flags().StringVar(&o.base, "base", "", "the pull request's base branch (default: the branch checked out)")
		},
		run: func(ctx context.Context, d *deps, ops fleet.Ops, o *taskSteerOptions) error {
			pr, err := ops.PR(ctx, o.id, fleet.PROptions{Remote: o.remote, Base: o.base})
			if err != nil {
				return err
			}
			if o.json {
				return encodeJSON(d.out, pr)
			}
			fmt.Fprintf(d.out, "pushed %s to %s\n", pr.Branch, pr.Remote)
			if pr.URL != "" || len(pr.Commands) == 0 {
				_, err = fmt.Fprintf(d.out, "opened a pull request into %s: %s\n", pr.Base, pr.URL)
				return err
			}
			fmt.Fprintf(d.out, "no pull request opened: %s; open it with:\n", pr.Why)
			for _, c := range pr.Commands {
				fmt.Fprintf(d.out, "  %s\n", c)
			}
			return nil
		},
	})
}
