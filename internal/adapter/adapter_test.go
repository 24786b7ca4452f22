package adapter_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/flock"
	"github.com/cra-dev/cra/internal/statedir"

	"github.com/cra-dev/cra/internal/adapter"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/dataset"
	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/index"
	"github.com/cra-dev/cra/internal/llm/llmtest"
	"github.com/cra-dev/cra/internal/store"
	"github.com/cra-dev/cra/internal/workspace"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newWorkspace is a fake server with the two base models and an indexed
// repository configured for it.
func newWorkspace(t *testing.T) (*llmtest.Server, *workspace.Workspace) {
	t.Helper()
	t.Setenv("TMPDIR", t.TempDir()) // the servers' register locks: the test's own
	s := llmtest.NewServer(t)
	s.SetModels("coder:3b", "thinker:4b")
	return s, workspaceOn(t, s)
}

// workspaceOn is an indexed repository whose models are s's.
func workspaceOn(t *testing.T, s *llmtest.Server) *workspace.Workspace {
	t.Helper()
	repo := t.TempDir()
	write(t, filepath.Join(repo, "shop", "pager.py"), "def page(text):\n    return text\n")
	window := 8192
	cfg := &config.Config{Models: &config.Models{Coding: "coder:3b", Reasoning: "thinker:4b", BaseURL: s.OllamaURL(),
		CodingContextWindow: &window, ReasoningContextWindow: &window}}
	stateDir, err := workspace.EnsureStateDir(repo)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := workspace.SaveConfig(repo, cfg, nil); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-qm", "shop"}} {
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

// recordDataset writes recs with dataset.Write (half of them valid) and
// records the training_datasets row.
func recordDataset(t *testing.T, ws *workspace.Workspace, stage string, recs []dataset.Record) int64 {
	t.Helper()
	ctx := context.Background()
	sum, err := dataset.Write(filepath.Join(ws.StateDir, "training", "datasets", "test"), stage, recs, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := ws.Corpus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := raw.RecordPlan(ctx, corpus.Plan{TaskID: "test", TargetStage: stage, BaseModel: dataset.BaseModel(stage),
		Source: corpus.SourceSynthetic, DataCriteria: "{}", RawPlan: "test"})
	if err != nil {
		t.Fatal(err)
	}
	id, err := raw.RecordDataset(ctx, corpus.Dataset{PlanID: plan, Stage: stage, BaseModel: dataset.BaseModel(stage),
		Source: corpus.SourceSynthetic, Path: sum.Dir, Examples: sum.Examples(), Positive: sum.Positive})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func register(t *testing.T, ws *workspace.Workspace, stage string, datasetID int64, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "adapter.gguf")
	write(t, path, "GGUF "+content)
	reg, err := adapter.Register(context.Background(), ws, adapter.RegisterOptions{Stage: stage, BaseModel: dataset.BaseModel(stage),
		Path: path, DatasetID: datasetID})
	if err != nil {
		t.Fatal(err)
	}
	return reg.Adapter.ModelTag
}

const (
	goodScope = `{"files": [{"path": "shop/pager.py", "relevant": true, "reason": "pages"}, {"path": "shop/fmt.py", "relevant": false, "reason": "no"}]}`
	badScope  = `{"files": [{"path": "shop/pager.py", "relevant": false, "reason": "no"}, {"path": "shop/fmt.py", "relevant": true, "reason": "formats"}]}`
)

func scopeRecords() []dataset.Record {
	var recs []dataset.Record
	day := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, task := range []string{"Page long output", "Resolve the pager once", "Let the pager wrap lines", "Color the pager"} {
		recs = append(recs, dataset.Record{
			Example: dataset.Chat("You decide which files of a repository a coding task needs.",
				"Task:\n"+task+"\n\nCandidates:\n- shop/pager.py (named)\n- shop/fmt.py (search)\n", goodScope),
			Meta: dataset.Meta{Stage: dataset.Scope, Source: corpus.SourceSynthetic, Positive: true, Date: day.AddDate(0, 0, i),
				Gold: []string{"shop/pager.py"}},
		})
	}
	return recs
}

// TestEvaluateGatesActivation scores a scope adapter better, then another
// worse, than the role's model, and checks that activation follows.
func TestEvaluateGatesActivation(t *testing.T) {
	s, ws := newWorkspace(t)
	ctx := context.Background()
	ds := recordDataset(t, ws, dataset.Scope, scopeRecords())
	better := register(t, ws, dataset.Scope, ds, "better")
	worse := register(t, ws, dataset.Scope, ds, "worse")
	s.On(llmtest.Model(better), llmtest.Text(goodScope))
	s.On(llmtest.Model(worse), llmtest.Text("I would say pager.py."))
	s.On(llmtest.Model("thinker:4b"), llmtest.Text(badScope), llmtest.Text(goodScope))

	if _, err := adapter.Activate(ctx, ws, better, false); !errors.Is(err, adapter.ErrNotEvaluated) {
		t.Errorf("activate before eval: got %v, want ErrNotEvaluated", err)
	}
	ev, err := adapter.Evaluate(ctx, ws, better, adapter.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Two valid examples: the base model misses the gold file once.
	if ev.Examples != 2 || ev.Adapter.Score != 1 || ev.Baseline.Score != 0.5 || !ev.Better || ev.Baseline.Model != "thinker:4b" || ev.Metric != "gold_file_recall" {
		t.Errorf("eval of the better adapter: got %+v", ev)
	}
	var evalCalls []string
	for _, r := range s.ChatRequests() {
		if !r.JSON || r.NumCtx() != 8192 || len(r.Messages) != 2 {
			t.Errorf("eval request: got %s, want the stage's JSON prompt (system and user) with the reasoning window", r.Summary())
		}
		evalCalls = append(evalCalls, r.Model)
	}
	if got := strings.Join(evalCalls, ","); got != "thinker:4b,"+better+",thinker:4b,"+better {
		t.Errorf("eval calls: got %s", got)
	}

	ev, err = adapter.Evaluate(ctx, ws, worse, adapter.EvalOptions{DatasetID: ds})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Adapter.Score != 0 || ev.Adapter.Unusable != 2 || ev.Baseline.Score != 1 || ev.Better {
		t.Errorf("eval of the worse adapter: got %+v", ev)
	}
	if _, err := adapter.Activate(ctx, ws, worse, false); !errors.Is(err, adapter.ErrNotBetter) || !strings.Contains(err.Error(), "--force") {
		t.Errorf("activate the worse adapter: got %v, want ErrNotBetter naming --force", err)
	}

	act, err := adapter.Activate(ctx, ws, better, false)
	if err != nil {
		t.Fatal(err)
	}
	if act.Forced || len(act.Deactivated) != 0 {
		t.Errorf("activation: got %+v", act)
	}
	k, _, err := ws.Index(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a, err := k.AdapterForStage(ctx, dataset.Scope)
	if err != nil || a == nil || a.ModelTag != better || !strings.Contains(a.PerformanceNotes, "gold_file_recall 1.00") {
		t.Fatalf("active adapter: got %+v, %v", a, err)
	}
	// The stage runs on the better adapter now: the worse one's eval, made
	// against thinker:4b, no longer says anything, even with a good score.
	if _, err := adapter.Activate(ctx, ws, worse, true); err != nil {
		t.Fatal(err)
	}
	entries, err := adapter.List(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	active := 0
	for _, e := range entries {
		if e.Active {
			active++
			if e.Tag != worse || e.Eval == nil || e.Eval.Better {
				t.Errorf("active entry: got %+v", e)
			}
		}
	}
	if active != 1 {
		t.Errorf("active adapters: got %d, want 1", active)
	}
	base, err := adapter.Baseline(ctx, ws, corpus.AdapterRecord{Stage: dataset.Scope, BaseModel: dataset.Reasoning, ModelTag: better})
	if err != nil || base.Model != worse || base.Source != "adapter" {
		t.Errorf("baseline of the better adapter with the worse active: got %s (%s), %v", base.Model, base.Source, err)
	}
	if _, err := adapter.Activate(ctx, ws, better, false); !errors.Is(err, adapter.ErrNotBetter) || !strings.Contains(err.Error(), "now runs on "+worse) {
		t.Errorf("activate against a stale baseline: got %v, want a refusal naming the new baseline", err)
	}
}

// TestEvaluateExecuteCode applies each model's blocks to the parent in a
// scratch worktree and compares with the commit; the repository's own
// tree is untouched.
func TestEvaluateExecuteCode(t *testing.T) {
	s, ws := newWorkspace(t)
	ctx := context.Background()

	src := t.TempDir()
	gittest.Run(t, src, "init", "-q")
	var recs []dataset.Record
	day := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	steps := []struct{ from, to string }{{"a - b", "a + b"}, {"a + b", "b + a"}, {"b + a", "int(a) + int(b)"}, {"int(a) + int(b)", "sum((a, b))"}}
	write(t, filepath.Join(src, "calc.py"), "def add(a, b):\n    return "+steps[0].from+"\n")
	gittest.Run(t, src, "add", "-A")
	gittest.Run(t, src, "commit", "-qm", "add")
	for i, st := range steps {
		parent := strings.TrimSpace(gittest.Run(t, src, "rev-parse", "HEAD"))
		write(t, filepath.Join(src, "calc.py"), "def add(a, b):\n    return "+st.to+"\n")
		gittest.Run(t, src, "commit", "-qam", "step")
		commit := strings.TrimSpace(gittest.Run(t, src, "rev-parse", "HEAD"))
		blocks := "calc.py\n```\n<<<<<<< SEARCH\n    return " + st.from + "\n=======\n    return " + st.to + "\n>>>>>>> REPLACE\n```\n"
		recs = append(recs, dataset.Record{
			Example: dataset.Chat("You edit code with SEARCH/REPLACE blocks.", "Task: change add to "+st.to, blocks),
			Meta: dataset.Meta{Stage: dataset.ExecuteCode, Source: corpus.SourceSynthetic, Positive: true, Date: day.AddDate(0, 0, i),
				Repo: src, Parent: parent, Commit: commit, Gold: []string{"calc.py"}},
		})
	}
	head := strings.TrimSpace(gittest.Run(t, src, "rev-parse", "HEAD"))
	ds := recordDataset(t, ws, dataset.ExecuteCode, recs)
	tag := register(t, ws, dataset.ExecuteCode, ds, "code")
	if tag != "coder:3b-execute_code-v1" {
		t.Errorf("default tag: got %s", tag)
	}
	// The adapter answers each valid example with its reference blocks;
	// the base model's first blocks apply but write something else, its
	// second do not apply.
	for _, r := range recs[2:] {
		s.On(func(r0 dataset.Record) llmtest.Matcher {
			return func(req llmtest.Request) bool {
				return req.Model == tag && strings.Contains(req.Prompt(), r0.Example.Messages[1].Content)
			}
		}(r), llmtest.Text(r.Example.Messages[2].Content))
	}
	s.On(llmtest.Model("coder:3b"),
		llmtest.Text("calc.py\n```\n<<<<<<< SEARCH\n    return b + a\n=======\n    return a + b\n>>>>>>> REPLACE\n```\n"),
		llmtest.Text("calc.py\n```\n<<<<<<< SEARCH\n    return nothing\n=======\n    return 1\n>>>>>>> REPLACE\n```\n"))
	ev, err := adapter.Evaluate(ctx, ws, tag, adapter.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Examples != 2 || ev.Adapter.Score != 1 || ev.Baseline.Score != 0 || !ev.Better || ev.Metric != "reproduced_commits" {
		t.Errorf("eval: got %+v", ev)
	}
	for _, r := range s.ChatRequests() {
		if r.JSON {
			t.Errorf("execute_code asks for blocks, not JSON: %s", r.Summary())
		}
	}
	if st := gittest.Run(t, src, "status", "--porcelain"); st != "" {
		t.Errorf("source repository's work tree changed: %q", st)
	}
	if got := strings.TrimSpace(gittest.Run(t, src, "rev-parse", "HEAD")); got != head {
		t.Errorf("source HEAD moved: %s, want %s", got, head)
	}
	if wts := len(strings.Split(strings.TrimSpace(gittest.Run(t, src, "worktree", "list")), "\n")); wts != 1 {
		t.Errorf("scratch worktrees left: %d worktrees", wts)
	}
}

func TestEvaluateErrors(t *testing.T) {
	s, ws := newWorkspace(t)
	ctx := context.Background()
	noDataset := register(t, ws, dataset.Scope, 0, "outside")
	if _, err := adapter.Evaluate(ctx, ws, noDataset, adapter.EvalOptions{}); err == nil || !strings.Contains(err.Error(), "pass --dataset ID") {
		t.Errorf("no dataset: got %v", err)
	}
	code := recordDataset(t, ws, dataset.ExecuteCode, []dataset.Record{{
		Example: dataset.Chat("s", "u", "a"), Meta: dataset.Meta{Stage: dataset.ExecuteCode}}})
	if _, err := adapter.Evaluate(ctx, ws, noDataset, adapter.EvalOptions{DatasetID: code}); err == nil || !strings.Contains(err.Error(), "is of stage execute_code") {
		t.Errorf("dataset of another stage: got %v", err)
	}
	// One record only: no validation split.
	one := recordDataset(t, ws, dataset.Scope, scopeRecords()[:1])
	if _, err := adapter.Evaluate(ctx, ws, noDataset, adapter.EvalOptions{DatasetID: one}); !errors.Is(err, adapter.ErrNoValidation) {
		t.Errorf("empty validation split: got %v", err)
	}
	// Nothing to score against: no gold files.
	recs := scopeRecords()
	for i := range recs {
		recs[i].Meta.Gold = nil
	}
	nogold := recordDataset(t, ws, dataset.Scope, recs)
	if _, err := adapter.Evaluate(ctx, ws, noDataset, adapter.EvalOptions{DatasetID: nogold}); !errors.Is(err, adapter.ErrNoValidation) || !strings.Contains(err.Error(), "gold files") {
		t.Errorf("no gold: got %v", err)
	}
	if n := len(s.ChatRequests()); n != 0 {
		t.Errorf("%d model calls for evaluations that could not run", n)
	}
	// A model that fails ends the evaluation, and nothing is stored.
	ds := recordDataset(t, ws, dataset.Scope, scopeRecords())
	s.On(llmtest.Model("thinker:4b"), llmtest.Status(404, `model "thinker:4b-scope-v1" not found, try pulling it first`))
	if _, err := adapter.Evaluate(ctx, ws, noDataset, adapter.EvalOptions{DatasetID: ds}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("failing model: got %v", err)
	}
	entries, _ := adapter.List(ctx, ws)
	if len(entries) != 1 || entries[0].Eval != nil {
		t.Errorf("after a failed evaluation: got %+v, want no eval stored", entries)
	}
	if _, err := adapter.Evaluate(ctx, ws, "nope:1b", adapter.EvalOptions{}); err == nil || !strings.Contains(err.Error(), "not registered") {
		t.Errorf("unknown tag: got %v", err)
	}
}

// TestRegisterKeepsServerModels checks that Register never creates its
// model under the name of one the server has: Ollama's create replaces a
// model of that name, so --tag naming the base model would put the LoRA
// under every stage of its role.
func TestRegisterKeepsServerModels(t *testing.T) {
	s, ws := newWorkspace(t)
	s.SetModels("coder:3b", "thinker:4b", "thinker:4b-scope-v1")
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "adapter.gguf")
	write(t, path, "GGUF scope lora")
	for _, tag := range []string{"thinker:4b", "coder:3b", "thinker:4b-scope-v1"} {
		_, err := adapter.Register(ctx, ws, adapter.RegisterOptions{Stage: dataset.Scope, BaseModel: dataset.Reasoning, Path: path, Tag: tag})
		if err == nil || !strings.Contains(err.Error(), "the server has a model named "+tag) || !strings.Contains(err.Error(), "pass another --tag") {
			t.Errorf("--tag %s: got %v, want a refusal naming the model and the fix", tag, err)
		}
	}
	if created := s.Created(); len(created) != 0 {
		t.Errorf("got %d creates for refused tags, want none: %+v", len(created), created)
	}
	// The default tag passes over a name the server has.
	reg, err := adapter.Register(ctx, ws, adapter.RegisterOptions{Stage: dataset.Scope, BaseModel: dataset.Reasoning, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := reg.Adapter.ModelTag, "thinker:4b-scope-v2"; got != want {
		t.Errorf("default tag: got %s, want %s", got, want)
	}
}

// TestEvaluateDatasetErrorsNameTheFix checks that an evaluation that
// cannot start for its dataset says what to pass instead.
func TestEvaluateDatasetErrorsNameTheFix(t *testing.T) {
	_, ws := newWorkspace(t)
	ctx := context.Background()
	tag := register(t, ws, dataset.Scope, 0, "outside")
	one := recordDataset(t, ws, dataset.Scope, scopeRecords()[:1])
	for _, tc := range []struct {
		name string
		id   int64
	}{{"unknown dataset", 99}, {"empty validation split", one}} {
		_, err := adapter.Evaluate(ctx, ws, tag, adapter.EvalOptions{DatasetID: tc.id})
		if err == nil || !strings.Contains(err.Error(), "pass --dataset") {
			t.Errorf("%s: got %v, want an error naming --dataset", tc.name, err)
		}
	}
}

// TestActivateForcedNotes checks the performance notes of an adapter
// activated with --force before any evaluation.
func TestActivateForcedNotes(t *testing.T) {
	_, ws := newWorkspace(t)
	ctx := context.Background()
	tag := register(t, ws, dataset.Scope, 0, "outside")
	if _, err := adapter.Activate(ctx, ws, tag, true); err != nil {
		t.Fatal(err)
	}
	entries, err := adapter.List(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Notes != "activated with --force" {
		t.Errorf("got %+v, want one entry noted \"activated with --force\"", entries)
	}
}

// TestActivateNeedsTheModel checks that neither activate nor rollback
// lets a stage run on an adapter's tag the server no longer has (removed
// with 'ollama rm', or base_url now names another server): every call of
// the stage would fail.
func TestActivateNeedsTheModel(t *testing.T) {
	s, ws := newWorkspace(t)
	ctx := context.Background()
	v1 := register(t, ws, dataset.Scope, 0, "v1")
	v2 := register(t, ws, dataset.Scope, 0, "v2")
	for _, tag := range []string{v1, v2} {
		if _, err := adapter.Activate(ctx, ws, tag, true); err != nil {
			t.Fatal(err)
		}
	}
	s.SetModels("coder:3b", "thinker:4b", v2) // v1 is gone
	if _, err := adapter.Activate(ctx, ws, v1, true); err == nil || !strings.Contains(err.Error(), "has no model "+v1) || !strings.Contains(err.Error(), "cra adapters register") {
		t.Errorf("activate a tag the server lacks: got %v, want a refusal naming the tag and the fix", err)
	}
	if _, _, err := adapter.Rollback(ctx, ws, dataset.Scope); err == nil || !strings.Contains(err.Error(), "has no model "+v1) {
		t.Errorf("roll back to a tag the server lacks: got %v, want a refusal naming the tag", err)
	}
	entries, err := adapter.List(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Active != (e.Tag == v2) {
			t.Errorf("%s: active %v after the refusals, want only %s active", e.Tag, e.Active, v2)
		}
	}
}

// TestEvaluateNeedsTheModel checks that evaluating an adapter whose tag
// the server no longer has says so before any call, instead of a model
// call failing with Ollama's "try pulling it first".
func TestEvaluateNeedsTheModel(t *testing.T) {
	s, ws := newWorkspace(t)
	ctx := context.Background()
	ds := recordDataset(t, ws, dataset.Scope, scopeRecords())
	tag := register(t, ws, dataset.Scope, ds, "gone")
	s.SetModels("coder:3b", "thinker:4b")
	if _, err := adapter.Evaluate(ctx, ws, tag, adapter.EvalOptions{}); err == nil || !strings.Contains(err.Error(), "has no model "+tag) {
		t.Errorf("got %v, want a refusal naming the missing tag", err)
	}
	if n := len(s.ChatRequests()); n != 0 {
		t.Errorf("got %d model calls, want none", n)
	}
}

// TestRegisterRecordFails checks a register whose model was created but
// whose registry row could not be written: the error says how to retry
// cleanly, and the retry under the same tag then works.
func TestRegisterRecordFails(t *testing.T) {
	s, ws := newWorkspace(t)
	ctx := context.Background()
	db, err := store.NewFactory(statedir.At(ws.StateDir)).Open(ctx, store.Raw, "", false)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TRIGGER full BEFORE INSERT ON adapter_registry BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "adapter.gguf")
	write(t, path, "GGUF scope lora")
	opts := adapter.RegisterOptions{Stage: dataset.Scope, BaseModel: dataset.Reasoning, Path: path}
	_, err = adapter.Register(ctx, ws, opts)
	if err == nil || !strings.Contains(err.Error(), "disk is full") || !strings.Contains(err.Error(), "ollama rm thinker:4b-scope-v1") {
		t.Fatalf("got %v, want the database's error and 'ollama rm thinker:4b-scope-v1'", err)
	}
	// The user frees the disk and removes the model, as told.
	if _, err := db.ExecContext(ctx, `DROP TRIGGER full`); err != nil {
		t.Fatal(err)
	}
	s.SetModels("coder:3b", "thinker:4b")
	reg, err := adapter.Register(ctx, ws, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := reg.Adapter.ModelTag, "thinker:4b-scope-v1"; got != want {
		t.Errorf("retry: got tag %s, want %s", got, want)
	}
}

// TestEvaluateBaselineIsNotTheAdapter checks that an evaluation never
// compares an adapter with itself: a [models.overrides] entry naming the
// adapter is passed over for the baseline, and a role model naming it is
// refused with the fix.
func TestEvaluateBaselineIsNotTheAdapter(t *testing.T) {
	s, ws := newWorkspace(t)
	ctx := context.Background()
	ds := recordDataset(t, ws, dataset.Scope, scopeRecords())
	tag := register(t, ws, dataset.Scope, ds, "lora")
	s.On(llmtest.Model(tag), llmtest.Text(goodScope))
	s.On(llmtest.Model("thinker:4b"), llmtest.Text(badScope))

	ws.Config.Models.Overrides = map[string]string{dataset.Scope: tag}
	ev, err := adapter.Evaluate(ctx, ws, tag, adapter.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Baseline.Model != "thinker:4b" || ev.Baseline.Source != "role" {
		t.Errorf("baseline with an override naming the adapter: got %s (%s), want thinker:4b (role)", ev.Baseline.Model, ev.Baseline.Source)
	}
	if !ev.Better || ev.Adapter.Score <= ev.Baseline.Score {
		t.Errorf("got %s, want the adapter to beat the role's model", ev.Summary())
	}
	// The gate compares against the same baseline, so the evaluation holds.
	act, err := adapter.Activate(ctx, ws, tag, false)
	if err != nil {
		t.Fatalf("activate after the evaluation: %v", err)
	}
	if act.Overridden != "" {
		t.Errorf("overridden: got %q, want none: the override names the adapter itself", act.Overridden)
	}

	ws.Config.Models.Overrides = nil
	ws.Config.Models.Reasoning = tag
	calls := len(s.ChatRequests())
	if _, err := adapter.Evaluate(ctx, ws, tag, adapter.EvalOptions{}); err == nil ||
		!strings.Contains(err.Error(), "itself") || !strings.Contains(err.Error(), "models.reasoning") {
		t.Errorf("role model naming the adapter: got %v, want a refusal naming models.reasoning", err)
	}
	if n := len(s.ChatRequests()) - calls; n != 0 {
		t.Errorf("%d model calls for a refused evaluation, want none", n)
	}
}

// TestRegisterWaitsForThePull registers an adapter FROM a base model the
// server must pull first, which takes longer than models.timeout: the
// create is bounded by the caller alone. A register given up during the
// pull records nothing and says what to check.
func TestRegisterWaitsForThePull(t *testing.T) {
	s, ws := newWorkspace(t)
	s.SetModels("coder:3b")
	s.SetPullable(time.Second, "thinker:4b")
	ws.Config.Models.Timeout = "200ms"
	path := filepath.Join(t.TempDir(), "adapter.gguf")
	write(t, path, "GGUF scope lora")
	var progress []string
	reg, err := adapter.Register(context.Background(), ws, adapter.RegisterOptions{Stage: dataset.Scope, BaseModel: dataset.Reasoning,
		Path: path, Progress: func(s string) { progress = append(progress, s) }})
	if err != nil {
		t.Fatalf("register with a pull longer than models.timeout: %v", err)
	}
	if reg.Adapter.ModelTag != "thinker:4b-scope-v1" || len(progress) == 0 || progress[0] != "pulling manifest" {
		t.Errorf("got %s after %q, want thinker:4b-scope-v1 after the pull", reg.Adapter.ModelTag, progress)
	}

	s.SetPullable(time.Hour, "coder:3b-big")
	ws.Config.Models.Coding = "coder:3b-big"
	ctx, cancel := context.WithCancel(context.Background())
	_, err = adapter.Register(ctx, ws, adapter.RegisterOptions{Stage: dataset.ExecuteCode, BaseModel: dataset.Coding,
		Path: path, Progress: func(string) { cancel() }})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted") || !strings.Contains(err.Error(), "ollama rm coder:3b-big-execute_code-v1") {
		t.Errorf("register interrupted during the pull: got %v, want an interruption naming the cleanup", err)
	}
	entries, err := adapter.List(context.Background(), ws)
	if err != nil || len(entries) != 1 {
		t.Errorf("after the interrupted register: got %+v, %v; want only the first adapter", entries, err)
	}
}

// TestRegisterConcurrently runs two registers of one stage at once, each
// slow in its create: both succeed, under different default tags, and the
// server keeps both models.
func TestRegisterConcurrently(t *testing.T) {
	s, ws := newWorkspace(t)
	registerConcurrently(t, s, [2]*workspace.Workspace{ws, ws})
	entries, err := adapter.List(context.Background(), ws)
	if err != nil || len(entries) != 2 || entries[0].Tag == entries[1].Tag {
		t.Errorf("registry: got %+v, %v; want two adapters with their own tags", entries, err)
	}
}

func TestRegisterConcurrentlyTwoRepositories(t *testing.T) {
	// Two repositories on one server: each registry is its own, the
	// server's models are shared, and Ollama's create replaces a model
	// of the same name.
	s, a := newWorkspace(t)
	registerConcurrently(t, s, [2]*workspace.Workspace{a, workspaceOn(t, s)})
}

// TestRegisterConcurrentlyServerSpellings: two repositories that name
// one server differently (127.0.0.1 and localhost) still take turns.
func TestRegisterConcurrentlyServerSpellings(t *testing.T) {
	s, a := newWorkspace(t)
	b := workspaceOn(t, s)
	b.Config.Models.BaseURL = strings.Replace(s.OllamaURL(), "127.0.0.1", "localhost", 1) + "/"
	if b.Config.Models.BaseURL == s.OllamaURL()+"/" {
		t.Fatalf("the fake server's URL %s names no 127.0.0.1 to spell otherwise", s.OllamaURL())
	}
	registerConcurrently(t, s, [2]*workspace.Workspace{a, b})
}

// TestRegisterWaitsOnce: a register that finds its repository's lock
// taken, and then the server's, says it is waiting once, not once per lock.
func TestRegisterWaitsOnce(t *testing.T) {
	s, a := newWorkspace(t)
	b := workspaceOn(t, s)
	s.SetModels("coder:3b")
	s.SetPullable(time.Second, "thinker:4b")
	ctx := context.Background()

	// b's register holds the server's lock through its pull.
	pulling := make(chan struct{})
	var once sync.Once
	bDone := make(chan error, 1)
	pathB := filepath.Join(t.TempDir(), "adapter.gguf")
	write(t, pathB, "GGUF scope lora b")
	go func() {
		_, err := adapter.Register(ctx, b, adapter.RegisterOptions{Stage: dataset.Scope, BaseModel: dataset.Reasoning, Path: pathB,
			Progress: func(string) { once.Do(func() { close(pulling) }) }})
		bDone <- err
	}()
	<-pulling

	// a's repository lock is held by another register of a's.
	held, err := flock.Lock(ctx, filepath.Join(a.StateDir, "adapters.lock"), true)
	if err != nil {
		t.Fatal(err)
	}
	var waits atomic.Int32
	path := filepath.Join(t.TempDir(), "adapter.gguf")
	write(t, path, "GGUF scope lora a")
	aDone := make(chan error, 1)
	go func() {
		_, err := adapter.Register(ctx, a, adapter.RegisterOptions{Stage: dataset.Scope, BaseModel: dataset.Reasoning, Path: path,
			Waiting: func() {
				if waits.Add(1) == 1 {
					held.Close() // the repository's turn comes; the server's is b's still
				}
			}})
		aDone <- err
	}()
	if err := <-bDone; err != nil {
		t.Fatalf("register b: %v", err)
	}
	if err := <-aDone; err != nil {
		t.Fatalf("register a: %v", err)
	}
	if n := waits.Load(); n != 1 {
		t.Errorf("waiting said %d times, want once", n)
	}
}

// registerConcurrently registers an adapter in each workspace at once,
// while the server pulls the base model, and checks that they got two
// tags and the server two models.
func registerConcurrently(t *testing.T, s *llmtest.Server, wss [2]*workspace.Workspace) {
	t.Helper()
	s.SetModels("coder:3b")
	s.SetPullable(300*time.Millisecond, "thinker:4b")
	var tags [2]string
	var errs [2]error
	done := make(chan int)
	for i := range tags {
		path := filepath.Join(t.TempDir(), "adapter.gguf")
		write(t, path, "GGUF scope lora "+string(rune('a'+i)))
		go func() {
			defer func() { done <- i }()
			reg, err := adapter.Register(context.Background(), wss[i], adapter.RegisterOptions{Stage: dataset.Scope, BaseModel: dataset.Reasoning, Path: path})
			if errs[i] = err; err == nil {
				tags[i] = reg.Adapter.ModelTag
			}
		}()
	}
	<-done
	<-done
	for i, err := range errs {
		if err != nil {
			t.Fatalf("register %d: %v", i, err)
		}
	}
	if tags[0] == tags[1] {
		t.Errorf("both registers chose %s, want two tags", tags[0])
	}
	if created := s.Created(); len(created) != 2 || created[0].Model == created[1].Model {
		t.Errorf("creates: got %+v, want two models", created)
	}
}

// newIndex closes ws, replaces its index by a new one, as an index removed
// by hand is, and opens the repository again.
func newIndex(t *testing.T, ws *workspace.Workspace) *workspace.Workspace {
	t.Helper()
	ctx := context.Background()
	root, state := ws.Root, ws.StateDir
	ws.Close()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(filepath.Join(state, "curated.sqlite"+suffix))
	}
	if _, err := index.NewBuilderIn(state).Run(ctx, root); err != nil {
		t.Fatal(err)
	}
	ws2, err := workspace.Open(ctx, root, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws2.Close() })
	return ws2
}

// TestDeactivateBeforeRestore: on a new index that the restore has not
// given the adapter back yet, deactivating clears raw.sqlite's mark, so
// the next 'cra index' does not turn the stage's adapter back on.
func TestDeactivateBeforeRestore(t *testing.T) {
	_, ws := newWorkspace(t)
	ctx := context.Background()
	tag := register(t, ws, dataset.Scope, 0, "scope lora")
	if _, err := adapter.Activate(ctx, ws, tag, true); err != nil {
		t.Fatal(err)
	}
	ws = newIndex(t, ws)
	if err := adapter.Deactivate(ctx, ws, tag); err != nil {
		t.Fatalf("deactivate before the restore: %v", err)
	}
	if restored, err := adapter.Restore(ctx, ws); err != nil || len(restored) != 0 {
		t.Errorf("restore after the deactivation: got %v, %v, want nothing restored", restored, err)
	}
	if err := adapter.Deactivate(ctx, ws, tag); err == nil || !strings.Contains(err.Error(), "is not active") {
		t.Errorf("deactivating it again: got %v, want 'is not active'", err)
	}
}

// TestRestoreNothingTakesNoLock: with the active adapters in the index
// already, a restore has nothing to do and does not wait for the index's
// write lock (held here as a long 'cra index' holds it).
func TestRestoreNothingTakesNoLock(t *testing.T) {
	_, ws := newWorkspace(t)
	ctx := context.Background()
	tag := register(t, ws, dataset.Scope, 0, "scope lora")
	if _, err := adapter.Activate(ctx, ws, tag, true); err != nil {
		t.Fatal(err)
	}
	lk, err := index.Lock(ctx, ws.StateDir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	bounded, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if restored, err := adapter.Restore(bounded, ws); err != nil || len(restored) != 0 {
		t.Errorf("got %v, %v, want nothing restored and no wait for the index lock", restored, err)
	}
}
