package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/agent"
	"github.com/cra-dev/cra/internal/llm/llmtest"
	"github.com/cra-dev/cra/internal/store"
)

func TestPlanFlags(t *testing.T) {
	d, _, _ := testDeps()
	var got planOptions
	cmd := newPlanCmd(d, func(_ context.Context, _ *deps, o *planOptions) error { got = *o; return nil })
	cmd.SetArgs([]string{"fix it", "-o", "p.md", "--deterministic-retrieval", "--json", "--stages", "scope"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	got.budget = budgetFlags{}
	want := planOptions{task: "fix it", repo: ".", output: "p.md", deterministic: true, json: true, stages: "scope"}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(planOptions{}, budgetFlags{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestPlanRecordsThePlan(t *testing.T) {
	ctx := context.Background()
	s := llmtest.NewServer(t)
	s.On(llmtest.Contains("## TASK\nfix Add\n"),
		llmtest.Text(`{"summary": "Flip the sign.", "steps": [{"file": "calc/calc.go", "change": "Return a + b.", "why": "TestAdd expects the sum."}]}`))
	repo := solveFixture(t, s)
	d, out, errOut := testDeps()
	if err := planRun(ctx, d, &planOptions{task: "fix Add", repo: repo, deterministic: true, taskID: "plan-1", json: true}); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	var report struct {
		agent.Plan
		Markdown string `json:"markdown_file"`
		JSONFile string `json:"json_file"`
	}
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatal(err)
	}
	wantMD := filepath.Join(repo, ".clean_room", "plans", "plan-1.md")
	if report.Markdown != wantMD || report.TaskID != "plan-1" || len(report.Steps) != 1 {
		t.Errorf("report %+v", report)
	}
	loaded, err := agent.LoadPlan(wantMD)
	if err != nil || loaded.Steps[0].Why != "TestAdd expects the sum." {
		t.Fatalf("%v %+v", err, loaded)
	}
	raw, err := store.NewFactory(filepath.Join(repo, ".clean_room")).Open(ctx, store.Raw, "", true)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var mode, model, final string
	var success int
	if err := raw.QueryRow(`SELECT mode, execute_model, success, final_plan FROM task_runs WHERE task_id = 'plan-1'`).Scan(&mode, &model, &success, &final); err != nil {
		t.Fatal(err)
	}
	if mode != "plan" || model != "thinker:4b" || success != 1 || !strings.Contains(final, `"file":"calc/calc.go"`) {
		t.Errorf("task_runs: %s %s %d %s", mode, model, success, final)
	}
	var calls int
	raw.QueryRow(`SELECT COUNT(*) FROM llm_calls WHERE task_id = 'plan-1' AND call_type = 'plan' AND stage = 'execute_plan' AND role = 'reasoning'`).Scan(&calls)
	if calls != 1 {
		t.Errorf("llm_calls: %d", calls)
	}
	if entries, _ := os.ReadDir(filepath.Join(repo, ".clean_room", "sessions")); len(entries) != 0 {
		t.Errorf("session files left behind: %v", entries)
	}

	// An unusable plan fails the run, recorded, with the raw reply.
	s.On(llmtest.Contains("unusable-plan"), llmtest.Text("Edit calc.go."))
	err = planRun(ctx, d, &planOptions{task: "unusable-plan", repo: repo, deterministic: true, taskID: "plan-2"})
	if err == nil || !strings.Contains(err.Error(), "plan is unusable after a correction") || !strings.Contains(err.Error(), "Edit calc.go.") {
		t.Fatalf("got %v", err)
	}
	if err := raw.QueryRow(`SELECT success FROM task_runs WHERE task_id = 'plan-2'`).Scan(&success); err != nil || success != 0 {
		t.Errorf("failed run: success %d, %v", success, err)
	}
}

// TestSavePlanFallsBack: a plan whose --output went bad while the model
// worked is saved where cra keeps plans, with a warning, not lost.
func TestSavePlanFallsBack(t *testing.T) {
	repo := t.TempDir()
	blocker := filepath.Join(repo, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fallback := filepath.Join(repo, ".clean_room", "plans", "t.md")
	p := &agent.Plan{Task: "fix add"}
	var w strings.Builder

	md, js, err := savePlan(&w, repo, filepath.Join(blocker, "x.md"), fallback, p)
	if err != nil || md != fallback || js != filepath.Join(repo, ".clean_room", "plans", "t.json") {
		t.Fatalf("got %q, %q, %v; want the fallback", md, js, err)
	}
	if !strings.Contains(w.String(), "warning: could not save the plan to file/x.md") || !strings.Contains(w.String(), "saved it to .clean_room/plans/t.md instead") {
		t.Errorf("warning: %q", w.String())
	}
	if _, err := os.Stat(fallback); err != nil {
		t.Errorf("fallback not written: %v", err)
	}

	// A good path: no warning. A bad fallback itself: the error.
	w.Reset()
	good := filepath.Join(repo, "p.md")
	if md, _, err := savePlan(&w, repo, good, fallback, p); err != nil || md != good || w.Len() != 0 {
		t.Errorf("good path: got %q, %v, warning %q", md, err, w.String())
	}
	bad := filepath.Join(blocker, "y.md")
	if _, _, err := savePlan(&w, repo, bad, bad, p); err == nil || !strings.Contains(err.Error(), "cannot make its directory") {
		t.Errorf("bad fallback: got %v", err)
	}
}
