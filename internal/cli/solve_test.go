package cli

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/agent"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/llm/llmtest"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
	"github.com/cra-dev/cra/internal/workspace"
)

func intp(v int) *int { return &v }

func TestSolveFlags(t *testing.T) {
	d, _, _ := testDeps()
	tests := []struct {
		args []string
		want solveOptions
	}{
		{[]string{"fix it"}, solveOptions{task: "fix it", repo: "."}},
		{[]string{"--plan", "p.md", "--max-attempts", "3", "--max-refinement-loops", "0", "--keep-worktree", "never", "--apply", "--deterministic-retrieval", "--json", "--stages", "scope"},
			solveOptions{repo: ".", plan: "p.md", maxAttempts: intp(3), maxRefinementLoops: intp(0), keepWorktree: "never", apply: true, deterministic: true, json: true, stages: "scope"}},
	}
	for _, tc := range tests {
		var got solveOptions
		cmd := newSolveCmd(d, func(_ context.Context, _ *deps, o *solveOptions) error { got = *o; return nil })
		cmd.SetArgs(tc.args)
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		got.budget = budgetFlags{}
		if diff := deepDiff(tc.want, got); diff != "" {
			t.Errorf("%v (-want +got):\n%s", tc.args, diff)
		}
	}
}

func TestResolveSolveBounds(t *testing.T) {
	cfg := &config.Config{Solve: &config.Solve{MaxAttempts: intp(4), MaxRefinementLoops: intp(2), KeepWorktree: config.KeepAlways}}
	tests := []struct {
		name          string
		opts          solveOptions
		cfg           *config.Config
		attempts, rl  int
		wantErr, keep string
	}{
		{name: "config", cfg: cfg, attempts: 4, rl: 2},
		{name: "flags win", opts: solveOptions{maxAttempts: intp(1), maxRefinementLoops: intp(0)}, cfg: cfg, attempts: 1, rl: 0},
		{name: "no attempts", wantErr: "missing --max-attempts"},
		{name: "no loops", opts: solveOptions{maxAttempts: intp(1)}, wantErr: "missing --max-refinement-loops"},
		{name: "zero attempts", opts: solveOptions{maxAttempts: intp(0), maxRefinementLoops: intp(0)}, wantErr: "--max-attempts must be >= 1"},
		{name: "negative loops", opts: solveOptions{maxAttempts: intp(1), maxRefinementLoops: intp(-1)}, wantErr: "--max-refinement-loops must be >= 0"},
	}
	for _, tc := range tests {
		a, l, err := resolveSolveBounds(&tc.opts, tc.cfg)
		if tc.wantErr != "" {
			if _, ok := err.(usageError); !ok || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: got %v, want a usage error with %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || a != tc.attempts || l != tc.rl {
			t.Errorf("%s: got %d %d %v", tc.name, a, l, err)
		}
	}
	for _, tc := range []struct {
		flag string
		cfg  *config.Config
		want string
	}{{"", nil, config.KeepOnFailure}, {"", cfg, config.KeepAlways}, {"never", cfg, config.KeepNever}} {
		if got, err := resolveKeep(tc.flag, tc.cfg); got != tc.want || err != nil {
			t.Errorf("resolveKeep(%q): got %q %v, want %q", tc.flag, got, err, tc.want)
		}
	}
}

// solveFixture is a committed, indexed repository whose test fails, with
// models on the fake server and sh test.sh as its test command.
func solveFixture(t *testing.T, s *llmtest.Server) string {
	t.Helper()
	repo := t.TempDir()
	files := map[string]string{
		"go.mod":            "module calc\n\ngo 1.21\n",
		"calc/calc.go":      "package calc\n\n// Add returns the sum of a and b.\nfunc Add(a, b int) int {\n\treturn a - b\n}\n",
		"calc/calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"Add(2, 3) != 5\")\n\t}\n}\n",
		"test.sh":           "if grep -q 'return a + b' calc/calc.go; then exit 0; fi\necho '--- FAIL: TestAdd (0.00s)'\nexit 1\n",
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
		Budget:     &config.Budget{ContextWindow: intp(8192), ReservedTokens: intp(2048)},
		Solve:      &config.Solve{MaxAttempts: intp(3), MaxRefinementLoops: intp(1)},
		Stages:     &config.Stages{Default: "scope,precision"},
		Validation: &config.Validation{Test: "sh test.sh"},
	}
	if _, err := workspace.EnsureStateDir(repo); err != nil {
		t.Fatal(err)
	}
	if _, err := workspace.SaveConfig(repo, cfg, nil); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-qm", "calc"}} {
		gittest.Run(t, repo, args...)
	}
	d, _, _ := testDeps()
	if err := indexRun(context.Background(), d, &indexOptions{repo: repo}); err != nil {
		t.Fatal(err)
	}
	return repo
}

const fixReply = "calc/calc.go\n```go\n<<<<<<< SEARCH\n\treturn a - b\n=======\n\treturn a + b\n>>>>>>> REPLACE\n```\n"

