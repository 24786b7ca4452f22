package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/retrieve"
)

const planReply = `{"summary": "Flip the sign.", "steps": [{"file": "calc/calc.go", "change": "Return a + b in Add.", "why": "TestAdd expects the sum."}]}`

func TestPlanner(t *testing.T) {
	ctx := context.Background()
	b := retrieve.Budget{ContextWindow: 8192, ReservedTokens: 2048}

	model := scripted(planReply)
	p := &Planner{Model: model, Budget: b, ReplyTokens: 1024}
	res, err := p.Plan(ctx, "fix Add", pkgOf("calc/calc.go"), "### conventions/x.md\nSmall steps.")
	if err != nil {
		t.Fatal(err)
	}
	if res.Calls != 1 || res.Plan.Steps[0].File != "calc/calc.go" || res.Plan.Task != "fix Add" || res.PromptTokens != 100 {
		t.Errorf("got %+v %+v", res, res.Plan)
	}
	req := model.requests[0]
	if req.System != PlanSystem || !req.JSON || req.MaxTokens != 1024 || req.ContextWindow != 8192 {
		t.Errorf("request %+v", req)
	}
	for _, want := range []string{"## TASK\nfix Add", "## PROJECT KNOWLEDGE", "Small steps.", "## calc/calc.go", "## YOUR ANSWER"} {
		if !strings.Contains(model.prompt(0), want) {
			t.Errorf("prompt lacks %q", want)
		}
	}
	// PlanPrompt, which bootstrapped pairs use, builds exactly this prompt.
	if sys, user, _, err := PlanPrompt("fix Add", pkgOf("calc/calc.go"), "### conventions/x.md\nSmall steps.", 8192, 1024); err != nil || sys != req.System || user != model.prompt(0) {
		t.Errorf("PlanPrompt differs from the planner's prompt (%v):\n%s", err, user)
	}

	// A malformed plan gets one correction that quotes it.
	model = scripted(`{"steps": [{"file": "calc/calc.go", "change": "x"}]}`, planReply)
	p.Model = model
	res, err = p.Plan(ctx, "fix Add", nil, "")
	if err != nil || res.Calls != 2 {
		t.Fatalf("%v %+v", err, res)
	}
	second := model.requests[1].Messages
	if len(second) != 3 || second[1].Role != "assistant" || !strings.Contains(second[2].Content, "That reply is not a valid plan: invalid plan: step 1 (calc/calc.go): no why") {
		t.Errorf("correction: %+v", second)
	}

	// Two bad replies are a PlanError with the raw reply.
	p.Model = scripted("I suggest changing Add.")
	_, err = p.Plan(ctx, "fix Add", nil, "")
	var pe *PlanError
	if !errors.As(err, &pe) || !errors.Is(err, llm.ErrNoJSON) || !strings.Contains(err.Error(), "--- raw response ---\nI suggest changing Add.") {
		t.Errorf("got %v", err)
	}
}
