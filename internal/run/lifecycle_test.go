package run

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/index"
	"github.com/cra-dev/cra/internal/llm/llmtest"
	"github.com/cra-dev/cra/internal/retrieve"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
	"github.com/cra-dev/cra/internal/workspace"
	"github.com/cra-dev/cra/internal/world"
)

// fixture makes an indexed Go repository whose TestAdd fails, with models
// on s and a validation command, and opens its workspace.
func fixture(t *testing.T, s *llmtest.Server) *workspace.Workspace {
	t.Helper()
	repo := t.TempDir()
	files := map[string]string{
		"go.mod":       "module calc\n\ngo 1.21\n",
		"calc/calc.go": "package calc\n\n// Add returns the sum of a and b.\nfunc Add(a, b int) int {\n\treturn a - b\n}\n",
		"test.sh":      "if grep -q 'return a + b' calc/calc.go; then exit 0; fi\necho '--- FAIL: TestAdd (0.00s)'\nexit 1\n",
	}
	for name, content := range files {
		p := filepath.Join(repo, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	window := 8192
	cfg := &config.Config{
		Models:     &config.Models{Coding: "coder:3b", Reasoning: "thinker:4b", BaseURL: s.OllamaURL(), CodingContextWindow: &window, ReasoningContextWindow: &window},
		Validation: &config.Validation{Test: "sh test.sh"},
	}
	stateDir, err := workspace.EnsureStateDir(repo)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := workspace.SaveConfig(repo, cfg, nil); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-qm", "calc"}} {
		gittest.Run(t, repo, args...)
	}
	if _, err := index.NewBuilderIn(stateDir).Run(context.Background(), repo); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(context.Background(), repo, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

func spec(t *testing.T, task, id string) Spec {
	t.Helper()
	stages, err := retrieve.ParseStages("scope,precision")
	if err != nil {
		t.Fatal(err)
	}
	return Spec{Task: task, TaskID: id, Stages: stages, StageList: "scope,precision", Deterministic: true,
		Budget: retrieve.Budget{ContextWindow: 8192, ReservedTokens: 2048, SafetyMargin: retrieve.DefaultSafetyMargin}}
}

// entries returns the world log's entries of id, as "kind/status-or-source".
func entries(t *testing.T, ws *workspace.Workspace, id string) ([]world.Entry, []string) {
	t.Helper()
	l, err := ws.Log()
	if err != nil {
		t.Fatal(err)
	}
	var es []world.Entry
	var shape []string
	err = l.Select(context.Background(), world.Filter{IDs: []string{id}}, func(r *world.Record) error {
		es = append(es, r.Entry)
		shape = append(shape, string(r.Entry.Status)+string(r.Entry.Source))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return es, shape
}

const fixReply = "calc/calc.go\n```go\n<<<<<<< SEARCH\n\treturn a - b\n=======\n\treturn a + b\n>>>>>>> REPLACE\n```\n"

// TestSolveLifecycle: a solved, validated run is start → active → finish
// → review → verified in the world log, the evidence in the last two lines; its branch
// holds the fix, and its session is archived.
func TestSolveLifecycle(t *testing.T) {
	ctx := context.Background()
	s := llmtest.NewServer(t)
	s.SetDefault(llmtest.Text(fixReply))
	ws := fixture(t, s)
	var progress strings.Builder
	sp := spec(t, "TestAdd fails: Add subtracts", "solve-1")
	sp.Progress = &progress
	res, err := Solve(ctx, ws, SolveSpec{Spec: sp, MaxAttempts: 2, Keep: config.KeepNever})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if !res.Success || !res.Validated || res.Worktree.Branch != "cra/solve-1" || !strings.Contains(res.Diff, "+\treturn a + b") {
		t.Errorf("got success %v, validated %v, branch %s, diff:\n%s", res.Success, res.Validated, res.Worktree.Branch, res.Diff)
	}
	if !strings.Contains(progress.String(), DeterministicRetrieval) {
		t.Errorf("progress lacks the deterministic line:\n%s", progress.String())
	}
	es, shape := entries(t, ws, "solve-1")
	if got := strings.Join(shape, " "); got != "start active finish review verified" {
		t.Fatalf("world log: got %q, want start active finish review verified", got)
	}
	if es[0].Need != "TestAdd fails: Add subtracts" || es[2].Output != res.Summary || es[4].Output != "validation passed (sh test.sh) on cra/solve-1" ||
		es[3].Output != "cra solve, the harness: "+es[4].Output {
		t.Errorf("world log: criteria %q, summary %q, evidence %q; want the task, %q and the validation", es[0].Need, es[2].Output, es[3].Output, res.Summary)
	}
	if left, _ := os.ReadDir(filepath.Join(ws.StateDir, "sessions")); len(left) != 0 {
		t.Errorf("session files left behind: %v", left)
	}
	raw := rawDB(t, ws)
	var success, archives int
	raw.QueryRow(`SELECT success FROM task_runs WHERE task_id = 'solve-1'`).Scan(&success)
	raw.QueryRow(`SELECT COUNT(*) FROM session_archives WHERE task_id = 'solve-1'`).Scan(&archives)
	if success != 1 || archives != 1 {
		t.Errorf("raw: success %d, archives %d; want 1 and 1", success, archives)
	}
}

// TestPlanFailureSaysWhatToDo: a run that stops ends failed in the world
// log with what a person must do, and its task_runs row is finalised.
func TestPlanFailureSaysWhatToDo(t *testing.T) {
	ctx := context.Background()
	s := llmtest.NewServer(t)
	s.SetDefault(llmtest.Text("Edit calc.go."))
	ws := fixture(t, s)
	_, err := Plan(ctx, ws, PlanSpec{Spec: spec(t, "fix Add", "plan-1")})
	if err == nil || !strings.Contains(err.Error(), "plan is unusable") {
		t.Fatalf("got %v, want the unusable plan", err)
	}
	es, shape := entries(t, ws, "plan-1")
	if got := strings.Join(shape, " "); got != "start active failed" {
		t.Fatalf("world log: got %q, want start active failed", got)
	}
	if !strings.HasPrefix(es[2].Output, "cra plan stopped: ") || !strings.HasPrefix(es[2].Need, "fix the cause and run again: ") {
		t.Errorf("failed entry: %+v", es[2])
	}
	raw := rawDB(t, ws)
	var success int
	if err := raw.QueryRow(`SELECT success FROM task_runs WHERE task_id = 'plan-1'`).Scan(&success); err != nil || success != 0 {
		t.Errorf("task_runs: success %d, %v; want 0", success, err)
	}
}

// TestInputErrorsLeaveNothing: a run refused for its inputs writes no
// world-log line, no task_runs row and no worktree.
func TestInputErrorsLeaveNothing(t *testing.T) {
	ctx := context.Background()
	s := llmtest.NewServer(t)
	ws := fixture(t, s)
	tight := spec(t, "fix Add", "tight")
	tight.Budget.ReservedTokens = 1
	tests := []struct {
		name string
		run  func() error
	}{
		{"empty task", func() error { _, err := Retrieve(ctx, ws, spec(t, "  ", "tight")); return err }},
		{"no room for the reply", func() error {
			_, err := Solve(ctx, ws, SolveSpec{Spec: tight, MaxAttempts: 1, Keep: config.KeepAlways})
			return err
		}},
		{"no attempts", func() error { _, err := Solve(ctx, ws, SolveSpec{Spec: spec(t, "fix", "tight")}); return err }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ie *InputError
			if err := tc.run(); !errors.As(err, &ie) {
				t.Fatalf("got %v, want an *InputError", err)
			}
		})
	}
	if _, shape := entries(t, ws, "tight"); len(shape) != 0 {
		t.Errorf("world log: %v, want nothing", shape)
	}
	if _, err := os.Stat(filepath.Join(ws.StateDir, "worktrees", "tight")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a worktree was made: %v", err)
	}
	if len(s.Requests()) != 0 {
		t.Errorf("the model was asked %d time(s)", len(s.Requests()))
	}
}

// TestRetrieveNotesOneEvent: a standalone retrieval is one world-log
// event, not a lifecycle.
func TestRetrieveNotesOneEvent(t *testing.T) {
	ctx := context.Background()
	ws := fixture(t, llmtest.NewServer(t))
	res, err := Retrieve(ctx, ws, spec(t, "Add returns the sum", "r-1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Package.Files) == 0 || res.TaskID != "r-1" {
		t.Errorf("got %d files, task %s", len(res.Package.Files), res.TaskID)
	}
	es, shape := entries(t, ws, "r-1")
	if len(es) != 1 || shape[0] != string(world.SourceRetrieve) || !strings.HasSuffix(es[0].Output, "stages scope,precision") {
		t.Errorf("world log: %+v", es)
	}
}

// rawDB opens the workspace's raw database read-only, to check its rows.
func rawDB(t *testing.T, ws *workspace.Workspace) *sql.DB {
	t.Helper()
	db, err := store.NewFactory(statedir.At(ws.StateDir)).Open(context.Background(), store.Raw, "", true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestRunsCloseThemselves: outside the board a written plan ends verified,
// and a run left open for a reviewer (the board's) stops at finish.
func TestRunsCloseThemselves(t *testing.T) {
	ctx := context.Background()
	s := llmtest.NewServer(t)
	s.On(llmtest.Contains("## TASK\nfix Add\n"),
		llmtest.Text(`{"summary": "Flip the sign.", "steps": [{"file": "calc/calc.go", "change": "Return a + b.", "why": "TestAdd expects the sum."}]}`))
	s.SetDefault(llmtest.Text(fixReply))
	ws := fixture(t, s)
	p, err := Plan(ctx, ws, PlanSpec{Spec: spec(t, "fix Add", "plan-ok")})
	if err != nil {
		t.Fatal(err)
	}
	es, shape := entries(t, ws, "plan-ok")
	if got := strings.Join(shape, " "); got != "start active finish review verified" || !strings.HasPrefix(es[4].Output, "plan written: .clean_room/plans/plan-ok.md") {
		t.Errorf("plan: got %q, %+v", got, es[len(es)-1])
	}
	if p.Markdown == "" {
		t.Error("no plan file")
	}
	open := spec(t, "TestAdd fails", "board-1")
	open.LeaveOpen = true
	if _, err := Solve(ctx, ws, SolveSpec{Spec: open, MaxAttempts: 1, Keep: config.KeepNever}); err != nil {
		t.Fatal(err)
	}
	if _, shape := entries(t, ws, "board-1"); strings.Join(shape, " ") != "start active finish" {
		t.Errorf("a run left open: got %v, want start active finish", shape)
	}
}

// TestSolveExternalLifecycle: a board run (ExternalLifecycle, Worktree)
// writes no lifecycle entry, keeps its task_runs row under its own id,
// and leaves its commit on the task worktree's branch, its own worktree
// and branch gone; a second run builds on the first.
func TestSolveExternalLifecycle(t *testing.T) {
	ctx := context.Background()
	s := llmtest.NewServer(t)
	s.SetDefault(llmtest.Text(fixReply))
	ws := fixture(t, s)
	task := filepath.Join(ws.StateDir, "worktrees", "t-1")
	gittest.Run(t, ws.Root, "worktree", "add", "-q", "-b", "cra/t-1", task, "HEAD")
	for n, want := range []string{"1 file(s) changed on branch cra/t-1", "nothing needed changing"} {
		id := "t-1.r" + string(rune('1'+n))
		sp := spec(t, "TestAdd fails: Add subtracts", id)
		sp.ExternalLifecycle, sp.LeaveOpen = true, true
		res, err := Solve(ctx, ws, SolveSpec{Spec: sp, MaxAttempts: 1, Keep: config.KeepAlways, Worktree: task})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Success || !strings.Contains(res.Summary, want) || res.Worktree.Branch != "cra/t-1" {
			t.Errorf("run %s: success %v, summary %q, branch %s; want %q on cra/t-1", id, res.Success, res.Summary, res.Worktree.Branch, want)
		}
		if _, shape := entries(t, ws, id); len(shape) != 0 {
			t.Errorf("run %s wrote lifecycle entries: %v", id, shape)
		}
		raw := rawDB(t, ws)
		var success int
		if err := raw.QueryRow(`SELECT success FROM task_runs WHERE task_id = ?`, id).Scan(&success); err != nil || success != 1 {
			t.Errorf("task_runs %s: success %d, %v", id, success, err)
		}
		if _, err := os.Stat(filepath.Join(ws.StateDir, "worktrees", id)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the run's worktree is still there (%v)", err)
		}
		if got := gittest.Run(t, ws.Root, "branch", "--list", "cra/*"); got != "+ cra/t-1" {
			t.Errorf("branches %q, want only cra/t-1", got)
		}
	}
	data, err := os.ReadFile(filepath.Join(task, "calc", "calc.go"))
	if err != nil || !strings.Contains(string(data), "return a + b") {
		t.Errorf("the task's worktree lacks the fix (%v):\n%s", err, data)
	}
}

// TestSolveValidationIsConfined: the validation commands run code the
// model wrote, so they write only the worktree: one that tries the world
// log is refused, and the log is unchanged; with [board] sandbox = "off"
// they run unconfined, and the progress says so.
func TestSolveValidationIsConfined(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(map[bool]string{false: "confined", true: "off"}[off], func(t *testing.T) {
			ctx := context.Background()
			s := llmtest.NewServer(t)
			s.SetDefault(llmtest.Text(fixReply))
			ws := fixture(t, s)
			forge := fmt.Sprintf("if echo forged >> %q 2>/dev/null; then echo 'wrote the world log'; exit 1; fi\n", filepath.Join(ws.StateDir, "world.log"))
			if err := os.WriteFile(filepath.Join(ws.Root, "test.sh"), []byte(forge+"grep -q 'return a + b' calc/calc.go\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			gittest.Run(t, ws.Root, "commit", "-qam", "a test that tries the log")
			if off {
				ws.Config.Board = &config.Board{Sandbox: "off"}
			}
			var progress strings.Builder
			sp := spec(t, "TestAdd fails: Add subtracts", "solve-1")
			sp.Progress = &progress
			res, err := Solve(ctx, ws, SolveSpec{Spec: sp, MaxAttempts: 1, Keep: config.KeepNever})
			if err != nil {
				t.Fatalf("%v\n%s", err, progress.String())
			}
			log, _ := os.ReadFile(filepath.Join(ws.StateDir, "world.log"))
			forged := strings.Contains(string(log), "forged")
			warned := strings.Contains(progress.String(), `warning: [board] sandbox = "off": the validation commands run unconfined`)
			if off {
				if !forged || res.Success || !warned {
					t.Errorf("unconfined: forged %v, success %v, warned %v; want the write to go through, and said:\n%s", forged, res.Success, warned, progress.String())
				}
				return
			}
			if forged || !res.Success || warned {
				t.Errorf("confined: forged %v, success %v, warned %v; want the write refused and the fix validated:\n%s", forged, res.Success, warned, progress.String())
			}
		})
	}
}