// TestSolveRecordsTheRun checks the raw database after a run whose first
// reply is malformed: two attempts, one validation, the calls, the
// session archive and the final diff.
func TestSolveRecordsTheRun(t *testing.T) {
	ctx := context.Background()
	s := llmtest.NewServer(t)
	s.On(llmtest.Contains("SEARCH/REPLACE edit blocks only"), llmtest.Text("Flip the sign."), llmtest.Text(fixReply))
	repo := solveFixture(t, s)
	d, out, errOut := testDeps()
	opts := &solveOptions{task: "TestAdd fails: Add subtracts", repo: repo, deterministic: true, taskID: "task-7", json: true}
	if err := solveRun(ctx, d, opts); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	var report solveReport
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !report.Success || len(report.Attempts) != 2 || report.Worktree.Branch != "cra/task-7" || report.Worktree.Kept || !report.Worktree.Committed {
		t.Errorf("report: %+v", report)
	}

	raw, err := store.NewFactory(statedir.At(filepath.Join(repo, ".clean_room"))).Open(ctx, store.Raw, "", true)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var (
		id              int64
		mode, model     string
		success, tokens int
		diff            sql.NullString
		plan            sql.NullString
	)
	if err := raw.QueryRow(`SELECT id, mode, execute_model, success, total_tokens, final_diff, final_plan FROM task_runs WHERE task_id = 'task-7'`).
		Scan(&id, &mode, &model, &success, &tokens, &diff, &plan); err != nil {
		t.Fatal(err)
	}
	if mode != agent.ModeImplement || model != "coder:3b" || success != 1 || !strings.Contains(diff.String, "+\treturn a + b") || plan.Valid {
		t.Errorf("task_runs: %s %s %d %q %v", mode, model, success, diff.String, plan)
	}
	count := func(q string, args ...any) int {
		var n int
		if err := raw.QueryRow(q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for q, want := range map[string]int{
		"SELECT COUNT(*) FROM run_attempts WHERE task_run_id = ?":                                                                                                   2,
		"SELECT COUNT(*) FROM run_attempts WHERE task_run_id = ? AND patch_applied = 1":                                                                             1,
		"SELECT COUNT(*) FROM validation_results v JOIN run_attempts a ON a.id = v.attempt_id WHERE a.task_run_id = ? AND v.success = 1 AND v.failing_tests = '[]'": 1,
	} {
		if got := count(q, id); got != want {
			t.Errorf("%s: got %d, want %d", q, got, want)
		}
	}
	if got := count(`SELECT COUNT(*) FROM llm_calls WHERE task_id = 'task-7' AND call_type = 'solve' AND role = 'coding' AND stage = 'execute_code'`); got != 2 {
		t.Errorf("llm_calls: got %d, want 2", got)
	}
	if got := count(`SELECT COUNT(*) FROM session_archives WHERE task_id = 'task-7'`); got != 1 {
		t.Errorf("session_archives: got %d, want 1", got)
	}
	if entries, _ := os.ReadDir(filepath.Join(repo, ".clean_room", "sessions")); len(entries) != 0 {
		t.Errorf("session files left behind: %v", entries)
	}
	if st, _ := exec.Command("git", "-C", repo, "status", "--porcelain").Output(); len(st) != 0 {
		t.Errorf("the user's tree changed: %s", st)
	}
}

// TestSolveWithPlan checks that plan files are tier-0 seeds of retrieval
// and that the plan is recorded as the run's artifact.
func TestSolveWithPlan(t *testing.T) {
	ctx := context.Background()
	s := llmtest.NewServer(t)
	s.On(llmtest.Contains("SEARCH/REPLACE edit blocks only"), llmtest.Text(fixReply))
	repo := solveFixture(t, s)
	planPath := filepath.Join(t.TempDir(), "plan.md")
	plan := &agent.Plan{Task: "make the test pass", Summary: "s", Steps: []agent.PlanStep{{File: "calc/calc_test.go", Change: "read it", Why: "it says what Add must do"}}}
	if _, err := agent.SavePlan(planPath, plan); err != nil {
		t.Fatal(err)
	}
	d, _, errOut := testDeps()
	if err := solveRun(ctx, d, &solveOptions{repo: repo, plan: planPath, deterministic: true, taskID: "task-8"}); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	raw, err := store.NewFactory(statedir.At(filepath.Join(repo, ".clean_room"))).Open(ctx, store.Raw, "", true)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var artifact string
	if err := raw.QueryRow(`SELECT plan_artifact FROM task_runs WHERE task_id = 'task-8'`).Scan(&artifact); err != nil || artifact != planPath {
		t.Errorf("plan_artifact: got %q %v", artifact, err)
	}
	var tier string
	if err := raw.QueryRow(`SELECT d.tier FROM retrieval_decisions d WHERE d.task_id = 'task-8' AND d.stage = 'scope' ORDER BY d.id LIMIT 1`).Scan(&tier); err != nil || tier != "plan" {
		t.Errorf("first scope decision: tier %q, %v; want the plan's file first", tier, err)
	}

	// A missing task and plan is a usage error; so is a bad plan file.
	if err := solveRun(ctx, d, &solveOptions{repo: repo}); err == nil || !strings.Contains(err.Error(), "no task: pass the task, or --plan FILE") {
		t.Errorf("got %v", err)
	}
}
