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
// run's recording gateway: every call lands in retrieval_llm_calls.
func newJudge(ctx context.Context, gw *llm.Gateway, taskID string, b retrieve.Budget) (retrieve.Judge, *usage, error) {
	m, err := gw.Router.Resolve(ctx, llm.RoleReasoning, "")
	if err != nil {
		return nil, nil, err
	}
	u := &usage{promptTokens: m.ContextWindow}
	if u.promptTokens == 0 {
		u.promptTokens = b.ContextWindow
	}
	judge := func(ctx context.Context, callType, stage, system, prompt string) (string, error) {
		c, _, err := gw.Client(ctx, llm.CallInfo{Kind: llm.KindRetrieval, TaskID: taskID, Type: callType, Role: llm.RoleReasoning, Stage: stage})
		if err != nil {
			return "", err
		}
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
	return judge, u, nil
}
