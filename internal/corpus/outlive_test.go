package corpus_test

import (
	"context"
	"testing"

	"github.com/cra-dev/cra/internal/corpus"
)

// TestRecordsOutliveCancellation: what happened is recorded even when the
// command is being cancelled.
func TestRecordsOutliveCancellation(t *testing.T) {
	c, db := openRaw(t)
	ctx := cancelled()
	if _, err := c.AddCall(ctx, corpus.Call{Type: "plan", Role: "reasoning", Err: context.Canceled}); err != nil {
		t.Errorf("AddCall: %v", err)
	}
	if _, err := c.AddRetrievalCall(ctx, corpus.Call{TaskID: "t-1", Type: "task_analysis", Role: "reasoning"}); err != nil {
		t.Errorf("AddRetrievalCall: %v", err)
	}
	if _, err := c.AddEnrichment(ctx, corpus.Enrichment{FileID: 1, Path: "a.py", ContentHash: "h"}); err != nil {
		t.Errorf("AddEnrichment: %v", err)
	}
	if err := c.AddIndexRun(ctx, corpus.IndexRun{Repo: "/src/shop", Status: "failed: context canceled"}); err != nil {
		t.Errorf("AddIndexRun: %v", err)
	}
	id, err := c.StartRun(context.Background(), corpus.TaskRun{TaskID: "t-1", Repo: "/src/shop", Mode: "implement"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddAttempt(ctx, id, corpus.Attempt{Attempt: 1}); err != nil {
		t.Errorf("AddAttempt: %v", err)
	}
	if err := c.FinishRun(ctx, id, corpus.RunOutcome{}); err != nil {
		t.Errorf("FinishRun: %v", err)
	}
	for _, table := range []string{"llm_calls", "retrieval_llm_calls", "enrichment_outputs", "index_runs", "run_attempts"} {
		if n := count(t, db, table); n != 1 {
			t.Errorf("%s: got %d rows, want 1", table, n)
		}
	}
	// A run that was cancelled before it started is not recorded.
	if _, err := c.StartRun(ctx, corpus.TaskRun{TaskID: "t-2"}); err == nil {
		t.Error("StartRun with a cancelled context: got no error")
	}
}

// cancelled is a context that has ended.
func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
