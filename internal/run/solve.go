package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/agent"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/retrieve"
	"github.com/cra-dev/cra/internal/sandbox"
	"github.com/cra-dev/cra/internal/validation"
	"github.com/cra-dev/cra/internal/workspace"
)

// SolveSpec is what a solve run takes besides the Spec.
type SolveSpec struct {
	Spec
	// Plan is the plan to follow, or nil; its files lead retrieval.
	Plan *agent.Plan
	// PlanFile is where Plan came from, recorded with the run.
	PlanFile string
	// MaxAttempts (>= 1) and MaxRefinementLoops (>= 0) bound the retry
	// loop (seed 001 §9.3).
	MaxAttempts, MaxRefinementLoops int
	// Keep says when the worktree stays: config.KeepAlways,
	// config.KeepOnFailure or config.KeepNever.
	Keep string
	// Apply applies a validated diff to the user's work tree when it
	// applies cleanly.
	Apply bool
	// Worktree, when set, is an existing worktree (the directory that
	// matches the repository root in it) whose branch the run builds on:
	// a board task keeps one worktree and branch, cra/<board id>, across
	// its runs (issue 13 item 4). The run edits in a worktree of its own,
	// branched from that one's HEAD as cra/<TaskID>, and at its end
	// fast-forwards Worktree's branch to what it committed and removes its
	// own worktree and branch, whatever Keep says: the edits live on in
	// Worktree.
	Worktree string
}

// Solved is a finished solve run: solved or not.
type Solved struct {
	TaskID string
	*agent.TaskResult
	Worktree agent.Outcome
	// Base is the commit the worktree started from.
	Base string
	// Summary is the world log's summary of the run; Need, for a run not
	// solved, what a person must do.
	Summary, Need string
	// Applied says the diff went into the user's work tree; ApplyErr why
	// it did not when Apply was asked.
	Applied  bool
	ApplyErr error
}

// Solve makes the change a task asks for in a git worktree on branch
// cra/<task_id>: retrieve, ask the coding model for edit blocks, apply,
// validate and retry (seed 001 §8.2, §9, §17). A run that ends — solved or
// not — returns Solved; an error means it stopped, and the world log says
// so. Its edits stay committed on the branch either way.
func Solve(ctx context.Context, ws *workspace.Workspace, spec SolveSpec) (*Solved, error) {
	if spec.MaxAttempts < 1 || spec.MaxRefinementLoops < 0 {
		return nil, &InputError{Err: fmt.Errorf("solve bounds: max attempts %d (>= 1), refinement loops %d (>= 0)", spec.MaxAttempts, spec.MaxRefinementLoops)}
	}
	l, err := open(ctx, ws, ModeSolve, spec.Spec, true)
	if err != nil {
		return nil, err
	}
	defer l.close()
	validator := validation.FromConfig(ws.Config)
	if !validator.Configured() {
		fmt.Fprintln(l.progress, "warning: no [validation] test, lint or typecheck command in config: the edits will not be validated")
	}
	// The model client and the reply's budget are checked before anything
	// is logged or a worktree is made: a usage error leaves nothing behind.
	c, m, reply, err := l.client(ctx, llm.CallInfo{Type: "solve", Role: llm.RoleCoding, Stage: "execute_code"})
	if err != nil {
		return nil, err
	}
	if err := l.begin(ctx); err != nil {
		return nil, err
	}
	model := l.model(func(m *config.Models) string { return m.Coding })
	if err := l.startRun(ctx, agent.ModeImplement, model, spec.PlanFile); err != nil {
		return nil, l.fail(ctx, err, "")
	}
	from := ws.Root
	if spec.Worktree != "" {
		from, spec.Keep = spec.Worktree, config.KeepNever
	}
	wt, err := agent.NewWorktree(ctx, from, ws.StateDir, l.taskID)
	if err != nil {
		return nil, l.fail(ctx, err, "make a git worktree possible (see the error), then run again")
	}
	for _, n := range wt.Notes {
		fmt.Fprintf(l.progress, "note: %s\n", n)
	}
	if validator.Configured() {
		done, err := confine(ws.Config, validator, wt.Git.Path, l.progress)
		if err != nil {
			return nil, l.fail(ctx, err, `run cra on Linux 5.13+ with Landlock, or set [board] sandbox = "off" in .clean_room/config.toml to run the validation commands unconfined`)
		}
		defer done()
	}
	solver := &agent.Solver{
		Model: c, Worktree: wt, Validator: validator, Log: l.runLog, Budget: spec.Budget,
		ReplyTokens: reply, MaxAttempts: spec.MaxAttempts, MaxRefinementLoops: spec.MaxRefinementLoops, Progress: l.progress,
	}
	result, err := l.solve(ctx, spec, wt, solver, m.Model)
	if err != nil {
		// A run that stops commits what it edited and handles its worktree
		// as configured.
		o, ferr := wt.Finish(context.WithoutCancel(ctx), false, spec.Keep, fmt.Sprintf("cra solve %s (stopped): %s\n\n%v\n", l.taskID, agent.FirstLine(spec.Task, 40), err))
		if ferr != nil {
			err = errors.Join(err, ferr)
		} else if herr := handOver(context.WithoutCancel(ctx), spec, &o); herr != nil {
			err = errors.Join(err, herr)
		}
		need := "fix the cause and run again"
		if o.Kept {
			need += fmt.Sprintf("; worktree %s on branch %s", RelPath(ws.Root, o.Path), o.Branch)
		}
		return nil, l.fail(ctx, err, need)
	}
	s, err := l.finishSolve(ctx, wt, spec, result)
	if err != nil {
		return nil, err
	}
	if spec.Apply && result.Success && result.Diff != "" {
		if s.ApplyErr = wt.ApplyToUser(ctx, result.Diff); s.ApplyErr == nil {
			s.Applied = true
		}
	}
	return s, nil
}

