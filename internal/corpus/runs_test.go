package corpus_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/corpus"
)

func TestRuns(t *testing.T) {
	ctx := context.Background()
	c, db := openRaw(t)
	plan, err := c.StartRun(ctx, corpus.TaskRun{TaskID: "t-1", Repo: "/src/shop", Mode: "plan", ExecuteModel: "thinker:4b",
		ContextWindow: 8192, ReservedTokens: 1024, Stages: "scope,precision"})
	if err != nil {
		t.Fatal(err)
	}
	impl, err := c.StartRun(ctx, corpus.TaskRun{TaskID: "t-2", Repo: "/src/shop", Mode: "implement", ExecuteModel: "coder:3b",
		ContextWindow: 4096, ReservedTokens: 512, Stages: "scope", PlanArtifact: "plan.json"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartRun(ctx, corpus.TaskRun{TaskID: "t-1", Repo: "/src/shop", Mode: "plan"}); err == nil {
		t.Error("a second run of task t-1: got no error")
	}
	attempts := []corpus.Attempt{
		{Attempt: 1, PromptTokens: 900, CompletionTokens: 80, Latency: 2 * time.Second, RawResponse: "<<<<<<< SEARCH", PatchApplied: true,
			Validation: &corpus.Validation{TestOutput: valid("--- FAIL: TestAdd"), LintOutput: valid(""), FailingTests: []string{"TestAdd"}}},
		{Attempt: 2, Latency: time.Second, RawResponse: "no edits"}, // no counts from the server, not validated
		{Attempt: 3, RawResponse: "fixed", PatchApplied: true, Validation: &corpus.Validation{Success: true}},
	}
	for _, a := range attempts {
		if err := c.AddAttempt(ctx, impl, a); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.FinishRun(ctx, impl, corpus.RunOutcome{Success: true, Tokens: 980, Latency: 3 * time.Second, FinalDiff: "diff --git"}); err != nil {
		t.Fatal(err)
	}
	if err := c.FinishRun(ctx, plan, corpus.RunOutcome{Tokens: 10, FinalPlan: `{"steps": []}`}); err != nil {
		t.Fatal(err)
	}

	got := queryRows(t, db, `SELECT task_id, repo_path, mode, execute_model, context_window, reserved_tokens, stages, plan_artifact,
		success, total_tokens, total_latency_ms, final_diff, final_plan, timestamp FROM task_runs ORDER BY id`)
	want := []row{
		{"task_id": "t-1", "repo_path": "/src/shop", "mode": "plan", "execute_model": "thinker:4b", "context_window": int64(8192),
			"reserved_tokens": int64(1024), "stages": "scope,precision", "plan_artifact": nil, "success": int64(0), "total_tokens": int64(10),
			"total_latency_ms": int64(0), "final_diff": nil, "final_plan": `{"steps": []}`, "timestamp": stamp},
		{"task_id": "t-2", "repo_path": "/src/shop", "mode": "implement", "execute_model": "coder:3b", "context_window": int64(4096),
			"reserved_tokens": int64(512), "stages": "scope", "plan_artifact": "plan.json", "success": int64(1), "total_tokens": int64(980),
			"total_latency_ms": int64(3000), "final_diff": "diff --git", "final_plan": nil, "timestamp": stamp},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("task_runs (-want +got):\n%s", diff)
	}
	got = queryRows(t, db, `SELECT a.task_run_id, a.attempt, a.prompt_tokens, a.completion_tokens, a.latency_ms, a.raw_response,
		a.patch_applied, a.timestamp, v.success, v.test_output, v.lint_output, v.type_check_output, v.failing_tests
		FROM run_attempts a LEFT JOIN validation_results v ON v.attempt_id = a.id ORDER BY a.id`)
	want = []row{
		{"task_run_id": impl, "attempt": int64(1), "prompt_tokens": int64(900), "completion_tokens": int64(80), "latency_ms": int64(2000),
			"raw_response": "<<<<<<< SEARCH", "patch_applied": int64(1), "timestamp": stamp, "success": int64(0),
			"test_output": "--- FAIL: TestAdd", "lint_output": "", "type_check_output": nil, "failing_tests": `["TestAdd"]`},
		{"task_run_id": impl, "attempt": int64(2), "prompt_tokens": nil, "completion_tokens": nil, "latency_ms": int64(1000),
			"raw_response": "no edits", "patch_applied": int64(0), "timestamp": stamp, "success": nil,
			"test_output": nil, "lint_output": nil, "type_check_output": nil, "failing_tests": nil},
		{"task_run_id": impl, "attempt": int64(3), "prompt_tokens": nil, "completion_tokens": nil, "latency_ms": int64(0),
			"raw_response": "fixed", "patch_applied": int64(1), "timestamp": stamp, "success": int64(1),
			"test_output": nil, "lint_output": nil, "type_check_output": nil, "failing_tests": "null"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("run_attempts (-want +got):\n%s", diff)
	}

	// An attempt and its validation are written together or not at all.
	if _, err := db.Exec("DROP TABLE validation_results"); err != nil {
		t.Fatal(err)
	}
	err = c.AddAttempt(ctx, impl, corpus.Attempt{Attempt: 4, Validation: &corpus.Validation{}})
	if err == nil || !strings.HasPrefix(err.Error(), "record validation: ") {
		t.Errorf("got %v, want a record validation error", err)
	}
	if n := count(t, db, "run_attempts"); n != 3 {
		t.Errorf("got %d attempts, want the unvalidated one rolled back", n)
	}
}

func TestHasRuns(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		add  func(*corpus.Corpus) error
		want bool
	}{
		{"none", func(*corpus.Corpus) error { return nil }, false},
		{"only an index run", func(c *corpus.Corpus) error { return c.AddIndexRun(ctx, corpus.IndexRun{Repo: "/src", Status: "ok"}) }, false},
		{"a task run", func(c *corpus.Corpus) error {
			_, err := c.StartRun(ctx, corpus.TaskRun{TaskID: "t-1", Repo: "/src", Mode: "implement"})
			return err
		}, true},
		{"a retrieval call", func(c *corpus.Corpus) error {
			_, err := c.AddRetrievalCall(ctx, corpus.Call{TaskID: "t-1", Type: "task_analysis", Role: "reasoning"})
			return err
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := openRaw(t)
			if err := tc.add(c); err != nil {
				t.Fatal(err)
			}
			if got, err := c.HasRuns(ctx); err != nil || got != tc.want {
				t.Errorf("got %v, %v, want %v", got, err, tc.want)
			}
		})
	}
	t.Run("never migrated", func(t *testing.T) {
		db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "raw.sqlite"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if got, err := corpus.New(db).HasRuns(ctx); err != nil || got {
			t.Errorf("got %v, %v, want false", got, err)
		}
	})
}
