package corpus_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/corpus"
)

func TestAddCall(t *testing.T) {
	ctx := context.Background()
	c, db := openRaw(t)
	calls := []corpus.Call{
		{TaskID: "t-1", Type: "plan", Role: "reasoning", Stage: "execute_plan", Provider: "ollama", Model: "thinker:4b",
			System: "You plan.", Prompt: "Add a flag", Response: "1. do it", PromptTokens: 11, CompletionTokens: 3, Latency: 1500 * time.Millisecond},
		// A failed call: its tokens are not recorded, the empty strings are NULL.
		{Type: "review", Role: "supervisor", Provider: "openai", Model: "cloud/big", Prompt: "Review this",
			PromptTokens: 5, CompletionTokens: 2, Latency: time.Second, Err: errDown},
		// A call that succeeded with no counts keeps its zeros.
		{Type: "solve", Role: "coding", Provider: "ollama", Model: "coder:3b", Prompt: "x", Response: "y"},
	}
	for i, call := range calls {
		id, err := c.AddCall(ctx, call)
		if err != nil || id != int64(i+1) {
			t.Fatalf("call %d: got id %d, %v", i, id, err)
		}
	}
	got := queryRows(t, db, `SELECT task_id, call_type, role, stage, provider, model, system, prompt, response,
		prompt_tokens, completion_tokens, latency_ms, error, timestamp FROM llm_calls ORDER BY id`)
	want := []row{
		{"task_id": "t-1", "call_type": "plan", "role": "reasoning", "stage": "execute_plan", "provider": "ollama", "model": "thinker:4b",
			"system": "You plan.", "prompt": "Add a flag", "response": "1. do it", "prompt_tokens": int64(11), "completion_tokens": int64(3),
			"latency_ms": int64(1500), "error": nil, "timestamp": stamp},
		{"task_id": nil, "call_type": "review", "role": "supervisor", "stage": nil, "provider": "openai", "model": "cloud/big",
			"system": nil, "prompt": "Review this", "response": "", "prompt_tokens": nil, "completion_tokens": nil,
			"latency_ms": int64(1000), "error": "connection refused", "timestamp": stamp},
		{"task_id": nil, "call_type": "solve", "role": "coding", "stage": nil, "provider": "ollama", "model": "coder:3b",
			"system": nil, "prompt": "x", "response": "y", "prompt_tokens": int64(0), "completion_tokens": int64(0),
			"latency_ms": int64(0), "error": nil, "timestamp": stamp},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("llm_calls (-want +got):\n%s", diff)
	}
	if n := count(t, db, "retrieval_llm_calls"); n != 0 {
		t.Errorf("retrieval_llm_calls has %d rows, want general calls in llm_calls only", n)
	}
}