// solve retrieves the context and runs the solver's loop. Refinement
// re-enters retrieval through the session (seed 001 §13).
func (l *lifecycle) solve(ctx context.Context, spec SolveSpec, wt *agent.Worktree, solver *agent.Solver, model string) (*agent.TaskResult, error) {
	var planFiles []string
	if spec.Plan != nil {
		planFiles = spec.Plan.Files()
	}
	if spec.Deterministic {
		fmt.Fprintln(l.progress, DeterministicRetrieval)
	}
	p, res, err := l.retrieve(ctx, wt.Root, planFiles)
	if err != nil {
		return nil, err
	}
	if spec.Plan != nil {
		if err := l.session.Set(ctx, "plan_artifact", spec.Plan); err != nil {
			return nil, err
		}
	}
	knowledge, err := l.loadKnowledge()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(l.progress, "task %s: %d files of context (%d tokens); %s in %s on branch %s\n",
		l.taskID, len(res.Package.Files), res.Package.Tokens, model, RelPath(l.ws.Root, wt.Root), wt.Git.Branch)
	solver.Session = l.session
	// The solver writes the refinement_request to the session first;
	// retrieval reads it there (seed 001 §13).
	solver.Refine = func(ctx context.Context) (*retrieve.Package, error) {
		res, err := p.Refine(ctx, l.taskID, spec.Stages, spec.Budget)
		if err != nil {
			return nil, err
		}
		return res.Package, nil
	}
	return solver.Solve(ctx, agent.Input{Task: spec.Task, Plan: spec.Plan, Package: res.Package, Knowledge: knowledge})
}

