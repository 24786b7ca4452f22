package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/agent"
	"github.com/cra-dev/cra/internal/llm/llmtest"
	"github.com/cra-dev/cra/internal/statedir"
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
	if diff := deepDiff(want, got); diff != "" {
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
	raw, err := store.NewFactory(statedir.At(filepath.Join(repo, ".clean_room"))).Open(ctx, store.Raw, "", true)
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