func TestAddRetrievalCall(t *testing.T) {
	ctx := context.Background()
	c, db := openRaw(t)
	for _, call := range []corpus.Call{
		{TaskID: "t-9", Type: "task_analysis", Role: "reasoning", Provider: "ollama", Model: "thinker:4b", System: "sys",
			Prompt: "prompt", Response: `{"keywords": ["flag"]}`, PromptTokens: 20, CompletionTokens: 6, Latency: 20 * time.Millisecond},
		{TaskID: "t-9", Type: "scope_judgment", Role: "reasoning", Stage: "scope", Provider: "ollama", Model: "thinker:4b",
			Prompt: "prompt", PromptTokens: 20, Err: errDown},
	} {
		if _, err := c.AddRetrievalCall(ctx, call); err != nil {
			t.Fatal(err)
		}
	}
	got := queryRows(t, db, `SELECT c.task_id, c.call_type, c.stage_name, c.model, c.prompt, c.response, c.prompt_tokens, c.completion_tokens,
		c.latency_ms, c.timestamp, d.role, d.provider, d.system, d.error
		FROM retrieval_llm_calls c JOIN retrieval_llm_call_details d ON d.call_id = c.id ORDER BY c.id`)
	want := []row{
		{"task_id": "t-9", "call_type": "task_analysis", "stage_name": nil, "model": "thinker:4b", "prompt": "prompt", "response": `{"keywords": ["flag"]}`,
			"prompt_tokens": int64(20), "completion_tokens": int64(6), "latency_ms": int64(20), "timestamp": stamp,
			"role": "reasoning", "provider": "ollama", "system": "sys", "error": nil},
		{"task_id": "t-9", "call_type": "scope_judgment", "stage_name": "scope", "model": "thinker:4b", "prompt": "prompt", "response": "",
			"prompt_tokens": nil, "completion_tokens": nil, "latency_ms": int64(0), "timestamp": stamp,
			"role": "reasoning", "provider": "ollama", "system": nil, "error": "connection refused"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("retrieval_llm_calls (-want +got):\n%s", diff)
	}
	if n := count(t, db, "llm_calls"); n != 0 {
		t.Errorf("llm_calls has %d rows, want retrieval calls in their own table only", n)
	}

	// A retrieval call belongs to a task run.
	if _, err := c.AddRetrievalCall(ctx, corpus.Call{Type: "scope_judgment", Role: "reasoning"}); err == nil || !strings.Contains(err.Error(), "no task id") {
		t.Errorf("got %v, want the missing task id named", err)
	}
	// The call and its details are written together or not at all.
	if _, err := db.Exec("DROP TABLE retrieval_llm_call_details"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddRetrievalCall(ctx, corpus.Call{TaskID: "t-9", Type: "task_analysis", Role: "reasoning"}); err == nil ||
		!strings.HasPrefix(err.Error(), "record retrieval LLM call: ") {
		t.Errorf("got %v, want a record retrieval LLM call error", err)
	}
	if n := count(t, db, "retrieval_llm_calls"); n != 2 {
		t.Errorf("got %d retrieval calls, want the half-written one rolled back", n)
	}
}

func TestCallStats(t *testing.T) {
	ctx := context.Background()
	c, db := openRaw(t)
	if got, err := c.CallStats(ctx); err != nil || got != (corpus.CallStats{}) {
		t.Errorf("empty: got %+v, %v", got, err)
	}
	c.AddCall(ctx, corpus.Call{Type: "plan", Role: "reasoning"})
	c.AddCall(ctx, corpus.Call{Type: "plan", Role: "reasoning", Err: errDown})
	c.AddRetrievalCall(ctx, corpus.Call{TaskID: "t", Type: "task_analysis", Role: "reasoning", Err: errDown})
	c.AddEnrichment(ctx, corpus.Enrichment{Path: "a.py", ContentHash: "h"})
	c.AddEnrichment(ctx, corpus.Enrichment{Path: "b.py", ContentHash: "h", Err: errors.New("no JSON object")})
	if got, err := c.CallStats(ctx); err != nil || got != (corpus.CallStats{Calls: 5, Failed: 3}) {
		t.Errorf("got %+v, %v, want 5 calls, 3 failed", got, err)
	}
	// Replies that could not be used count too, once each; a failed call
	// keeps its own error.
	scope, _ := c.AddRetrievalCall(ctx, corpus.Call{TaskID: "t", Type: "scope_judgment", Role: "reasoning", Response: "prose"})
	review, _ := c.AddCall(ctx, corpus.Call{Type: "review", Role: "summarizer", Response: "prose"})
	for _, m := range []struct {
		retrieval bool
		id        int64
	}{{true, scope}, {true, scope}, {false, review}, {true, 1}} {
		if err := c.MarkMalformed(ctx, m.retrieval, m.id, "no JSON object"); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := c.CallStats(ctx); err != nil || got != (corpus.CallStats{Calls: 7, Failed: 5}) {
		t.Errorf("got %+v, %v, want 7 calls, 5 failed or malformed", got, err)
	}
	var msg string
	if err := db.QueryRow("SELECT error FROM retrieval_llm_call_details WHERE call_id = ?", scope).Scan(&msg); err != nil || msg != corpus.MalformedPrefix+"no JSON object" {
		t.Errorf("got %q, %v, want the malformed reply's problem", msg, err)
	}
	if err := db.QueryRow("SELECT error FROM retrieval_llm_call_details WHERE call_id = 1").Scan(&msg); err != nil || msg != errDown.Error() {
		t.Errorf("a failed call's error: got %q, %v, want %q kept", msg, err, errDown)
	}
	// A database from before llm_calls existed.
	if _, err := db.Exec("DROP TABLE llm_calls"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallStats(ctx); err == nil || !strings.Contains(err.Error(), "llm_calls") {
		t.Errorf("got %v, want the database's error naming llm_calls", err)
	}
}
