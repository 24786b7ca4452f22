package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/agent"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/workspace"
)

// PlanSpec is what a plan run takes besides the Spec.
type PlanSpec struct {
	Spec
	// Output is where the plan's Markdown goes (its JSON beside it), an
	// absolute path the caller checked with agent.CheckPlanPath; ""
	// means .clean_room/plans/<task_id>.md.
	Output string
}

// Planned is a plan run's result.
type Planned struct {
	TaskID string
	Plan   *agent.Plan
	// Markdown and JSON are where the plan was saved.
	Markdown, JSON string
}

// Plan retrieves a task's context and asks the reasoning model for a
// validated plan (seed 001 §8.1), saved as Markdown and JSON. The run is
// logged start → active → finish (or failed) in the world log.
func Plan(ctx context.Context, ws *workspace.Workspace, spec PlanSpec) (*Planned, error) {
	l, err := open(ctx, ws, ModePlan, spec.Spec, true)
	if err != nil {
		return nil, err
	}
	defer l.close()
	defaultOut := statedir.At(ws.StateDir).Plan(l.taskID)
	out := spec.Output
	if out == "" {
		out = defaultOut
	}
	if err := l.begin(ctx); err != nil {
		return nil, err
	}
	model := l.model(func(m *config.Models) string { return m.Reasoning })
	if err := l.startRun(ctx, agent.ModePlan, model, ""); err != nil {
		return nil, l.fail(ctx, err, "")
	}
	pr, err := l.plan(ctx)
	if err != nil {
		return nil, l.fail(ctx, err, "")
	}
	plan := pr.Plan
	plan.TaskID = l.taskID
	if err := l.session.Set(ctx, "plan_artifact", plan); err != nil {
		return nil, l.fail(ctx, err, "")
	}
	out, jsonPath, err := savePlan(l.progress, ws.Root, out, defaultOut, plan)
	if err != nil {
		return nil, l.fail(ctx, err, "")
	}
	planJSON, _ := json.Marshal(plan) // strings only: cannot fail

	// The session is archived and removed (seed 001 §11.1), the run
	// finalised, then its end logged.
	var errs []error
	if err := l.archive(ctx); err != nil {
		errs = append(errs, err)
	}
	tokens := l.judgeTokens() + pr.PromptTokens + pr.CompletionTokens
	if err := l.runLog.Finish(ctx, agent.RunOutcome{Success: len(errs) == 0, Tokens: tokens, Latency: time.Since(l.started), FinalPlan: string(planJSON)}); err != nil {
		errs = append(errs, err)
	}
	summary := fmt.Sprintf("plan of %d step(s) saved to %s", len(plan.Steps), RelPath(ws.Root, out))
	if err := l.end(ctx, len(errs) == 0, summary, "fix the recording error and run again"); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := l.verify(ctx, fmt.Sprintf("plan written: %s and %s", RelPath(ws.Root, out), RelPath(ws.Root, jsonPath))); err != nil {
		return nil, err
	}
	return &Planned{TaskID: l.taskID, Plan: plan, Markdown: out, JSON: jsonPath}, nil
}

// plan retrieves the context and asks the planner.
func (l *lifecycle) plan(ctx context.Context) (*agent.PlanResult, error) {
	if l.spec.Deterministic {
		fmt.Fprintln(l.progress, DeterministicRetrieval)
	}
	_, res, err := l.retrieve(ctx, l.ws.Root, nil)
	if err != nil {
		return nil, err
	}
	knowledge, err := l.loadKnowledge()
	if err != nil {
		return nil, err
	}
	c, _, reply, err := l.client(ctx, llm.CallInfo{Type: "plan", Role: llm.RoleReasoning, Stage: "execute_plan"})
	if err != nil {
		return nil, err
	}
	planner := &agent.Planner{Model: c, Budget: l.spec.Budget, ReplyTokens: reply}
	pr, err := planner.Plan(ctx, l.spec.Task, res.Package, knowledge)
	if err != nil {
		return nil, err
	}
	if len(pr.Trimmed) > 0 {
		fmt.Fprintf(l.progress, "budget gate left out: %s\n", strings.Join(pr.Trimmed, ", "))
	}
	return pr, nil
}

// savePlan saves p at out or, should that fail after the model was asked
// (the path went bad meanwhile), at fallback with a warning on w: a plan
// the user waited for is not lost. It returns where the Markdown and the
// JSON went.
func savePlan(w io.Writer, repo, out, fallback string, p *agent.Plan) (string, string, error) {
	jsonPath, err := agent.SavePlan(out, p)
	if err == nil || out == fallback {
		return out, jsonPath, err
	}
	jp, ferr := agent.SavePlan(fallback, p)
	if ferr != nil {
		return out, "", err
	}
	fmt.Fprintf(w, "warning: could not save the plan to %s (%v); saved it to %s instead\n", RelPath(repo, out), err, RelPath(repo, fallback))
	return fallback, jp, nil
}

// RelPath shows path relative to base when it is inside it.
func RelPath(base, path string) string {
	if r, err := filepath.Rel(base, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}
