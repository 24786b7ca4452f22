package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/fleet"
	"github.com/cra-dev/cra/internal/run"
)

type solveOptions struct {
	task               string
	repo               string
	stages             string
	budget             budgetFlags
	plan               string
	maxAttempts        *int
	maxRefinementLoops *int
	keepWorktree       string
	apply              bool
	deterministic      bool // retrieval only
	json               bool
	taskID             string // --task-id (hidden); a new UUID otherwise
	taskFile           string // --task-file (hidden): the task's text
	board              bool   // --board (hidden): a board run, see newSolveCmd
	worktree           string // --worktree (hidden): the board task's worktree
}

func newSolveCmd(d *deps, runF func(context.Context, *deps, *solveOptions) error) *cobra.Command {
	opts := &solveOptions{}
	var finishBudget func()
	var attempts, loops int
	cmd := &cobra.Command{
		Use:   "solve <task>",
		Short: "Make the change a task asks for, in a git worktree, validated and retried",
		Long: `Retrieve the context of the task, ask the coding model for SEARCH/REPLACE
edit blocks, apply them in a git worktree on a new branch cra/<task_id>
(under .clean_room/worktrees/; your work tree is never touched), run the
[validation] test, lint and typecheck commands there, and retry with the
failure and its evidence until they pass or --max-attempts calls were
made. A reply naming the context it lacks re-runs retrieval, at most
--max-refinement-loops times.

The final diff is printed on stdout and stays committed on the branch for
review; --apply also applies it to your work tree, only if it applies
cleanly. With --plan FILE (from 'cra plan'), the plan's files lead
retrieval and the model follows its steps; the task may then be omitted.

[solve] keep_worktree says when the worktree stays after the run:
on_failure (the default: to inspect a failed run), always or never.

Budget, stages, attempts and refinement loops: flag, else config, else an
error naming the flag.`,
		Example: `  cra solve "TestAdd fails: Add subtracts" --max-attempts 3 --max-refinement-loops 1
  cra solve --plan .clean_room/plans/<task_id>.md --apply
  cra solve "$(cat issue.md)" --json > run.json`,
		Args: cobra.RangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.task = args[0]
			}
			finishBudget()
			f := cmd.Flags()
			if f.Changed("max-attempts") {
				opts.maxAttempts = &attempts
			}
			if f.Changed("max-refinement-loops") {
				opts.maxRefinementLoops = &loops
			}
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return solveRun(cmd.Context(), d, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.repo, "repo", ".", "repository root")
	f.StringVar(&opts.stages, "stages", "", "retrieval stages in order, comma-separated: "+strings.Join(run.StageNames(), ", "))
	f.StringVar(&opts.plan, "plan", "", "follow this plan (Markdown or JSON from 'cra plan'); its files are retrieval's tier-0 seeds")
	f.IntVar(&attempts, "max-attempts", 0, "model calls before giving up")
	f.IntVar(&loops, "max-refinement-loops", 0, "times a reply naming missing context may re-run retrieval")
	f.StringVar(&opts.keepWorktree, "keep-worktree", "", "when the worktree stays after the run: always, on_failure or never (default [solve] keep_worktree, else on_failure)")
	f.BoolVar(&opts.apply, "apply", false, "apply the final diff to your work tree when it applies cleanly")
	f.BoolVar(&opts.deterministic, "deterministic-retrieval", false, "retrieve without the reasoning model's judgments (the edits still come from the coding model)")
	f.BoolVar(&opts.json, "json", false, "print the run as JSON: attempts, validation, diff, branch")
	finishBudget = addBudgetFlags(cmd, &opts.budget)
	// The board's processor runs the built-in profile as 'cra solve
	// --board --task-id <id>.r<N> --worktree <task worktree> --task-file
	// <file>' (issue 13 item 4): the processor writes the lifecycle
	// entries under the board task's id, so the run writes none
	// (run.Spec.ExternalLifecycle) and leaves its result open for the
	// recycler (LeaveOpen); it builds on the task's worktree and branch.
	f.StringVar(&opts.taskID, "task-id", "", "the run's task id instead of a new UUID")
	f.StringVar(&opts.taskFile, "task-file", "", "read the task from this file")
	f.BoolVar(&opts.board, "board", false, "a run of the board's processor: no lifecycle entries, left open for the recycler")
	f.StringVar(&opts.worktree, "worktree", "", "build on this existing worktree and its branch")
	for _, name := range []string{"task-id", "task-file", "board", "worktree"} {
		f.MarkHidden(name)
	}
	return cmd
}

