package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/agent"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/retrieve"
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
	taskID             string // tests set it; a new UUID otherwise
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
failure and its evidence until they pass or --max-attempts calls were made
(seed 001 §8.2, §17). A reply naming the context it lacks re-runs
retrieval, at most --max-refinement-loops times (§13).

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
	f.StringVar(&opts.stages, "stages", "", "retrieval stages in order, comma-separated: "+strings.Join(retrieve.StageNames(), ", "))
	f.StringVar(&opts.plan, "plan", "", "follow this plan (Markdown or JSON from 'cra plan'); its files are retrieval's tier-0 seeds")
	f.IntVar(&attempts, "max-attempts", 0, "model calls before giving up")
	f.IntVar(&loops, "max-refinement-loops", 0, "times a reply naming missing context may re-run retrieval")
	f.StringVar(&opts.keepWorktree, "keep-worktree", "", "when the worktree stays after the run: always, on_failure or never (default [solve] keep_worktree, else on_failure)")
	f.BoolVar(&opts.apply, "apply", false, "apply the final diff to your work tree when it applies cleanly")
	f.BoolVar(&opts.deterministic, "deterministic-retrieval", false, "retrieve without the reasoning model's judgments (the edits still come from the coding model)")
	f.BoolVar(&opts.json, "json", false, "print the run as JSON: attempts, validation, diff, branch")
	finishBudget = addBudgetFlags(cmd, &opts.budget)
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
		return 0, 0, usageError{err: errors.New("missing --max-attempts: pass --max-attempts N, or store it with 'cra init --max-attempts N'")}
	}
	switch {
	case opts.maxRefinementLoops != nil:
		loops = *opts.maxRefinementLoops
	case s.MaxRefinementLoops != nil:
		loops = *s.MaxRefinementLoops
	default:
		return 0, 0, usageError{err: errors.New("missing --max-refinement-loops: pass --max-refinement-loops N, or store it with 'cra init --max-refinement-loops N'")}
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

// newValidator reads [validation]; without it nothing is validated.
func newValidator(cfg *config.Config) *agent.Validator {
	v := &agent.Validator{}
	if cfg == nil || cfg.Validation == nil {
		return v
	}
	c := cfg.Validation
	v.Test, v.Lint, v.Typecheck = c.Test, c.Lint, c.Typecheck
	if c.Timeout != "" {
		v.Timeout, _ = time.ParseDuration(c.Timeout) // checked by config.Validate
	}
	return v
}

// solveReport is the --json output.
type solveReport struct {
	TaskID string `json:"task_id"`
	*agent.TaskResult
	Worktree agent.Outcome `json:"worktree"`
	Plan     string        `json:"plan,omitempty"`
	Applied  bool          `json:"applied"`
}

func solveRun(ctx context.Context, d *deps, opts *solveOptions) error {
	var plan *agent.Plan
	if opts.plan != "" {
		var err error
		if plan, err = agent.LoadPlan(opts.plan); err != nil {
			return err
		}
	}
	task := opts.task
	if strings.TrimSpace(task) == "" && plan != nil {
		task = plan.Task
	}
	if strings.TrimSpace(task) == "" {
		return usageError{err: errors.New("no task: pass the task, or --plan FILE with a plan of one")}
	}
	r, err := openExec(ctx, d, "solve", opts.repo, opts.stages, opts.budget, opts.taskID)
	if err != nil {
		return err
	}
	defer r.close()
	attempts, loops, err := resolveSolveBounds(opts, r.cfg)
	if err != nil {
		return err
	}
	keep, err := resolveKeep(opts.keepWorktree, r.cfg)
	if err != nil {
		return err
	}
	if err := r.openStores(ctx, true); err != nil {
		return err
	}
	validator := newValidator(r.cfg)
	if !validator.Configured() {
		fmt.Fprintln(d.errOut, "warning: no [validation] test, lint or typecheck command in config: the edits will not be validated")
	}
	model := "none"
	if r.cfg.Models != nil {
		model = r.cfg.Models.Coding
	}
	// The model client and the reply's budget are checked before anything
	// is logged or a worktree is made: a usage error leaves nothing behind.
	c, m, reply, err := r.client(ctx, llm.CallInfo{Type: "solve", Role: llm.RoleCoding, Stage: "execute_code"})
	if err != nil {
		return err
	}
	if err := r.begin(ctx, task); err != nil {
		return err
	}
	if r.runLog, err = agent.StartRun(ctx, corpus.New(r.raw), agent.TaskRun{TaskID: r.taskID, Repo: r.repo, Mode: agent.ModeImplement, ExecuteModel: model,
		Budget: r.budget, Stages: r.stageList, PlanArtifact: opts.plan}); err != nil {
		return r.fail(ctx, err, "")
	}
	wt, err := agent.NewWorktree(ctx, r.repo, r.stateDir, r.taskID)
	if err != nil {
		return r.fail(ctx, err, "make a git worktree possible (see the error), then run again")
	}
	for _, n := range wt.Notes {
		fmt.Fprintf(d.errOut, "note: %s\n", n)
	}
	// From here a run that stops commits what it edited and handles its
	// worktree as configured.
	stopped := func(err error) error {
		o, ferr := wt.Finish(context.WithoutCancel(ctx), false, keep, fmt.Sprintf("cra solve %s (stopped): %s\n\n%v\n", r.taskID, agent.FirstLine(task, 40), err))
		if ferr != nil {
			err = errors.Join(err, ferr)
		}
		need := "fix the cause and run again"
		if o.Kept {
			need += fmt.Sprintf("; worktree %s on branch %s", relPath(r.repo, o.Path), o.Branch)
		}
		return r.fail(ctx, err, need)
	}
	var planFiles []string
	if plan != nil {
		planFiles = plan.Files()
	}
	if opts.deterministic {
		fmt.Fprintln(d.errOut, deterministicRetrieval)
	}
	p, res, err := r.retrieve(ctx, task, wt.Root, r.stages, planFiles, opts.deterministic)
	if err != nil {
		return stopped(err)
	}
	if plan != nil {
		if err := r.session.Set(ctx, "plan_artifact", plan); err != nil {
			return stopped(err)
		}
	}
	knowledge, err := r.knowledge(task)
	if err != nil {
		return stopped(err)
	}
	fmt.Fprintf(d.errOut, "task %s: %d files of context (%d tokens); %s in %s on branch %s\n",
		r.taskID, len(res.Package.Files), res.Package.Tokens, m.Model, relPath(r.repo, wt.Root), wt.Git.Branch)
	solver := &agent.Solver{
		Model: c, Worktree: wt, Validator: validator, Session: r.session, Log: r.runLog, Budget: r.budget,
		ReplyTokens: reply, MaxAttempts: attempts, MaxRefinementLoops: loops, Progress: d.errOut,
		// The solver writes the refinement_request to the session first;
		// retrieval reads it there (seed 001 §13).
		Refine: func(ctx context.Context) (*retrieve.Package, error) {
			res, err := p.Refine(ctx, r.taskID, r.stages, r.budget)
			if err != nil {
				return nil, err
			}
			return res.Package, nil
		},
	}
	result, err := solver.Solve(ctx, agent.Input{Task: task, Plan: plan, Package: res.Package, Knowledge: knowledge})
	if err != nil {
		return stopped(err)
	}

	// The edits are committed on the branch, the worktree kept or removed,
	// the session archived and removed (seed 001 §11.1), the run
	// finalised, then its end logged.
	var errs []error
	message := fmt.Sprintf("cra solve %s: %s\n\n%s\n", r.taskID, agent.FirstLine(task, 60), strings.TrimSpace(task))
	if !result.Success {
		message = fmt.Sprintf("cra solve %s (not solved: %s): %s\n\n%s\n", r.taskID, result.Class, agent.FirstLine(task, 40), strings.TrimSpace(task))
	}
	outcome, err := wt.Finish(ctx, result.Success, keep, message)
	if err != nil {
		errs = append(errs, err)
	}
	if err := r.session.Archive(ctx, r.factory, corpus.New(r.raw), r.taskID); err != nil {
		errs = append(errs, err)
	}
	r.session = nil
	tokens := r.judgeTokens()
	for _, a := range result.Attempts {
		tokens += a.PromptTokens + a.CompletionTokens
	}
	if err := r.runLog.Finish(ctx, agent.RunOutcome{Success: result.Success, Tokens: tokens, Latency: time.Since(r.started), FinalDiff: result.Diff}); err != nil {
		errs = append(errs, err)
	}
	summary, need := solveSummary(r, result, outcome)
	if len(errs) > 0 {
		need = "the run could not be recorded or cleaned up (" + agent.FirstLine(errors.Join(errs...).Error(), 200) + "): fix that and run again"
	}
	if err := r.end(ctx, result.Success && len(errs) == 0, summary, need); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}

	applied := false
	var applyErr error
	if opts.apply && result.Success && result.Diff != "" {
		if applyErr = wt.ApplyToUser(ctx, result.Diff); applyErr == nil {
			applied = true
		}
	}
	if opts.json {
		enc := json.NewEncoder(d.out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(solveReport{TaskID: r.taskID, TaskResult: result, Worktree: outcome, Plan: opts.plan, Applied: applied}); err != nil {
			return err
		}
	} else if result.Diff != "" && result.Success {
		fmt.Fprint(d.out, result.Diff)
	}
	fmt.Fprintln(d.errOut, summary)
	if !result.Success {
		return fmt.Errorf("not solved: %s", need)
	}
	if applyErr != nil {
		return applyErr
	}
	switch {
	case applied:
		fmt.Fprintf(d.errOut, "applied to your work tree: %d file(s) changed\n", len(result.Files))
	case result.Diff != "":
		fmt.Fprintf(d.errOut, "review: git diff %.12s %s · apply: git merge %s\n", wt.Git.Base, outcome.Branch, outcome.Branch)
	}
	return nil
}

// solveSummary is the world log's summary of a run, and for a failed run
// what a person must do.
func solveSummary(r *execRun, res *agent.TaskResult, o agent.Outcome) (string, string) {
	n := len(res.Attempts)
	refined := ""
	if res.Refinements > 0 {
		refined = fmt.Sprintf(", %d refinement(s)", res.Refinements)
	}
	where := "branch " + o.Branch
	if o.Kept {
		where += ", worktree " + relPath(r.repo, o.Path)
	}
	if res.Success {
		checked := "validated"
		if !res.Validated {
			checked = "not validated"
		}
		if len(res.Files) == 0 {
			return fmt.Sprintf("solved in %d attempt(s)%s, %s: nothing needed changing", n, refined, checked), ""
		}
		return fmt.Sprintf("solved in %d attempt(s)%s, %s: %d file(s) changed on %s", n, refined, checked, len(res.Files), where), ""
	}
	summary := fmt.Sprintf("not solved after %d attempt(s)%s: %s", n, refined, res.Class)
	need := fmt.Sprintf("review the last attempt (%s: %s) on %s, then fix it by hand or run again with more attempts or a plan",
		res.Class, agent.FirstLine(res.Evidence, 160), where)
	if len(res.Files) == 0 {
		need = fmt.Sprintf("no edit applied (%s: %s); rephrase the task, add a plan, or check the model", res.Class, agent.FirstLine(res.Evidence, 160))
	}
	return summary, need
}
