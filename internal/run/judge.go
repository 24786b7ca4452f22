package run

import (
	"context"
	"fmt"

	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/retrieve"
)

// usage adds up the model calls of one command for task_runs.
type usage struct {
	tokens       int
	promptTokens int // the bound of one stage prompt: the reasoning window
}

// newJudge wires the retrieval stages to the reasoning model through the
// run's recording gateway: every call lands in retrieval_llm_calls. The
// second function marks the latest call's reply malformed (the stages
// call one at a time, and tell of a reply they refused before the next).
func newJudge(ctx context.Context, gw *llm.Gateway, taskID string, b retrieve.Budget) (retrieve.Judge, func(context.Context, error) error, *usage, error) {
	m, err := gw.Router.Resolve(ctx, llm.RoleReasoning, "")
	if err != nil {
		return nil, nil, nil, err
	}
	u := &usage{promptTokens: m.ContextWindow}
	if u.promptTokens == 0 {
		u.promptTokens = b.ContextWindow
	}
	var last llm.Client
	judge := func(ctx context.Context, callType, stage, system, prompt string) (string, error) {
		c, _, err := gw.Client(ctx, llm.CallInfo{Kind: llm.KindRetrieval, TaskID: taskID, Type: callType, Role: llm.RoleReasoning, Stage: stage})
		if err != nil {
			return "", err
		}
		last = c
		req := llm.UserPrompt(system, prompt)
		req.JSON = true
		// The prompts were bounded by this window; Ollama must be told it
		// (num_ctx) or it truncates silently.
		req.ContextWindow = u.promptTokens
		resp, err := c.Complete(ctx, req)
		u.tokens += resp.PromptTokens + resp.CompletionTokens
		if err != nil {
			return "", fmt.Errorf("%s: %w", callType, err)
		}
		return resp.Text, nil
	}
	malformed := func(ctx context.Context, problem error) error {
		if last == nil {
			return nil
		}
		return llm.MarkMalformed(ctx, last, problem)
	}
	return judge, malformed, u, nil
}
