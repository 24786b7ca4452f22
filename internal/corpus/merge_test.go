package corpus_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
)

// hostRaw makes a host's raw.sqlite at dir/.clean_room/raw.sqlite with
// run taskID (one validated attempt), one call of it and a retrieval
// call with its decision, all stamped at clock; it returns the file.
func hostRaw(t *testing.T, dir, taskID string, clock time.Time, shared *corpus.Call) string {
	t.Helper()
	ctx := context.Background()
	sd := statedir.At(filepath.Join(dir, ".clean_room"))
	db, err := store.NewFactory(sd).Open(ctx, store.Raw, "", false)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := corpus.New(db)
	c.Now = func() time.Time { return clock }
	run, err := c.StartRun(ctx, corpus.TaskRun{TaskID: taskID, Repo: dir, Mode: "implement", ExecuteModel: "m", ContextWindow: 8192, ReservedTokens: 1024, Stages: "scope"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddAttempt(ctx, run, corpus.Attempt{Attempt: 1, RawResponse: "patch of " + taskID, PatchApplied: true, Validation: &corpus.Validation{Success: true}}); err != nil {
		t.Fatal(err)
	}
	if err := c.FinishRun(ctx, run, corpus.RunOutcome{Success: true, Tokens: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddCall(ctx, corpus.Call{TaskID: taskID, Type: "solve", Role: "coding", Stage: "execute_code", Provider: "ollama", Model: "m",
		Prompt: "fix " + taskID, Response: "done"}); err != nil {
		t.Fatal(err)
	}
	if shared != nil {
		// A call both hosts hold: the same row (a file copied between
		// hosts) must count once.
		if _, err := c.AddCall(ctx, *shared); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.AddRetrievalCall(ctx, corpus.Call{TaskID: taskID, Type: "scope_judgment", Role: "reasoning", Stage: "scope", Provider: "ollama", Model: "m",
		Prompt: "which files for " + taskID, Response: "a.go"}); err != nil {
		t.Fatal(err)
	}
	if err := c.LogDecisions(ctx, taskID, []corpus.Decision{{Stage: "scope", FileID: 1, Tier: "direct", Included: true, Reason: "named"}}); err != nil {
		t.Fatal(err)
	}
	return sd.Raw()
}

// TestMerge: the raw databases of two hosts merge into a copy of this
// host's: distinct runs and calls add up, the same rows read twice (the
// other file named again, this host's own named too) count once, and
// this host's file is not written.
func TestMerge(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	shared := &corpus.Call{TaskID: "t-shared.r1", Type: "review", Role: "reasoning", Provider: "ollama", Model: "m", Prompt: "review", Response: "ok"}
	hostA := hostRaw(t, t.TempDir(), "t-a.r1", at, shared)
	hostB := hostRaw(t, t.TempDir(), "t-b.r1", at, shared) // the same instant: the key is more than the time
	before, err := os.ReadFile(hostA)
	if err != nil {
		t.Fatal(err)
	}

	dbA, err := store.NewFactory(statedir.At(filepath.Dir(hostA))).Open(ctx, store.Raw, "", false)
	if err != nil {
		t.Fatal(err)
	}
	defer dbA.Close()
	merged := filepath.Join(t.TempDir(), "raw.sqlite")
	if err := corpus.New(dbA).Snapshot(ctx, merged); err != nil {
		t.Fatal(err)
	}
	db, err := store.NewFactory(statedir.At(filepath.Dir(merged))).Open(ctx, store.Raw, "", false)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := corpus.New(db)

	m, err := c.Merge(ctx, hostB)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"task_runs": 1, "run_attempts": 1, "validation_results": 1, "llm_calls": 1, "retrieval_llm_calls": 1,
		"retrieval_llm_call_details": 1, "retrieval_decisions": 1}
	if diff := cmp.Diff(want, m.Copied); diff != "" {
		t.Errorf("copied from b (-want +got):\n%s", diff)
	}
	if m.Duplicates["llm_calls"] != 1 {
		t.Errorf("duplicates %v, want the shared call once", m.Duplicates)
	}
	// Named again, and this host's own file: nothing more.
	for _, f := range []string{hostB, hostA} {
		m, err := c.Merge(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for table, n := range m.Copied {
			if n != 0 {
				t.Errorf("merge of %s again copied %d rows of %s", f, n, table)
			}
		}
	}
	rows := queryRows(t, db, `SELECT r.task_id, r.success, a.attempt, a.raw_response, v.success AS valid
		FROM task_runs r JOIN run_attempts a ON a.task_run_id = r.id JOIN validation_results v ON v.attempt_id = a.id ORDER BY r.task_id`)
	wantRows := []row{
		{"task_id": "t-a.r1", "success": int64(1), "attempt": int64(1), "raw_response": "patch of t-a.r1", "valid": int64(1)},
		{"task_id": "t-b.r1", "success": int64(1), "attempt": int64(1), "raw_response": "patch of t-b.r1", "valid": int64(1)},
	}
	if diff := cmp.Diff(wantRows, rows); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
	calls := queryRows(t, db, `SELECT task_id, call_type FROM llm_calls ORDER BY task_id`)
	wantCalls := []row{{"task_id": "t-a.r1", "call_type": "solve"}, {"task_id": "t-b.r1", "call_type": "solve"}, {"task_id": "t-shared.r1", "call_type": "review"}}
	if diff := cmp.Diff(wantCalls, calls); diff != "" {
		t.Errorf("llm_calls (-want +got):\n%s", diff)
	}
	details := queryRows(t, db, `SELECT c.task_id, d.role FROM retrieval_llm_calls c JOIN retrieval_llm_call_details d ON d.call_id = c.id ORDER BY c.task_id`)
	if diff := cmp.Diff([]row{{"task_id": "t-a.r1", "role": "reasoning"}, {"task_id": "t-b.r1", "role": "reasoning"}}, details); diff != "" {
		t.Errorf("retrieval calls (-want +got):\n%s", diff)
	}
	after, err := os.ReadFile(hostA)
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Error("this host's raw.sqlite changed")
	}

	// Not a raw database: refused whole.
	bad := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(bad, []byte("not sqlite"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{bad, filepath.Join(t.TempDir(), "missing.sqlite")} {
		if _, err := c.Merge(ctx, f); err == nil {
			t.Errorf("merge of %s: no error", f)
		}
	}
	if _, err := c.Merge(ctx, bad); !errors.Is(err, corpus.ErrNotRaw) {
		t.Errorf("merge of a text file = %v, want ErrNotRaw", err)
	}

	// A host's file whose llm_calls is a view standing in for the table:
	// refused whole, naming it, and nothing copied.
	hostC := hostRaw(t, t.TempDir(), "t-c.r1", at, nil)
	dbC, err := sql.Open("sqlite", hostC)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"ALTER TABLE llm_calls RENAME TO calls_kept", "CREATE VIEW llm_calls AS SELECT * FROM calls_kept"} {
		if _, err := dbC.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	dbC.Close()
	_, err = c.Merge(ctx, hostC)
	if !errors.Is(err, corpus.ErrNotRaw) || !strings.Contains(err.Error(), "its llm_calls is view, not a table") {
		t.Errorf("merge of a file with a view for llm_calls = %v, want ErrNotRaw naming it", err)
	}
	if n := queryRows(t, db, `SELECT COUNT(*) AS n FROM task_runs WHERE task_id = 't-c.r1'`); n[0]["n"] != int64(0) {
		t.Errorf("the refused file's run was copied: %v", n)
	}
}