// resolveSolveBounds applies flag > config > hard error to the bounds of
// the retry loop (seed 001 §9.3, §10.2).
func resolveSolveBounds(opts *solveOptions, cfg *config.Config) (attempts, loops int, err error) {
	var s config.Solve
	if cfg != nil && cfg.Solve != nil {
		s = *cfg.Solve
	}
	switch {
	case opts.maxAttempts != nil:
		attempts = *opts.maxAttempts
	case s.MaxAttempts != nil:
		attempts = *s.MaxAttempts
	default:
		err = &missingValue{name: "--max-attempts", init: "--max-attempts N",
			msg: "missing --max-attempts: pass --max-attempts N, or store it with 'cra init --max-attempts N'"}
	}
	switch {
	case opts.maxRefinementLoops != nil:
		loops = *opts.maxRefinementLoops
	case s.MaxRefinementLoops != nil:
		loops = *s.MaxRefinementLoops
	default:
		err = errors.Join(err, &missingValue{name: "--max-refinement-loops", init: "--max-refinement-loops N",
			msg: "missing --max-refinement-loops: pass --max-refinement-loops N, or store it with 'cra init --max-refinement-loops N'"})
	}
	if err != nil {
		return 0, 0, gather([]error{err})
	}
	if attempts < 1 {
		return 0, 0, usageError{err: fmt.Errorf("--max-attempts must be >= 1, got %d", attempts)}
	}
	if loops < 0 {
		return 0, 0, usageError{err: fmt.Errorf("--max-refinement-loops must be >= 0, got %d", loops)}
	}
	return attempts, loops, nil
}

// resolveKeep applies flag > config > on_failure to the worktree policy.
func resolveKeep(flag string, cfg *config.Config) (string, error) {
	switch {
	case flag != "":
		switch flag {
		case config.KeepAlways, config.KeepOnFailure, config.KeepNever:
			return flag, nil
		}
		return "", usageError{err: fmt.Errorf("--keep-worktree %q: use always, on_failure or never", flag)}
	case cfg != nil && cfg.Solve != nil && cfg.Solve.KeepWorktree != "":
		return cfg.Solve.KeepWorktree, nil
	}
	return config.KeepOnFailure, nil
}

// solveReport is the --json output.
type solveReport struct {
	TaskID string `json:"task_id"`
	*run.TaskResult
	Worktree run.WorktreeOutcome `json:"worktree"`
	Plan     string              `json:"plan,omitempty"`
	Applied  bool                `json:"applied"`
}

func solveRun(ctx context.Context, d *deps, opts *solveOptions) error {
	spec := run.SolveSpec{PlanFile: opts.plan, Apply: opts.apply}
	if opts.plan != "" {
		var err error
		if spec.Plan, err = run.LoadPlan(opts.plan); err != nil {
			return err
		}
	}
	task := opts.task
	if opts.taskFile != "" {
		if task != "" {
			return usageError{err: errors.New("pass the task or --task-file, not both")}
		}
		data, err := os.ReadFile(opts.taskFile)
		if err != nil {
			return fmt.Errorf("read the task: %w", err)
		}
		task = string(data)
	}
	if opts.taskID != "" {
		if err := fleet.CheckID(opts.taskID); err != nil {
			return usageError{err: fmt.Errorf("--task-id: %w", err)}
		}
	}
	if opts.worktree != "" && !opts.board {
		return usageError{err: errors.New("--worktree is for board runs: pass --board too")}
	}
	spec.Worktree = opts.worktree
	if strings.TrimSpace(task) == "" && spec.Plan != nil {
		task = spec.Plan.Task
	}
	if strings.TrimSpace(task) == "" {
		return usageError{err: errors.New("no task: pass the task, or --plan FILE with a plan of one")}
	}
	ws, rs, err := openRun(ctx, d, run.ModeSolve, opts.repo, opts.stages, opts.budget, opts.taskID, true, func(cfg *config.Config) (err error) {
		if spec.MaxAttempts, spec.MaxRefinementLoops, err = resolveSolveBounds(opts, cfg); err != nil {
			return err
		}
		spec.Keep, err = resolveKeep(opts.keepWorktree, cfg)
		return err
	})
	if err != nil {
		return err
	}
	defer ws.Close()
	spec.Spec, spec.Task, spec.Deterministic = rs, task, opts.deterministic
	spec.LeaveOpen, spec.ExternalLifecycle = opts.board, opts.board
	res, err := run.Solve(ctx, ws, spec)
	if err != nil {
		return runError(err)
	}
	if opts.json {
		if err := encodeJSON(d.out, solveReport{TaskID: res.TaskID, TaskResult: res.TaskResult, Worktree: res.Worktree, Plan: opts.plan, Applied: res.Applied}); err != nil {
			return err
		}
	} else if res.Diff != "" && res.Success {
		fmt.Fprint(d.out, res.Diff)
	}
	fmt.Fprintln(d.errOut, res.Summary)
	switch {
	case !res.Success:
		return fmt.Errorf("not solved: %s", res.Need)
	case res.ApplyErr != nil:
		return res.ApplyErr
	case res.Applied:
		fmt.Fprintf(d.errOut, "applied to your work tree: %d file(s) changed\n", len(res.Files))
	case res.Diff != "" && !opts.board: // a board run's last line is its summary, for its finish entry
		fmt.Fprintf(d.errOut, "review: git diff %.12s %s · apply: git merge %s\n", res.Base, res.Worktree.Branch, res.Worktree.Branch)
	}
	return nil
}
