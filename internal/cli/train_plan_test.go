package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/llm/llmtest"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
	"github.com/cra-dev/cra/internal/store/storetest"
	"github.com/cra-dev/cra/internal/train"
)

func TestTrainingFlags(t *testing.T) {
	d, _, _ := testDeps()
	var tp trainPlanOptions
	cmd := newTrainPlanCmd(d, func(_ context.Context, _ *deps, o *trainPlanOptions) error { tp = *o; return nil })
	cmd.SetArgs([]string{"--stages", "stage_rates", "--source", "synthetic", "--target", "scope", "--json", "--context-window", "4096", "--reserved-tokens", "1024"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if tp.budget.contextWindow == nil || *tp.budget.contextWindow != 4096 || *tp.budget.reservedTokens != 1024 {
		t.Errorf("budget: got %+v", tp.budget)
	}
	tp.budget = budgetFlags{}
	want := trainPlanOptions{repo: ".", stages: "stage_rates", source: "synthetic", target: "scope", json: true}
	if diff := deepDiff(want, tp); diff != "" {
		t.Errorf("train-plan (-want +got):\n%s", diff)
	}

	var cd curateDataOptions
	cmd = newCurateDataCmd(d, func(_ context.Context, _ *deps, o *curateDataOptions) error { cd = *o; return nil })
	cmd.SetArgs([]string{"--plan", "p.toml", "--repo", "r"})
	if err := cmd.Execute(); err != nil || deepDiff(cd, curateDataOptions{repo: "r", plan: "p.toml"}) != "" {
		t.Errorf("curate-data: got %+v, %v", cd, err)
	}
	// --raw: repeated, and the files after it (a glob's expansion).
	cmd = newCurateDataCmd(d, func(_ context.Context, _ *deps, o *curateDataOptions) error { cd = *o; return nil })
	cmd.SetArgs([]string{"--plan", "p.toml", "--raw", "a/raw.sqlite", "--raw", "b/raw.sqlite", "c/raw.sqlite"})
	if err := cmd.Execute(); err != nil || strings.Join(cd.raw, " ") != "a/raw.sqlite b/raw.sqlite c/raw.sqlite" {
		t.Errorf("curate-data --raw: got %q, %v", cd.raw, err)
	}
	cmd = newTrainPlanCmd(d, func(_ context.Context, _ *deps, o *trainPlanOptions) error { return nil })
	cmd.SetArgs([]string{"--stages", "stage_rates", "stray"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), `unexpected argument "stray"`) {
		t.Errorf("train-plan with an argument and no --raw: %v", err)
	}

	var tr trainOptions
	cmd = newTrainCmd(d, func(_ context.Context, _ *deps, o *trainOptions) error { tr = *o; return nil })
	cmd.SetArgs([]string{"--dataset", "3", "--json"})
	if err := cmd.Execute(); err != nil || tr != (trainOptions{repo: ".", dataset: 3, json: true}) {
		t.Errorf("train: got %+v, %v", tr, err)
	}
}

// TestTrainPlanRecords: the planning call is recorded in llm_calls under
// the command's task id, with the plan's training_plans row.
func TestTrainPlanRecords(t *testing.T) {
	ctx := context.Background()
	s := llmtest.NewServer(t)
	s.On(llmtest.Contains("Plan the next LoRA adapter"), llmtest.Text(`{"target_stage":"execute_code","rationale":"1 of 1 runs failed.",`+
		`"include_negatives":false,"mix_synthetic":false,"max_examples":10,"iters":100,"learning_rate":0.0001,"lora_rank":8,"target_success_rate":0.5}`))
	repo := solveFixture(t, s)
	raw, err := store.NewFactory(statedir.At(filepath.Join(repo, ".clean_room"))).Open(ctx, store.Raw, "", false)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	c := corpus.New(raw)
	run, err := c.StartRun(ctx, corpus.TaskRun{TaskID: "T.r1", Repo: repo, Mode: "implement", ExecuteModel: "coder:3b", ContextWindow: 8192, ReservedTokens: 2048, Stages: "scope"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddCall(ctx, corpus.Call{TaskID: "T.r1", Type: "solve", Role: "coding", Stage: "execute_code", Provider: "ollama", Model: "coder:3b", Prompt: "p", Response: "r"}); err != nil {
		t.Fatal(err)
	}
	if err := c.FinishRun(ctx, run, corpus.RunOutcome{}); err != nil {
		t.Fatal(err)
	}
	d, out, errOut := testDeps()
	if err := trainPlanRun(ctx, d, &trainPlanOptions{repo: repo, stages: "stage_rates", source: corpus.SourceLogged, taskID: "tp-1"}); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if !strings.Contains(out.String(), "plan 1: train execute_code (coding model), written by the reasoning model") {
		t.Errorf("output:\n%s", out)
	}
	calls := storetest.Rows(t, raw, `SELECT task_id, call_type, role, stage, model FROM llm_calls WHERE call_type = 'train_plan'`)
	wantCalls := []storetest.Row{{"task_id": "tp-1", "call_type": train.CallTrainPlan, "role": "reasoning", "stage": nil, "model": "thinker:4b"}}
	if diff := deepDiff(wantCalls, calls); diff != "" {
		t.Errorf("llm_calls (-want +got):\n%s", diff)
	}
	plans := storetest.Rows(t, raw, `SELECT id, task_id, target_stage, base_model, source, json_extract(hyperparameters, '$.iters') AS iters,
		json_extract(improvement_targets, '$.target') AS target, raw_plan LIKE '{"target_stage":"execute_code"%' AS raw FROM training_plans`)
	wantPlans := []storetest.Row{{"id": int64(1), "task_id": "tp-1", "target_stage": "execute_code", "base_model": "coding", "source": "logged",
		"iters": int64(100), "target": 0.5, "raw": int64(1)}}
	if diff := deepDiff(wantPlans, plans); diff != "" {
		t.Errorf("training_plans (-want +got):\n%s", diff)
	}
	if _, err := train.ReadPlan(filepath.Join(repo, ".clean_room", "training", "plans", "plan-1.toml")); err != nil {
		t.Error(err)
	}
}

// TestTrainingReadsTheFleet (issue 34 item 8): train-plan and
// curate-data read another host's raw.sqlite beside this host's with
// --raw: its runs and calls count, the rows both files hold (a host's
// file copied to another) count once, and the plan and the dataset are
// recorded in this host's database only.
func TestTrainingReadsTheFleet(t *testing.T) {
	ctx := context.Background()
	s := llmtest.NewServer(t)
	s.On(llmtest.Contains("Plan the next LoRA adapter"), llmtest.Text(`{"target_stage":"execute_code","rationale":"1 of 2 runs failed.",`+
		`"include_negatives":false,"mix_synthetic":false,"max_examples":10,"iters":100,"learning_rate":0.0001,"lora_rank":8,"target_success_rate":0.5}`))
	repo := solveFixture(t, s)
	raw, err := store.NewFactory(statedir.At(filepath.Join(repo, ".clean_room"))).Open(ctx, store.Raw, "", false)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	addRun := func(c *corpus.Corpus, id string, ok bool) {
		t.Helper()
		run, err := c.StartRun(ctx, corpus.TaskRun{TaskID: id, Repo: repo, Mode: "implement", ExecuteModel: "coder:3b", ContextWindow: 8192, ReservedTokens: 2048, Stages: "scope"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.AddCall(ctx, corpus.Call{TaskID: id, Type: "solve", Role: "coding", Stage: "execute_code", Provider: "ollama", Model: "coder:3b",
			Prompt: "fix it on " + id, Response: "patched " + id}); err != nil {
			t.Fatal(err)
		}
		if err := c.FinishRun(ctx, run, corpus.RunOutcome{Success: ok}); err != nil {
			t.Fatal(err)
		}
	}
	here := corpus.New(raw)
	addRun(here, "A.r1", false)
	// Host b's file: a copy of this host's (so A.r1 is in both), then its
	// own run.
	other := filepath.Join(t.TempDir(), "host-b", "raw.sqlite")
	if err := os.MkdirAll(filepath.Dir(other), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := here.Snapshot(ctx, other); err != nil {
		t.Fatal(err)
	}
	bdb, err := store.NewFactory(statedir.At(filepath.Dir(other))).Open(ctx, store.Raw, "", false)
	if err != nil {
		t.Fatal(err)
	}
	addRun(corpus.New(bdb), "B.r1", true)
	bdb.Close()

	d, out, errOut := testDeps()
	if err := trainPlanRun(ctx, d, &trainPlanOptions{repo: repo, stages: "stage_rates", source: corpus.SourceLogged, taskID: "tp-1", json: true,
		raw: []string{other}}); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if want := "raw " + other + ": merged 1 run(s), 1 model call(s), 0 retrieval decision(s); 2 row(s) already read"; !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr:\n%s\nwant %q", errOut, want)
	}
	var got struct {
		Evidence struct {
			Rates []corpus.StageStat `json:"stage_rates"`
		} `json:"evidence"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := []corpus.StageStat{{Stage: "execute_code", Calls: 2, Linked: 2, Succeeded: 1, Runs: 2, RunsSucceeded: 1}}
	if diff := deepDiff(want, got.Evidence.Rates); diff != "" {
		t.Errorf("stage rates over both hosts (-want +got):\n%s", diff)
	}
	if rows := storetest.Rows(t, raw, `SELECT task_id FROM task_runs ORDER BY task_id`); len(rows) != 1 {
		t.Errorf("this host's task_runs = %v, want only its own run", rows)
	}

	// curate-data: the successful run is host b's, its call the example.
	d, out, errOut = testDeps()
	if err := curateDataRun(ctx, d, &curateDataOptions{repo: repo, plan: filepath.Join(repo, ".clean_room", "training", "plans", "plan-1.toml"),
		raw: []string{other, filepath.Join(repo, ".clean_room", "raw.sqlite")}}); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if !strings.Contains(out.String(), "1 examples") || !strings.Contains(out.String(), "from: 1 logged call(s) (1 of successful runs") {
		t.Errorf("curate-data:\n%s", out)
	}
	sets := storetest.Rows(t, raw, `SELECT training_plan_id, example_count FROM training_datasets`)
	if diff := deepDiff([]storetest.Row{{"training_plan_id": int64(1), "example_count": int64(1)}}, sets); diff != "" {
		t.Errorf("this host's training_datasets (-want +got):\n%s", diff)
	}
	entries, err := os.ReadDir(filepath.Join(repo, ".clean_room"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), statedir.FleetRawPrefix) {
			t.Errorf("the merged copy %s was left behind", e.Name())
		}
	}
}
