package train

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/dataset"
	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/llm/llmtest"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
)

func openCorpus(t *testing.T) *corpus.Corpus {
	t.Helper()
	db, err := store.NewFactory(statedir.At(t.TempDir())).Open(context.Background(), store.Raw, "", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c := corpus.New(db)
	var tick int
	c.Now = func() time.Time { tick++; return time.Date(2024, 3, 5, 12, 0, tick, 0, time.UTC) }
	return c
}

// logRun records a run of mode with one call per stage given, through the
// corpus's writers, and its outcome.
func logRun(t *testing.T, c *corpus.Corpus, task, mode string, ok bool, stages ...string) {
	t.Helper()
	ctx := context.Background()
	id, err := c.StartRun(ctx, corpus.TaskRun{TaskID: task, Repo: "/r", Mode: mode, ExecuteModel: "m", ContextWindow: 8192, ReservedTokens: 1024, Stages: "scope"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stages {
		call := corpus.Call{TaskID: task, Role: "reasoning", Stage: s, Provider: "ollama", Model: "m",
			System: s + " system", Prompt: task + " asks " + s, Response: task + " answers " + s}
		switch s {
		case dataset.Scope, dataset.Precision:
			call.Type = s + "_judgment"
			_, err = c.AddRetrievalCall(ctx, call)
			if err == nil {
				err = c.LogDecisions(ctx, task, []corpus.Decision{{Stage: s, FileID: 1, Included: true}})
			}
		default:
			call.Type = s
			_, err = c.AddCall(ctx, call)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := c.FinishRun(ctx, id, corpus.RunOutcome{Success: ok}); err != nil {
		t.Fatal(err)
	}
}

// bootstrapped writes a synthetic dataset of stage with n examples, as a
// bootstrap records one: a plan of source synthetic, the files, the row.
func bootstrapped(t *testing.T, c *corpus.Corpus, root, stage string, n int) int64 {
	t.Helper()
	ctx := context.Background()
	plan, err := c.RecordPlan(ctx, corpus.Plan{TaskID: "boot", TargetStage: stage, BaseModel: dataset.BaseModel(stage),
		Source: corpus.SourceSynthetic, DataCriteria: `{"commits":"all"}`, RawPlan: "bootstrap"})
	if err != nil {
		t.Fatal(err)
	}
	var recs []dataset.Record
	for i := range n {
		recs = append(recs, dataset.Record{Example: dataset.Chat("sys", "synthetic task "+string(rune('a'+i)), "synthetic answer"),
			Meta: dataset.Meta{Stage: stage, Source: corpus.SourceSynthetic, Positive: true, Date: time.Date(2023, 1, i+1, 0, 0, 0, 0, time.UTC)}})
	}
	sum, err := dataset.Write(filepath.Join(root, "boot"), stage, recs, 0)
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.RecordDataset(ctx, corpus.Dataset{PlanID: plan, Stage: stage, BaseModel: dataset.BaseModel(stage), Source: corpus.SourceSynthetic,
		Path: sum.Dir, Examples: sum.Examples(), Positive: sum.Positive, Negative: sum.Negative})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestGatherPreflight(t *testing.T) {
	ctx := context.Background()
	c := openCorpus(t)
	if _, err := Gather(ctx, c, corpus.SourceLogged, AnalysisStages, ""); !errors.Is(err, ErrNoRuns) {
		t.Errorf("logged, empty: got %v, want ErrNoRuns", err)
	}
	if _, err := Gather(ctx, c, corpus.SourceSynthetic, AnalysisStages, ""); !errors.Is(err, ErrNoSynthetic) {
		t.Errorf("synthetic, empty: got %v, want ErrNoSynthetic", err)
	}
	for _, name := range []string{"cra solve", "cra bootstrap"} {
		if !strings.Contains(ErrNoRuns.Error(), name) {
			t.Errorf("ErrNoRuns does not name %s", name)
		}
	}
	// A standalone retrieval is logged but links no stage to an outcome.
	logRun(t, c, "R", "retrieve", true, dataset.Scope)
	if _, err := Gather(ctx, c, corpus.SourceLogged, AnalysisStages, ""); err == nil || !strings.Contains(err.Error(), "link no pipeline stage") {
		t.Errorf("retrievals only: got %v", err)
	}
	if _, err := Gather(ctx, c, corpus.SourceLogged, []string{FailurePatterns}, ""); err == nil || !strings.Contains(err.Error(), "lack stage_rates") {
		t.Errorf("no stage_rates, no target: got %v", err)
	}
	e, err := Gather(ctx, c, corpus.SourceLogged, []string{FailurePatterns}, dataset.Scope)
	if err != nil || e.Weakest != dataset.Scope || !e.pinned {
		t.Errorf("target: got %+v, %v", e, err)
	}
}

func TestGatherWeakest(t *testing.T) {
	ctx := context.Background()
	c := openCorpus(t)
	logRun(t, c, "A.r1", "implement", true, dataset.Scope, dataset.ExecuteCode)
	logRun(t, c, "A.r2", "implement", false, dataset.ExecuteCode)
	logRun(t, c, "B.r1", "implement", false, dataset.Scope, dataset.Precision, dataset.ExecuteCode)
	logRun(t, c, "P.r1", "plan", true, dataset.ExecutePlan)
	e, err := Gather(ctx, c, corpus.SourceLogged, AnalysisStages, "")
	if err != nil {
		t.Fatal(err)
	}
	// precision 0/1 is lower than execute_code 1/3 and scope 1/2.
	if e.Weakest != dataset.Precision || e.Baseline != 0 {
		t.Errorf("weakest: got %s (%v), want precision (0)", e.Weakest, e.Baseline)
	}
	if want := "lowest run success rate: precision served 1 run(s) with an outcome, 0 succeeded (0%); 1 call(s), 0 failed"; e.Why != want {
		t.Errorf("why: got %q, want %q", e.Why, want)
	}
	if diff := cmp.Diff([]string{dataset.Precision, dataset.Scope, dataset.ExecutePlan, dataset.ExecuteCode}, e.candidates()); diff != "" {
		t.Errorf("candidates (-want +got):\n%s", diff)
	}
	p, err := e.Prompt(4000)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"execute_code | 3 | 0 | 3 | 1 | 0.33", "precision | 1 | 0 | 1 | 0 | 0.00", "scope | 2 | 0 | 2 | 1 | 0.50",
		`"target_stage": one of "precision", "scope", "execute_plan", "execute_code"`} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
	if _, err := e.Prompt(50); err == nil || !strings.Contains(err.Error(), "raise --context-window") {
		t.Errorf("tiny budget: got %v", err)
	}
}

// TestGatherSyntheticRerun: a stage bootstrapped twice (a rerun with
// --force derives the same pairs again) counts its newest dataset, the
// one curate-data mixes in, not both.
func TestGatherSyntheticRerun(t *testing.T) {
	ctx := context.Background()
	c := openCorpus(t)
	bootstrapped(t, c, t.TempDir(), dataset.Scope, 3)
	bootstrapped(t, c, t.TempDir(), dataset.Scope, 4)
	e, err := Gather(ctx, c, corpus.SourceSynthetic, AnalysisStages, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Synthetic[dataset.Scope]; got != 4 {
		t.Errorf("scope examples: got %d, want the newest run's 4", got)
	}
	if _, from, err := synthetic(ctx, c, dataset.Scope); err != nil || from == 0 {
		t.Fatalf("synthetic: %v", err)
	} else if ds, _ := c.Datasets(ctx, dataset.Scope); ds[0].ID != from || ds[0].Examples != 4 {
		t.Errorf("curate-data mixes dataset %d; want the newest, which Gather counted", from)
	}
}

// TestGatherChoosesSource: without a source, an empty database is
// ErrNoRuns; bootstrapped data alone is planned from, saying it was
// chosen; logged runs win over bootstrapped data.
func TestGatherChoosesSource(t *testing.T) {
	ctx := context.Background()
	c := openCorpus(t)
	if _, err := Gather(ctx, c, "", AnalysisStages, ""); !errors.Is(err, ErrNoRuns) {
		t.Errorf("empty: got %v, want ErrNoRuns", err)
	}
	bootstrapped(t, c, t.TempDir(), dataset.Scope, 3)
	e, err := Gather(ctx, c, "", AnalysisStages, "")
	if err != nil || e.Source != corpus.SourceSynthetic || !e.Chosen || e.Weakest != dataset.Scope {
		t.Fatalf("bootstrapped only: got %+v, %v; want synthetic, chosen, scope", e, err)
	}
	if _, err := Gather(ctx, c, corpus.SourceLogged, AnalysisStages, ""); !errors.Is(err, ErrNoRuns) {
		t.Errorf("logged asked for, bootstrapped only: got %v, want ErrNoRuns", err)
	}
	logRun(t, c, "A.r1", "implement", true, dataset.ExecuteCode)
	if e, err := Gather(ctx, c, "", AnalysisStages, ""); err != nil || e.Source != corpus.SourceLogged || e.Chosen {
		t.Errorf("logged runs too: got %+v, %v; want logged, not chosen", e, err)
	}
}

func TestGatherSynthetic(t *testing.T) {
	ctx := context.Background()
	c := openCorpus(t)
	root := t.TempDir()
	bootstrapped(t, c, root, dataset.Scope, 3)
	bootstrapped(t, c, root, dataset.ExecuteCode, 5)
	e, err := Gather(ctx, c, corpus.SourceSynthetic, AnalysisStages, "")
	if err != nil {
		t.Fatal(err)
	}
	if e.Weakest != dataset.ExecuteCode || !strings.Contains(e.Why, "most bootstrapped examples (5)") {
		t.Errorf("got %s (%s), want execute_code for its 5 examples", e.Weakest, e.Why)
	}
	if diff := cmp.Diff(map[string]int{dataset.Scope: 3, dataset.ExecuteCode: 5}, e.Synthetic); diff != "" {
		t.Errorf("synthetic counts (-want +got):\n%s", diff)
	}
	pl := (&Planner{ContextWindow: 4096}).Fallback(e)
	if !pl.Fallback || pl.Stage != dataset.ExecuteCode || !pl.Data.MixSynthetic || pl.Source != corpus.SourceSynthetic {
		t.Errorf("fallback: got %+v", pl)
	}
}

func TestDraft(t *testing.T) {
	ctx := context.Background()
	c := openCorpus(t)
	logRun(t, c, "A.r1", "implement", false, dataset.ExecuteCode)
	e, err := Gather(ctx, c, corpus.SourceLogged, AnalysisStages, "")
	if err != nil {
		t.Fatal(err)
	}
	good := `{"target_stage":"execute_code","rationale":"0 of 1 runs succeeded.","include_negatives":true,"mix_synthetic":false,` +
		`"max_examples":50,"iters":200,"learning_rate":0.0003,"lora_rank":4,"target_success_rate":0.4}`
	for _, tc := range []struct {
		name     string
		replies  []string
		fallback bool
		problems int
	}{
		{"first reply", []string{"```json\n" + good + "\n```"}, false, 0},
		{"after one retry", []string{`{"target_stage":"execute_code"}`, good}, false, 1},
		{"fallback", []string{"no", "still no"}, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := llmtest.NewServer(t)
			for _, r := range tc.replies {
				s.Enqueue(llmtest.Text(r))
			}
			m, err := llm.New(llm.ModelConfig{Role: llm.RoleReasoning, Provider: llm.ProviderOllama, Model: "thinker", BaseURL: s.OllamaURL(),
				ContextWindow: 8192, MaxTokens: 1024, Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			p := &Planner{Model: m, PromptTokens: 6000, ReplyTokens: 512, ContextWindow: 8192}
			d, err := p.Draft(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			if d.Plan.Fallback != tc.fallback || len(d.Problems) != tc.problems {
				t.Fatalf("got fallback %v, problems %q", d.Plan.Fallback, d.Problems)
			}
			reqs := s.ChatRequests()
			if len(reqs) != len(tc.replies) {
				t.Errorf("%d requests, want %d", len(reqs), len(tc.replies))
			}
			if tc.problems > 0 && !strings.Contains(reqs[1].Prompt(), "That reply is not a valid plan: "+d.Problems[0]) {
				t.Errorf("the retry does not name the problem %q", d.Problems[0])
			}
			if !tc.fallback {
				want := Hyperparameters{Iters: 200, LearningRate: 0.0003, LoraRank: 4, LoraAlpha: 8, BatchSize: 4, MaxSeqLength: 8192}
				if diff := cmp.Diff(want, d.Plan.Hyper); diff != "" || !d.Plan.Data.IncludeNegatives || d.Plan.Targets.Target != 0.4 {
					t.Errorf("plan from the reply: %+v (-want +got hyper):\n%s", d.Plan, diff)
				}
				return
			}
			if !strings.HasPrefix(d.Raw, "fallback: ") || !strings.Contains(d.Raw, "still no") || d.Plan.Data.IncludeNegatives {
				t.Errorf("fallback: raw %q, plan %+v", d.Raw, d.Plan)
			}
			// Recorded and written, it reads back as it was.
			l := NewLayout(t.TempDir())
			path, err := Save(ctx, c, l, d, "tp-1")
			if err != nil {
				t.Fatal(err)
			}
			back, err := ReadPlan(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(d.Plan, back); diff != "" {
				t.Errorf("plan file round trip (-saved +read):\n%s", diff)
			}
			row, err := c.Plan(ctx, back.ID)
			if err != nil || row.TaskID != "tp-1" || row.RawPlan != d.Raw || !strings.Contains(row.DataCriteria, `"include_negatives":false`) ||
				!strings.Contains(row.Hyperparameters, `"lora_rank":8`) || !strings.Contains(row.ImprovementTargets, `"metric":"run_success_rate"`) {
				t.Errorf("row: %+v, %v", row, err)
			}
		})
	}
}

// goodPlan is a valid plan file.
const goodPlan = `id = 1
stage = "scope"
base_model = "reasoning"
source = "logged"
fallback = false
rationale = "x"

[data]
include_negatives = true
max_negative_share = 0.5
with_decisions = true
max_examples = 100
mix_synthetic = true
synthetic_share = 0.5
valid_share = 0.2

[hyperparameters]
iters = 100
learning_rate = 1e-4
lora_rank = 8
lora_alpha = 16
batch_size = 2
max_seq_length = 4096

[targets]
metric = "run_success_rate"
baseline = 0.5
target = 0.6
`

func TestParsePlanErrors(t *testing.T) {
	if _, err := ParsePlan("p.toml", []byte(goodPlan)); err != nil {
		t.Fatalf("good plan: %v", err)
	}
	for _, tc := range []struct{ old, new, want string }{
		{`stage = "scope"`, `stage = "deploy"`, `stage is "deploy": use one of task_analysis`},
		{`lora_rank = 8`, `lora_rank = 7`, "hyperparameters.lora_rank is 7: use one of 4, 8, 16, 32, 64"},
		{`lora_rank = 8`, `lora_rank = "8"`, "fix the value's type"},
		{`max_examples = 100`, ``, "missing key data.max_examples: add it back"},
		{`iters = 100`, "iters = 100\nepochs = 3", "unknown key hyperparameters.epochs: remove it"},
		{`max_negative_share = 0.5`, `max_negative_share = 1.0`, "data.max_negative_share is 1: use a number from 0 up to"},
		{`max_negative_share = 0.5`, `max_negative_share = 0.0`, "data.max_negative_share is 0 with include_negatives = true"},
		{`learning_rate = 1e-4`, `learning_rate = nan`, "hyperparameters.learning_rate is NaN"},
		{`target = 0.6`, `target = 6`, "targets.target is 6: use a share from 0 to 1"},
		{`id = 1`, `id = 1 x`, "line 1:"},
		{`source = "logged"`, `source = "mined"`, `source is "mined": use "logged" or "synthetic"`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			_, err := ParsePlan("p.toml", []byte(strings.Replace(goodPlan, tc.old, tc.new, 1)))
			if !errors.Is(err, ErrPlanFile) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an ErrPlanFile containing %q", err, tc.want)
			}
		})
	}
}

func TestParseReply(t *testing.T) {
	stages := []string{"scope", "execute_code"}
	good := `{"target_stage":"scope","rationale":"r","include_negatives":false,"mix_synthetic":true,"max_examples":10,"iters":100,"learning_rate":0.0001,"lora_rank":8,"target_success_rate":0.7}`
	r, err := ParseReply("<think>hm</think>\n"+good, stages)
	if err != nil || r.TargetStage != "scope" || r.LoraRank != 8 || !r.MixSynthetic {
		t.Fatalf("good reply: got %+v, %v", r, err)
	}
	for _, tc := range []struct{ reply, want string }{
		{"I'd train scope.", "no JSON object"},
		{strings.Replace(good, `"lora_rank":8`, `"lora_rank":8,"epochs":2`, 1), `unknown key "epochs"`},
		{strings.Replace(good, `"rationale":"r",`, ``, 1), `missing key "rationale"`},
		{strings.Replace(good, `"rationale":"r"`, `"rationale":null`, 1), `missing key "rationale"`},
		{strings.Replace(good, `"scope"`, `"precision"`, 1), `target_stage "precision" is not one of "scope", "execute_code"`},
		{strings.Replace(good, `"iters":100`, `"iters":"100"`, 1), "iters must be an integer, not a JSON string"},
		{strings.Replace(good, `"iters":100`, `"iters":5`, 1), "iters 5 is out of range"},
		{strings.Replace(good, `0.0001`, `0.5`, 1), "learning_rate 0.5 is out of range"},
		{strings.Replace(good, `"lora_rank":8`, `"lora_rank":3`, 1), "lora_rank 3 is not one of"},
		{strings.Replace(good, `0.7`, `70`, 1), "target_success_rate 70 is out of range"},
		{strings.Replace(good, `"rationale":"r"`, `"rationale":"  "`, 1), "rationale is empty"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if _, err := ParseReply(tc.reply, stages); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// FuzzParseReply: any reply either parses into a plan within the bounds
// or is refused with an error; never a panic, never an out-of-range value.
func FuzzParseReply(f *testing.F) {
	f.Add(`{"target_stage":"scope","rationale":"r","include_negatives":false,"mix_synthetic":true,"max_examples":10,"iters":100,"learning_rate":0.0001,"lora_rank":8,"target_success_rate":0.7}`)
	f.Add(`{"target_stage":"execute_code","rationale":"` + strings.Repeat("é", 1500) + `","include_negatives":true,"mix_synthetic":false,"max_examples":1,"iters":10,"learning_rate":0.01,"lora_rank":64,"target_success_rate":1}`)
	f.Add("```json\n{\"target_stage\": \"scope\",}\n```")
	f.Add(`<think>{"x":1}</think>{"iters": 1e400}`)
	f.Add(`{"learning_rate": -0, "lora_rank": 8.0}`)
	f.Add("")
	stages := []string{"scope", "execute_code"}
	f.Fuzz(func(t *testing.T, reply string) {
		r, err := ParseReply(reply, stages)
		if err != nil {
			if r != nil {
				t.Fatal("a refused reply returned a plan")
			}
			return
		}
		pl := (&Planner{ContextWindow: 4096}).fromReply(&Evidence{Weakest: "scope", Source: corpus.SourceLogged}, r)
		pl.ID = 1
		if err := pl.Check(); err != nil {
			t.Fatalf("a reply that parsed made an invalid plan: %v\nreply: %q", err, reply)
		}
		if len(r.Rationale) > maxRationale+len("…") {
			t.Fatalf("rationale of %d bytes kept", len(r.Rationale))
		}
	})
}

// FuzzParsePlan: a plan file either reads into a plan that passes Check
// and encodes to a file that reads back the same, or is an ErrPlanFile.
func FuzzParsePlan(f *testing.F) {
	f.Add(goodPlan)
	f.Add(strings.Replace(goodPlan, "lora_rank = 8", "lora_rank = 9", 1))
	f.Add("id = 1\n[data]\n[data]\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, text string) {
		p, err := ParsePlan("p.toml", []byte(text))
		if err != nil {
			if !errors.Is(err, ErrPlanFile) {
				t.Fatalf("error without ErrPlanFile: %v", err)
			}
			return
		}
		data, err := p.Encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParsePlan("p.toml", data)
		if err != nil {
			t.Fatalf("an encoded plan does not read back: %v\n%s", err, data)
		}
		if diff := cmp.Diff(p, back); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
	})
}

func TestCurate(t *testing.T) {
	ctx := context.Background()
	c := openCorpus(t)
	l := NewLayout(t.TempDir())
	logRun(t, c, "A.r1", "implement", true, dataset.Scope)
	logRun(t, c, "A.r2", "implement", true, dataset.Scope)
	logRun(t, c, "B.r1", "implement", false, dataset.Scope)
	logRun(t, c, "C.r1", "implement", false, dataset.Scope)
	logRun(t, c, "R", "retrieve", true, dataset.Scope) // no outcome: neither
	syn := bootstrapped(t, c, l.Root, dataset.Scope, 4)
	p := recordedPlan(t, c)
	p.Data.MaxNegativeShare = 1.0 / 3 // one negative for two positives
	res, err := Curate(ctx, c, l, p, time.Date(2024, 3, 6, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	// 2 positives, 1 negative (the newer), synthetic up to the logged
	// count at share 0.5: the 3 of its training split, its validation
	// example left out (an adapter evaluated on it must not have seen it).
	if res.Positive != 2 || res.Negative != 1 || res.Synthetic != 3 || res.SyntheticFrom != syn ||
		res.Skipped[SkipNegShare] != 1 || res.Skipped[SkipSynthShare] != 0 {
		t.Errorf("got %+v", res)
	}
	if res.Summary.Examples() != 6 || res.Summary.Valid != 1 {
		t.Errorf("summary: %+v", res.Summary)
	}
	recs, err := dataset.Read(res.Dir, dataset.Train)
	if err != nil {
		t.Fatal(err)
	}
	var logged []string
	for _, r := range recs {
		if r.Meta.Source == corpus.SourceLogged {
			m := r.Example.Messages
			if len(m) != 3 || m[0].Content != "scope system" || m[1].Content != r.Meta.TaskID+" asks scope" || m[2].Content != r.Meta.TaskID+" answers scope" {
				t.Errorf("example not as the model saw it: %+v", r)
			}
			logged = append(logged, r.Meta.TaskID)
		}
	}
	d, err := c.Dataset(ctx, res.DatasetID)
	if err != nil || d.PlanID != p.ID || d.Source != corpus.SourceLogged || d.Path != res.Dir || d.Examples != 6 || d.Positive != 5 || d.Negative != 1 {
		t.Errorf("row: %+v, %v", d, err)
	}

	// The trainer takes the hyperparameters of the plan as curated (the
	// row has none here), and writes configurations that are YAML.
	cfg := &config.Config{Models: &config.Models{Coding: "coder:3b", Reasoning: "qwen3:4b-instruct-2507"}}
	job, err := NewJob(ctx, c, l, cfg, res.DatasetID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p.Hyper, job.Plan.Hyper); diff != "" {
		t.Errorf("hyperparameters (-curated +job):\n%s", diff)
	}
	mlx, axo, err := job.WriteConfigs()
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Model        string  `yaml:"model"`
		Data         string  `yaml:"data"`
		AdapterPath  string  `yaml:"adapter_path"`
		Iters        int     `yaml:"iters"`
		LearningRate float64 `yaml:"learning_rate"`
		Lora         struct {
			Rank  int     `yaml:"rank"`
			Scale float64 `yaml:"scale"`
		} `yaml:"lora_parameters"`
	}
	readYAML(t, mlx, &m)
	if m.Model != "Qwen/Qwen3-4B-Instruct-2507" || m.Data != res.Dir || m.AdapterPath != job.Out() || m.Iters != 100 ||
		m.LearningRate != 1e-4 || m.Lora.Rank != 8 || m.Lora.Scale != 2 {
		t.Errorf("mlx-lm config: %+v", m)
	}
	var a struct {
		BaseModel string `yaml:"base_model"`
		Datasets  []struct {
			Path, Type string
		} `yaml:"datasets"`
		Adapter   string `yaml:"adapter"`
		LoraR     int    `yaml:"lora_r"`
		LoraAlpha int    `yaml:"lora_alpha"`
		MaxSteps  int    `yaml:"max_steps"`
		OutputDir string `yaml:"output_dir"`
	}
	readYAML(t, axo, &a)
	if a.BaseModel != m.Model || len(a.Datasets) != 1 || a.Datasets[0].Path != filepath.Join(res.Dir, dataset.TrainFile) ||
		a.Datasets[0].Type != "chat_template" || a.Adapter != "lora" || a.LoraR != 8 || a.LoraAlpha != 16 || a.MaxSteps != 100 || a.OutputDir != job.Out() {
		t.Errorf("axolotl config: %+v", a)
	}

	// A plan whose criteria select nothing writes and records nothing.
	p.Stage, p.BaseModel, p.Data.MixSynthetic = dataset.ExecutePlan, dataset.Reasoning, false
	before, _ := os.ReadDir(l.Datasets())
	if _, err := Curate(ctx, c, l, p, time.Now()); !errors.Is(err, ErrNoExamples) {
		t.Errorf("nothing selected: got %v, want ErrNoExamples", err)
	}
	after, _ := os.ReadDir(l.Datasets())
	if len(after) != len(before) {
		t.Errorf("%d dataset directories after a refused curation, want %d", len(after), len(before))
	}
	p.ID = 99
	if _, err := Curate(ctx, c, l, p, time.Now()); err == nil || !strings.Contains(err.Error(), "plan id 99 has no training_plans row") {
		t.Errorf("unknown plan: got %v", err)
	}
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, data)
	}
}

func TestBaseWeights(t *testing.T) {
	cfg := &config.Config{Models: &config.Models{Coding: "qwen2.5-coder:3b-instruct", Reasoning: "thinker:4b"}}
	w, err := BaseWeights(cfg, dataset.Coding)
	if err != nil || w != (Weights{ID: "Qwen/Qwen2.5-Coder-3B-Instruct", Tag: "qwen2.5-coder:3b-instruct", Known: true}) {
		t.Errorf("known tag: got %+v, %v", w, err)
	}
	w, err = BaseWeights(cfg, dataset.Reasoning)
	if err != nil || w != (Weights{ID: "thinker:4b", Tag: "thinker:4b"}) {
		t.Errorf("unknown tag: got %+v, %v", w, err)
	}
	cfg.Train = &config.Train{ReasoningHFModel: "org/thinker"}
	if w, _ = BaseWeights(cfg, dataset.Reasoning); w.ID != "org/thinker" || !w.Known {
		t.Errorf("configured: got %+v", w)
	}
	if _, err := BaseWeights(&config.Config{}, dataset.Coding); !errors.Is(err, config.ErrNoModels) {
		t.Errorf("no models: got %v", err)
	}
}

func TestFindAdapter(t *testing.T) {
	dir := t.TempDir()
	if _, err := FindAdapter(dir, nil); err == nil || !strings.Contains(err.Error(), "left no new adapter") {
		t.Errorf("empty: got %v", err)
	}
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	st := write("adapters.safetensors", "x")
	write("adapter_config.json", "{}")
	if got, err := FindAdapter(dir, nil); err != nil || got != st {
		t.Errorf("safetensors: got %q, %v", got, err)
	}
	gg := write("gguf/adapter.gguf", "x")
	if got, err := FindAdapter(dir, nil); err != nil || got != gg {
		t.Errorf("gguf first: got %q, %v", got, err)
	}
	before, err := adapterFiles(dir)
	if err != nil || len(before) != 2 {
		t.Fatalf("got %v, %v", before, err)
	}
	if _, err := FindAdapter(dir, before); err == nil {
		t.Error("files from before the run were taken")
	}
	write("adapters.safetensors", "retrained")
	if got, err := FindAdapter(dir, before); err != nil || got != st {
		t.Errorf("a rewritten file: got %q, %v", got, err)
	}
	if a, err := adapterFiles(filepath.Join(dir, "missing")); err != nil || len(a) != 0 {
		t.Errorf("missing dir: got %v, %v", a, err)
	}
}

// A dataset with no plan file beside it (a bootstrap's) takes its plan
// row's hyperparameters, the defaults where the row names none.
func TestNewJobTakesTheRowsHyperparameters(t *testing.T) {
	ctx := context.Background()
	c := openCorpus(t)
	planID, err := c.RecordPlan(ctx, corpus.Plan{TaskID: "boot", TargetStage: dataset.Scope, BaseModel: dataset.Reasoning,
		Source: corpus.SourceSynthetic, DataCriteria: "{}", Hyperparameters: `{"iters":250}`, RawPlan: "bootstrap"})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	recs := []dataset.Record{
		{Example: dataset.Chat("s", "u1", "a1"), Meta: dataset.Meta{Stage: dataset.Scope, Positive: true, Date: time.Unix(1, 0)}},
		{Example: dataset.Chat("s", "u2", "a2"), Meta: dataset.Meta{Stage: dataset.Scope, Positive: true, Date: time.Unix(2, 0)}},
	}
	sum, err := dataset.Write(root, dataset.Scope, recs, 0)
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.RecordDataset(ctx, corpus.Dataset{PlanID: planID, Stage: dataset.Scope, BaseModel: dataset.Reasoning,
		Source: corpus.SourceSynthetic, Path: sum.Dir, Examples: 2, Positive: 2})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Models: &config.Models{Coding: "coder:3b", Reasoning: "qwen3:4b-instruct-2507"}}
	job, err := NewJob(ctx, c, NewLayout(t.TempDir()), cfg, id)
	if err != nil {
		t.Fatal(err)
	}
	want := defaultHyper(4096)
	want.Iters = 250
	if diff := cmp.Diff(want, job.Plan.Hyper); diff != "" {
		t.Errorf("hyperparameters (-want +got):\n%s", diff)
	}
}

// TestCurateDuplicates: a call that repeats a logged one, and a
// bootstrapped example that repeats one, are both counted once each
// under SkipDuplicate, the one count curate-data prints.
func TestCurateDuplicates(t *testing.T) {
	ctx := context.Background()
	c := openCorpus(t)
	l := NewLayout(t.TempDir())
	logRun(t, c, "A", "implement", true, dataset.Scope)
	logRun(t, c, "B", "implement", true, dataset.Scope)
	// A.again's call is A's, word for word.
	id, err := c.StartRun(ctx, corpus.TaskRun{TaskID: "A.again", Repo: "/r", Mode: "implement", ExecuteModel: "m", ContextWindow: 8192, ReservedTokens: 1024, Stages: "scope"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddRetrievalCall(ctx, corpus.Call{TaskID: "A.again", Role: "reasoning", Stage: dataset.Scope, Type: "scope_judgment",
		Provider: "ollama", Model: "m", System: "scope system", Prompt: "A asks scope", Response: "A answers scope"}); err != nil {
		t.Fatal(err)
	}
	if err := c.LogDecisions(ctx, "A.again", []corpus.Decision{{Stage: dataset.Scope, FileID: 1, Included: true}}); err != nil {
		t.Fatal(err)
	}
	if err := c.FinishRun(ctx, id, corpus.RunOutcome{Success: true}); err != nil {
		t.Fatal(err)
	}
	// A bootstrapped dataset whose older example is B's call.
	plan, err := c.RecordPlan(ctx, corpus.Plan{TaskID: "boot", TargetStage: dataset.Scope, BaseModel: dataset.Reasoning,
		Source: corpus.SourceSynthetic, DataCriteria: "{}", RawPlan: "bootstrap"})
	if err != nil {
		t.Fatal(err)
	}
	syn := []dataset.Record{
		{Example: dataset.Chat("scope system", "B asks scope", "B answers scope"),
			Meta: dataset.Meta{Stage: dataset.Scope, Source: corpus.SourceSynthetic, Positive: true, Date: time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)}},
		{Example: dataset.Chat("sys", "synthetic task", "synthetic answer"),
			Meta: dataset.Meta{Stage: dataset.Scope, Source: corpus.SourceSynthetic, Positive: true, Date: time.Date(2023, 1, 2, 0, 0, 0, 0, time.UTC)}},
	}
	sum, err := dataset.Write(filepath.Join(l.Root, "boot"), dataset.Scope, syn, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RecordDataset(ctx, corpus.Dataset{PlanID: plan, Stage: dataset.Scope, BaseModel: dataset.Reasoning, Source: corpus.SourceSynthetic,
		Path: sum.Dir, Examples: sum.Examples(), Positive: sum.Positive}); err != nil {
		t.Fatal(err)
	}
	p := recordedPlan(t, c)
	res, err := Curate(ctx, c, l, p, time.Date(2024, 3, 6, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	// Logged: A and B (A.again repeats A); synthetic: B, its training
	// split (the other is its validation example); written: A and the
	// bootstrapped B (older than the logged B).
	if res.Logged != 2 || res.Synthetic != 1 || res.Summary.Examples() != 2 {
		t.Errorf("got %+v", res)
	}
	if got := res.Skipped[SkipDuplicate]; got != 2 {
		t.Errorf("got %d duplicates, want 2 (one among the logged calls, one across the sources)", got)
	}
}

// TestCurateLeavesOut: a conversation and an over-long call are left out
// and counted; beyond max_examples the newest are kept; a plan that
// leaves everything out says why.
func TestCurateLeavesOut(t *testing.T) {
	ctx := context.Background()
	c := openCorpus(t)
	l := NewLayout(t.TempDir())
	logCall := func(task, stage, prompt string) {
		t.Helper()
		id, err := c.StartRun(ctx, corpus.TaskRun{TaskID: task, Repo: "/r", Mode: "plan", ExecuteModel: "m", ContextWindow: 8192, ReservedTokens: 1024, Stages: "scope"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.AddCall(ctx, corpus.Call{TaskID: task, Role: "reasoning", Stage: stage, Type: stage, Provider: "ollama", Model: "m",
			System: "sys", Prompt: prompt, Response: task + " answers"}); err != nil {
			t.Fatal(err)
		}
		if err := c.FinishRun(ctx, id, corpus.RunOutcome{Success: true}); err != nil {
			t.Fatal(err)
		}
	}
	conversation := `[{"role":"user","content":"do it"},{"role":"assistant","content":"done"},{"role":"user","content":"again"}]`
	long := strings.Repeat("x", 4*256+1)
	for _, stage := range []string{dataset.ExecutePlan, dataset.TaskAnalysis} {
		logCall("C."+stage, stage, conversation)
		logCall("D."+stage, stage, long)
	}
	logCall("A", dataset.ExecutePlan, "A asks")
	logCall("B", dataset.ExecutePlan, "B asks")
	planID, err := c.RecordPlan(ctx, corpus.Plan{TaskID: "tp", TargetStage: dataset.ExecutePlan, BaseModel: "reasoning", DataCriteria: "{}", RawPlan: "x"})
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer("id = 1", "id = "+strconv.FormatInt(planID, 10), `stage = "scope"`, `stage = "execute_plan"`,
		"include_negatives = true", "include_negatives = false", "mix_synthetic = true", "mix_synthetic = false",
		"max_seq_length = 4096", "max_seq_length = 256").Replace(goodPlan)
	p, err := ParsePlan("p.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		max     int
		want    map[string]int
		wantIDs []string
	}{
		// Twice max_examples are read, newest first: A and B only.
		{"over max", 1, map[string]int{SkipOverMax: 1}, []string{"B"}},
		{"conversation and too long", 4, map[string]int{SkipConversation: 1, SkipTooLong: 1}, []string{"A", "B"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.Data.MaxExamples = tc.max
			res, err := Curate(ctx, c, l, p, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, res.Skipped); diff != "" {
				t.Errorf("skipped (-want +got):\n%s", diff)
			}
			var ids []string
			for _, split := range []dataset.Split{dataset.Train, dataset.Valid} {
				recs, err := dataset.Read(res.Dir, split)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range recs {
					ids = append(ids, r.Meta.TaskID)
				}
			}
			if diff := cmp.Diff(tc.wantIDs, ids); diff != "" {
				t.Errorf("examples (-want +got):\n%s", diff)
			}
		})
	}
	p.Stage = dataset.TaskAnalysis
	_, err = Curate(ctx, c, l, p, time.Now())
	if !errors.Is(err, ErrNoExamples) || !strings.Contains(err.Error(), "(left out: 1 conversation, 1 too long)") {
		t.Errorf("everything left out: got %v", err)
	}
}

// TestCurateRemovesLeftoverTemp: the temporary directory of a run killed
// while writing (complete files included, never placed nor recorded) is
// removed by the next run and never recorded as a dataset; bootstrap's
// temporary directories, whose run may be writing, stay.
// TestCurateRemovesLeftoverTempSelectingNothing: a run whose plan selects
// nothing still removes what a killed run left.
func TestCurateRemovesLeftoverTempSelectingNothing(t *testing.T) {
	c := openCorpus(t)
	l := NewLayout(t.TempDir())
	leftover := filepath.Join(l.Datasets(), tempPrefix+"12345")
	if err := os.MkdirAll(leftover, 0o755); err != nil {
		t.Fatal(err)
	}
	p := recordedPlan(t, c)
	if _, err := Curate(context.Background(), c, l, p, time.Date(2024, 3, 6, 0, 0, 0, 0, time.UTC)); !errors.Is(err, ErrNoExamples) {
		t.Fatalf("got %v, want ErrNoExamples from an empty log", err)
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("the killed run's temporary directory is still there: %v", err)
	}
}

func TestCurateRemovesLeftoverTemp(t *testing.T) {
	ctx := context.Background()
	c := openCorpus(t)
	l := NewLayout(t.TempDir())
	logRun(t, c, "A", "implement", true, dataset.Scope)
	leftover := filepath.Join(l.Datasets(), tempPrefix+"12345")
	if _, err := dataset.Write(leftover, dataset.Scope, []dataset.Record{{Example: dataset.Chat("s", "u", "a"),
		Meta: dataset.Meta{Stage: dataset.Scope, Source: corpus.SourceLogged, Positive: true, Date: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}}}, 0); err != nil {
		t.Fatal(err)
	}
	boot := filepath.Join(l.Datasets(), ".bootstrap-0a1b2c3d.tmp-67890")
	if err := os.MkdirAll(boot, 0o755); err != nil {
		t.Fatal(err)
	}
	p := recordedPlan(t, c)
	res, err := Curate(ctx, c, l, p, time.Date(2024, 3, 6, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("the leftover temporary directory is still there: %v", err)
	}
	if _, err := os.Stat(boot); err != nil {
		t.Errorf("bootstrap's temporary directory was removed: %v", err)
	}
	if res.Summary.Examples() != 1 {
		t.Errorf("got %d examples, want the logged call alone", res.Summary.Examples())
	}
	rows, err := c.Datasets(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Path != res.Dir || strings.Contains(res.Dir, tempPrefix) {
		t.Errorf("recorded: got %+v, want the run's dataset alone, placed", rows)
	}
	if m, _ := filepath.Glob(filepath.Join(l.Datasets(), tempPrefix+"*")); len(m) != 0 {
		t.Errorf("left by the run: %v", m)
	}
}

// recordedPlan records a training plan for the scope stage and returns
// goodPlan under its id, as train-plan writes it.
func recordedPlan(t *testing.T, c *corpus.Corpus) *Plan {
	t.Helper()
	id, err := c.RecordPlan(context.Background(), corpus.Plan{TaskID: "tp", TargetStage: "scope", BaseModel: "reasoning", DataCriteria: "{}", RawPlan: "x"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePlan("p.toml", []byte(strings.Replace(goodPlan, "id = 1", "id = "+strconv.FormatInt(id, 10), 1)))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCurateLeavesOutRejectedReplies: cra solve records every attempt's
// call under the run's task id. A run that succeeded on attempt 2 has an
// attempt 1 reply that did not apply: no positive example.
func TestCurateLeavesOutRejectedReplies(t *testing.T) {
	ctx := context.Background()
	c := openCorpus(t)
	l := NewLayout(t.TempDir())
	task := "T.r1"
	runID, err := c.StartRun(ctx, corpus.TaskRun{TaskID: task, Repo: "/r", Mode: "implement", ExecuteModel: "m", ContextWindow: 8192, ReservedTokens: 1024, Stages: "scope"})
	if err != nil {
		t.Fatal(err)
	}
	bad := "Sure! Here is the fix: just change add to subtract."
	good := "calc.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n"
	for i, reply := range []string{bad, good} {
		if _, err := c.AddCall(ctx, corpus.Call{TaskID: task, Type: "solve", Role: "coding", Stage: dataset.ExecuteCode, Provider: "ollama", Model: "m",
			System: "code system", Prompt: "fix add, attempt " + string(rune('1'+i)), Response: reply}); err != nil {
			t.Fatal(err)
		}
		a := corpus.Attempt{Attempt: i + 1, RawResponse: reply, PatchApplied: reply == good}
		if reply == good {
			a.Validation = &corpus.Validation{Success: true}
		}
		if err := c.AddAttempt(ctx, runID, a); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.FinishRun(ctx, runID, corpus.RunOutcome{Success: true, FinalDiff: "diff"}); err != nil {
		t.Fatal(err)
	}
	p := recordedPlan(t, c)
	p.Stage, p.BaseModel = dataset.ExecuteCode, dataset.Coding
	res, err := Curate(ctx, c, l, p, time.Date(2024, 3, 6, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{dataset.TrainFile, dataset.ValidFile} {
		b, _ := os.ReadFile(filepath.Join(res.Dir, f))
		if strings.Contains(string(b), "Sure! Here is the fix") {
			t.Errorf("%s holds attempt 1's unparseable reply as a positive example (positives %d): %s", f, res.Positive, b)
		}
	}
}

// TestCurateKeepsTheBootstrapValidation: with mix_synthetic, curate-data
// takes the bootstrapped dataset's training split only: its validation
// examples, on which 'cra adapters eval TAG --dataset <bootstrap id>'
// scores an adapter, stay out of the curated train.jsonl.
func TestCurateKeepsTheBootstrapValidation(t *testing.T) {
	ctx := context.Background()
	c := openCorpus(t)
	l := NewLayout(t.TempDir())
	logRun(t, c, "A", "implement", true, dataset.Scope)
	logRun(t, c, "B", "implement", true, dataset.Scope)
	syn := bootstrapped(t, c, l.Root, dataset.Scope, 10)
	boot, err := c.Dataset(ctx, syn)
	if err != nil {
		t.Fatal(err)
	}
	bootValid, err := dataset.Read(boot.Path, dataset.Valid)
	if err != nil || len(bootValid) == 0 {
		t.Fatalf("bootstrap valid: %v, %d", err, len(bootValid))
	}
	p := recordedPlan(t, c)
	p.Data.MixSynthetic, p.Data.SyntheticShare = true, 0.5
	res, err := Curate(ctx, c, l, p, time.Date(2024, 3, 6, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	train, err := dataset.Read(res.Dir, dataset.Train)
	if err != nil {
		t.Fatal(err)
	}
	inTrain := map[string]bool{}
	for _, r := range train {
		inTrain[r.Example.Messages[1].Content] = true
	}
	for _, r := range bootValid {
		if inTrain[r.Example.Messages[1].Content] {
			t.Errorf("bootstrap dataset %d's validation example %q is in curated dataset %d's train.jsonl", syn, r.Example.Messages[1].Content, res.DatasetID)
		}
	}
}

// TestNewJobSmallSplits: a split of fewer examples than a batch, which
// mlx_lm refuses after loading the model, is named before the trainer
// runs.
func TestNewJobSmallSplits(t *testing.T) {
	ctx := context.Background()
	c := openCorpus(t)
	l := NewLayout(t.TempDir())
	for _, id := range []string{"A", "B", "C", "D", "E"} {
		logRun(t, c, id, "implement", true, dataset.Scope)
	}
	p := recordedPlan(t, c)
	res, err := Curate(ctx, c, l, p, time.Date(2024, 3, 6, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Models: &config.Models{Coding: "coder:3b", Reasoning: "qwen3:4b-instruct-2507"}}
	job, err := NewJob(ctx, c, l, cfg, res.DatasetID)
	if err != nil {
		t.Fatal(err)
	}
	note := job.SmallNote()
	if want := fmt.Sprintf("%d valid examples, fewer than the plan's batch_size %d, which mlx_lm.lora refuses", res.Summary.Valid, p.Hyper.BatchSize); res.Summary.Valid >= p.Hyper.BatchSize || !strings.Contains(note, want) {
		t.Errorf("%d valid of batch %d: note %q, want one saying %q", res.Summary.Valid, p.Hyper.BatchSize, note, want)
	}
}
