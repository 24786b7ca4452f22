package cli

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/retrieve"
	"github.com/cra-dev/cra/internal/store"
)

// llmUsage adds up the model calls of one command for task_runs.
type llmUsage struct {
	calls        int
	tokens       int
	latency      time.Duration
	promptTokens int // the bound of one stage prompt: the reasoning window
}

// newJudge wires the retrieval stages to the reasoning model through the
// recording gateway: every call lands in retrieval_llm_calls.
func newJudge(ctx context.Context, d *deps, cfg *config.Config, f *store.Factory, raw *sql.DB, taskID string, b retrieve.Budget) (retrieve.Judge, *llmUsage, error) {
	var adapters llm.AdapterSource
	if curated, err := f.Open(ctx, store.Curated, "", true); err == nil {
		// The gateway outlives this function only as long as the command;
		// the connection is closed with the process.
		adapters = kb.New(curated)
	}
	router := llm.NewRouter(cfg, adapters)
	gw := llm.NewGateway(router, llm.NewRecorder(raw))
	gw.Logger = d.logger
	m, err := router.Resolve(ctx, llm.RoleReasoning, "")
	if err != nil {
		return nil, nil, err
	}
	u := &llmUsage{promptTokens: m.ContextWindow}
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
		u.calls++
		u.tokens += resp.PromptTokens + resp.CompletionTokens
		u.latency += resp.Latency
		if err != nil {
			return "", fmt.Errorf("%s: %w", callType, err)
		}
		return resp.Text, nil
	}
	return judge, u, nil
}

// recordTaskRun writes the task_runs row of a command (seed 001 §4.6).
func recordTaskRun(ctx context.Context, raw *sql.DB, taskID, repo, mode, model string, b retrieve.Budget, stages string, ok bool, u *llmUsage, elapsed time.Duration) error {
	var tokens, latency any
	if u != nil {
		tokens, latency = u.tokens, u.latency.Milliseconds()
	} else {
		latency = elapsed.Milliseconds()
	}
	_, err := raw.ExecContext(context.WithoutCancel(ctx), `INSERT INTO task_runs(task_id, repo_path, mode, execute_model, context_window, reserved_tokens, stages, success, total_tokens, total_latency_ms, timestamp)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, taskID, repo, mode, model, b.ContextWindow, b.ReservedTokens, stages, ok, tokens, latency, store.Now())
	if err != nil {
		return fmt.Errorf("record task run: %w", err)
	}
	return nil
}
