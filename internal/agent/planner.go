package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/retrieve"
	"github.com/cra-dev/cra/internal/tokens"
)

// Planner is plan mode's execute stage (seed 001 §8.1): the reasoning
// model writes a structured plan from the task and the context package.
// A reply that is not a valid plan gets one more call that quotes the
// problem; a second invalid reply is a *PlanError.
type Planner struct {
	// Model is the reasoning model's client, recorded by the llm gateway.
	Model  llm.Client
	Budget retrieve.Budget
	// ReplyTokens caps each reply; the budget gate keeps it free.
	ReplyTokens int
}

// PlanResult is a plan and what it cost.
type PlanResult struct {
	Plan             *Plan
	Calls            int
	PromptTokens     int
	CompletionTokens int
	Latency          time.Duration
	// Trimmed lists what the budget gate left out of the prompt.
	Trimmed []string
}

// PlanError is a plan reply that could not be used, with the raw reply
// (seed 001 §15).
type PlanError struct {
	Raw string
	Err error
}

func (e *PlanError) Error() string {
	return fmt.Sprintf("the reasoning model's plan is unusable after a correction: %v\n--- raw response ---\n%s", e.Err, head(e.Raw, 2000))
}

func (e *PlanError) Unwrap() error { return e.Err }

// maxEcho bounds the invalid reply quoted back in the correction call.
const maxEcho = 2000

// Plan asks for the plan of task.
func (p *Planner) Plan(ctx context.Context, task string, pkg *retrieve.Package, knowledge string) (*PlanResult, error) {
	if p.Model == nil || p.ReplyTokens <= 0 {
		return nil, errors.New("plan: a model and a reply size are required")
	}
	if err := p.Budget.Validate(); err != nil {
		return nil, err
	}
	res := &PlanResult{}
	prompt := &planPrompt{task: task, knowledge: knowledge, pkg: copyPackage(pkg)}
	user, _, err := prompt.fit(PlanSystem, p.Budget.ContextWindow, p.ReplyTokens)
	if err != nil {
		return nil, err
	}
	res.Trimmed = prompt.trimmed
	req := llm.UserPrompt(PlanSystem, user)
	var lastErr error
	var lastRaw string
	for call := 1; call <= 2; call++ {
		if call == 2 {
			echo := head(lastRaw, maxEcho)
			fix := fmt.Sprintf("That reply is not a valid plan: %v. Answer again with the JSON object only: {\"summary\": …, \"steps\": [{\"file\": …, \"change\": …, \"why\": …}]}.", lastErr)
			// The correction's turns come out of the context before the reply.
			extra := tokens.Estimate(echo) + tokens.Estimate(fix)
			if user, _, err = prompt.fit(PlanSystem, p.Budget.ContextWindow, p.ReplyTokens+extra); err != nil {
				return res, err
			}
			res.Trimmed = prompt.trimmed
			req.Messages = []llm.Message{{Role: "user", Content: user}, {Role: "assistant", Content: echo}, {Role: "user", Content: fix}}
		}
		req.JSON = true
		req.MaxTokens = p.ReplyTokens
		req.ContextWindow = p.Budget.ContextWindow
		resp, err := p.Model.Complete(ctx, req)
		res.Calls++
		res.PromptTokens += resp.PromptTokens
		res.CompletionTokens += resp.CompletionTokens
		res.Latency += resp.Latency
		if err != nil {
			return res, fmt.Errorf("plan: %w", err)
		}
		plan, perr := ParsePlanReply(resp.Text, task)
		if perr == nil {
			res.Plan = plan
			return res, nil
		}
		lastErr, lastRaw = perr, resp.Text
	}
	return res, &PlanError{Raw: lastRaw, Err: lastErr}
}