// finishSolve commits the edits on the branch, keeps or removes the
// worktree, archives the session (seed 001 §11.1), finalises the run, then
// logs its end.
func (l *lifecycle) finishSolve(ctx context.Context, wt *agent.Worktree, spec SolveSpec, result *agent.TaskResult) (*Solved, error) {
	var errs []error
	task := spec.Task
	message := fmt.Sprintf("cra solve %s: %s\n\n%s\n", l.taskID, agent.FirstLine(task, 60), strings.TrimSpace(task))
	if !result.Success {
		message = fmt.Sprintf("cra solve %s (not solved: %s): %s\n\n%s\n", l.taskID, result.Class, agent.FirstLine(task, 40), strings.TrimSpace(task))
	}
	outcome, err := wt.Finish(ctx, result.Success, spec.Keep, message)
	if err != nil {
		errs = append(errs, err)
	} else if err := handOver(ctx, spec, &outcome); err != nil {
		errs = append(errs, err)
	}
	if err := l.archive(ctx); err != nil {
		errs = append(errs, err)
	}
	tokens := l.judgeTokens()
	for _, a := range result.Attempts {
		tokens += a.PromptTokens + a.CompletionTokens
	}
	if err := l.runLog.Finish(ctx, agent.RunOutcome{Success: result.Success, Tokens: tokens, Latency: time.Since(l.started), FinalDiff: result.Diff}); err != nil {
		errs = append(errs, err)
	}
	summary, need := solveSummary(l.ws.Root, result, outcome)
	if len(errs) > 0 {
		need = "the run could not be recorded or cleaned up (" + agent.FirstLine(errors.Join(errs...).Error(), 200) + "): fix that and run again"
	}
	if err := l.end(ctx, result.Success && len(errs) == 0, summary, need); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 && result.Success && result.Validated {
		if err := l.verify(ctx, fmt.Sprintf("validation passed (%s) on %s", validated(l.ws.Config), outcome.Branch)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Solved{TaskID: l.taskID, TaskResult: result, Worktree: outcome, Base: wt.Git.Base, Summary: summary, Need: need}, nil
}

// solveSummary is the world log's summary of a run, and for a failed run
// what a person must do.
func solveSummary(root string, res *agent.TaskResult, o agent.Outcome) (string, string) {
	n := len(res.Attempts)
	refined := ""
	if res.Refinements > 0 {
		refined = fmt.Sprintf(", %d refinement(s)", res.Refinements)
	}
	where := "branch " + o.Branch
	if o.Kept {
		where += ", worktree " + RelPath(root, o.Path)
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

// validated names the [validation] commands that ran.
func validated(cfg *config.Config) string {
	var cmds []string
	if cfg != nil && cfg.Validation != nil {
		for _, c := range []string{cfg.Validation.Test, cfg.Validation.Lint, cfg.Validation.Typecheck} {
			if c != "" {
				cmds = append(cmds, c)
			}
		}
	}
	return strings.Join(cmds, "; ")
}

// confine makes v's commands run sandboxed (DESIGN.md, "Trust": they run
// code the model wrote): they write only the worktree at dir, a temp
// directory of their own and [validation] caches, through cra itself as
// the launcher, and get none of the config's secrets. With [board]
// sandbox = "off" they run unconfined, and progress says so. done
// removes the temp directory.
func confine(cfg *config.Config, v *validation.Validator, dir string, progress io.Writer) (done func(), err error) {
	v.Unset = cfg.SecretEnv()
	if cfg.SandboxOff() {
		fmt.Fprintln(progress, `warning: [board] sandbox = "off": the validation commands run unconfined and could write anything this user can`)
		return func() {}, nil
	}
	if sandbox.ABI() == 0 {
		return nil, sandbox.ErrUnavailable
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("confine validation: %w", err)
	}
	write := []string{dir}
	if c := cfg.Validation; c != nil {
		for _, d := range c.Caches {
			x, err := config.ExpandCache(d)
			if err != nil {
				return nil, fmt.Errorf("validation.caches: %w", err)
			}
			if err := os.MkdirAll(x, 0o755); err != nil {
				return nil, fmt.Errorf("validation.caches: %w", err)
			}
			write = append(write, x)
		}
	}
	tmp, err := os.MkdirTemp("", "cra-validate-")
	if err != nil {
		return nil, fmt.Errorf("confine validation: %w", err)
	}
	write = append(write, tmp)
	v.Env = append(v.Env, "TMPDIR="+tmp)
	v.Confine = func(cmd *exec.Cmd) error { return sandbox.Wrap(cmd, exe, sandbox.Spec{Write: write}) }
	return func() { os.RemoveAll(tmp) }, nil
}

// handOver moves a run's commit onto the worktree it was branched from
// (SolveSpec.Worktree): that worktree's branch is fast-forwarded to the
// run's branch, which is then deleted (its worktree is gone already, Keep
// being never). The outcome then names the task's branch and worktree.
// Without SolveSpec.Worktree it does nothing.
func handOver(ctx context.Context, spec SolveSpec, o *agent.Outcome) error {
	if spec.Worktree == "" {
		return nil
	}
	top, _, err := gitx.TopLevel(ctx, spec.Worktree)
	if err != nil {
		return err
	}
	if o.Committed {
		if err := gitx.FastForward(ctx, top, o.Branch); err != nil {
			return fmt.Errorf("bring the run's commit on %s into %s (fix the worktree, then 'git merge --ff-only %s' there): %w", o.Branch, top, o.Branch, err)
		}
	}
	if !o.BranchDeleted {
		if err := gitx.DeleteBranch(ctx, top, o.Branch); err != nil {
			return err
		}
	}
	branch, err := gitx.CurrentBranch(ctx, top)
	if err != nil {
		return err
	}
	o.Branch, o.Path, o.Kept, o.BranchDeleted = branch, top, true, false
	return nil
}
