package corpus_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
)

// logRuns records, through the corpus's own writers, three board-style
// runs and a standalone retrieval:
//   - T1.r1 implement, succeeded on its second attempt (TestAdd failed first);
//   - T2.r1 implement, failed (TestAdd, then a lint failure naming no test);
//   - P.r1 plan, succeeded, with a failed plan call;
//   - R retrieve (no outcome signal), one scope call.
func logRuns(t *testing.T, c *corpus.Corpus) {
	t.Helper()
	ctx := context.Background()
	run := func(task, mode string) int64 {
		id, err := c.StartRun(ctx, corpus.TaskRun{TaskID: task, Repo: "/r", Mode: mode, ExecuteModel: "m", ContextWindow: 8192, ReservedTokens: 1024, Stages: "scope"})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	retrieval := func(task, typ, stage, reply string) {
		if _, err := c.AddRetrievalCall(ctx, corpus.Call{TaskID: task, Type: typ, Role: "reasoning", Stage: stage, Provider: "ollama",
			Model: "thinker", System: typ + " system", Prompt: task + " " + typ, Response: reply}); err != nil {
			t.Fatal(err)
		}
	}
	general := func(task, typ, stage, reply string, err error) {
		if _, aerr := c.AddCall(ctx, corpus.Call{TaskID: task, Type: typ, Role: "coding", Stage: stage, Provider: "ollama",
			Model: "coder", System: typ + " system", Prompt: task + " " + typ, Response: reply, Err: err}); aerr != nil {
			t.Fatal(aerr)
		}
	}
	decide := func(task string, included bool) {
		if err := c.LogDecisions(ctx, task, []corpus.Decision{{Stage: "scope", FileID: 1, Tier: "seed", Included: included}}); err != nil {
			t.Fatal(err)
		}
	}
	finish := func(id int64, ok bool) {
		if err := c.FinishRun(ctx, id, corpus.RunOutcome{Success: ok}); err != nil {
			t.Fatal(err)
		}
	}
	attempt := func(id int64, n int, applied bool, v *corpus.Validation) {
		if err := c.AddAttempt(ctx, id, corpus.Attempt{Attempt: n, RawResponse: "r", PatchApplied: applied, Validation: v}); err != nil {
			t.Fatal(err)
		}
	}

	r1 := run("T1.r1", "implement")
	retrieval("T1.r1", "task_analysis", "", `{"intent":"fix"}`)
	retrieval("T1.r1", "scope_judgment", "scope", `{"a.go":"relevant"}`)
	decide("T1.r1", true)
	general("T1.r1", "solve", "execute_code", "blocks 1", nil)
	attempt(r1, 1, true, &corpus.Validation{FailingTests: []string{"TestAdd"}})
	general("T1.r1", "solve", "execute_code", "blocks 2", nil)
	attempt(r1, 2, true, &corpus.Validation{Success: true})
	finish(r1, true)

	r2 := run("T2.r1", "implement")
	retrieval("T2.r1", "scope_judgment", "scope", `{"b.go":"relevant"}`)
	decide("T2.r1", true)
	decide("T2.r1", false)
	general("T2.r1", "solve", "execute_code", "prose", nil)
	attempt(r2, 1, false, nil)
	general("T2.r1", "solve", "execute_code", "blocks 3", nil)
	attempt(r2, 2, true, &corpus.Validation{FailingTests: []string{"TestAdd", "TestSub"}})
	general("T2.r1", "solve", "execute_code", "blocks 4", nil)
	attempt(r2, 3, true, &corpus.Validation{LintOutput: sql.NullString{String: "vet: x", Valid: true}})
	finish(r2, false)

	p := run("P.r1", "plan")
	general("P.r1", "plan", "execute_plan", "", errors.New("connection refused\nretrying"))
	general("P.r1", "plan", "execute_plan", `{"steps":[]}`, nil)
	finish(p, true)

	q := run("R", "retrieve")
	retrieval("R", "scope_judgment", "scope", `{"c.go":"relevant"}`)
	finish(q, true)

	// A call outside any stage (a reviewer's) is not a stage's.
	general("T1.r1", "review", "", "ok", nil)
}

func TestStageStats(t *testing.T) {
	c, _ := openRaw(t)
	ctx := context.Background()
	if got, err := c.StageStats(ctx); err != nil || len(got) != 0 {
		t.Fatalf("empty corpus: got %v, %v, want none", got, err)
	}
	logRuns(t, c)
	got, err := c.StageStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []corpus.StageStat{
		{Stage: "execute_code", Calls: 5, Linked: 5, Succeeded: 2, Runs: 2, RunsSucceeded: 1},
		{Stage: "execute_plan", Calls: 2, Failed: 1, Linked: 2, Succeeded: 2, Runs: 1, RunsSucceeded: 1},
		// R's call has no outcome: a retrieval's success is not a signal.
		{Stage: "scope", Calls: 3, Linked: 2, Succeeded: 1, Runs: 2, RunsSucceeded: 1},
		{Stage: "task_analysis", Calls: 1, Linked: 1, Succeeded: 1, Runs: 1, RunsSucceeded: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stage stats (-want +got):\n%s", diff)
	}
	if r, ok := got[0].SuccessRate(); !ok || r != 0.5 {
		t.Errorf("execute_code success rate: got %v, %v, want 0.5", r, ok)
	}
	if _, ok := (corpus.StageStat{}).SuccessRate(); ok {
		t.Error("a stage without runs has a success rate")
	}
}

func TestModeOutcomes(t *testing.T) {
	c, _ := openRaw(t)
	logRuns(t, c)
	got, err := c.ModeOutcomes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []corpus.ModeOutcome{
		{Mode: "implement", Runs: 2, Finished: 2, Succeeded: 1},
		{Mode: "plan", Runs: 1, Finished: 1, Succeeded: 1},
		{Mode: "retrieve", Runs: 1, Finished: 1, Succeeded: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mode outcomes (-want +got):\n%s", diff)
	}
}

func TestFailurePatterns(t *testing.T) {
	c, _ := openRaw(t)
	logRuns(t, c)
	got, err := c.FailurePatterns(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []corpus.FailurePattern{
		{Kind: corpus.FailingTest, Stage: "execute_code", Pattern: "TestAdd", Count: 2, Runs: 2, Example: "T1.r1"},
		{Kind: corpus.CallError, Stage: "execute_plan", Pattern: "connection refused", Count: 1, Runs: 1, Example: "P.r1"},
		{Kind: corpus.FailingTest, Stage: "execute_code", Pattern: "TestSub", Count: 1, Runs: 1, Example: "T2.r1"},
		{Kind: corpus.PatchNotApplied, Stage: "execute_code", Count: 1, Runs: 1, Example: "T2.r1"},
		{Kind: corpus.ValidationFailed, Stage: "execute_code", Count: 1, Runs: 1, Example: "T2.r1"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("failure patterns (-want +got):\n%s", diff)
	}
	top, err := c.FailurePatterns(context.Background(), 2)
	if err != nil || len(top) != 2 || top[0].Pattern != "TestAdd" {
		t.Errorf("limit 2: got %v, %v", top, err)
	}
}

func TestDecisionStats(t *testing.T) {
	c, _ := openRaw(t)
	logRuns(t, c)
	got, err := c.DecisionStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []corpus.DecisionStat{{Stage: "scope", Included: 2, Excluded: 1, IncludedInSuccess: 1, IncludedInFailure: 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decision stats (-want +got):\n%s", diff)
	}
}

func TestLoggedCalls(t *testing.T) {
	c, _ := openRaw(t)
	ctx := context.Background()
	var tick int
	c.Now = func() time.Time { tick++; return time.Date(2024, 3, 5, 12, 0, tick, 0, time.UTC) }
	logRuns(t, c)
	replies := func(f corpus.CallFilter) []string {
		t.Helper()
		calls, err := c.LoggedCalls(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range calls {
			out = append(out, l.TaskID+": "+l.Response)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		f    corpus.CallFilter
		want []string
	}{
		{"every code call", corpus.CallFilter{Stage: "execute_code"},
			[]string{"T1.r1: blocks 1", "T1.r1: blocks 2", "T2.r1: prose", "T2.r1: blocks 3", "T2.r1: blocks 4"}},
		{"of successful runs", corpus.CallFilter{Stage: "execute_code", Outcome: corpus.OutcomeSuccess}, []string{"T1.r1: blocks 1", "T1.r1: blocks 2"}},
		{"of failed runs, newest two", corpus.CallFilter{Stage: "execute_code", Outcome: corpus.OutcomeFailure, Limit: 2}, []string{"T2.r1: blocks 3", "T2.r1: blocks 4"}},
		{"failed calls have no reply", corpus.CallFilter{Stage: "execute_plan"}, []string{`P.r1: {"steps":[]}`}},
		{"scope, any", corpus.CallFilter{Stage: "scope"}, []string{`T1.r1: {"a.go":"relevant"}`, `T2.r1: {"b.go":"relevant"}`, `R: {"c.go":"relevant"}`}},
		{"scope with an outcome", corpus.CallFilter{Stage: "scope", Outcome: corpus.OutcomeFinished}, []string{`T1.r1: {"a.go":"relevant"}`, `T2.r1: {"b.go":"relevant"}`}},
		{"scope with decisions, successful", corpus.CallFilter{Stage: "scope", Outcome: corpus.OutcomeSuccess, WithDecisions: true}, []string{`T1.r1: {"a.go":"relevant"}`}},
		{"task analysis by its call type", corpus.CallFilter{Stage: "task_analysis"}, []string{`T1.r1: {"intent":"fix"}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, replies(tc.f)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	calls, err := c.LoggedCalls(ctx, corpus.CallFilter{Stage: "scope", Outcome: corpus.OutcomeSuccess})
	if err != nil || len(calls) != 1 {
		t.Fatalf("got %v, %v", calls, err)
	}
	l := calls[0]
	if l.Table != "retrieval_llm_calls" || l.System != "scope_judgment system" || l.Prompt != "T1.r1 scope_judgment" ||
		l.RunMode != "implement" || !l.Outcome.Valid || !l.Outcome.Bool || l.Time.IsZero() {
		t.Errorf("got %+v", l)
	}
	if _, err := c.LoggedCalls(ctx, corpus.CallFilter{}); err == nil {
		t.Error("no stage: got no error")
	}
	if _, err := c.LoggedCalls(ctx, corpus.CallFilter{Stage: "scope", Outcome: "great"}); err == nil {
		t.Error("unknown outcome: got no error")
	}
}

// BenchmarkLogAnalysis reads a raw database of 1,000 finished runs (3
// retrieval calls, 2 solve calls and attempts, 10 decisions each) the way
// train-plan and curate-data do.
func BenchmarkLogAnalysis(b *testing.B) {
	ctx := context.Background()
	db, err := store.NewFactory(statedir.At(b.TempDir())).Open(ctx, store.Raw, "", false)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	c := corpus.New(db)
	prompt := strings.Repeat("context line\n", 200)
	for i := range 1000 {
		task := fmt.Sprintf("T%d.r1", i)
		run, err := c.StartRun(ctx, corpus.TaskRun{TaskID: task, Repo: "/r", Mode: "implement", ExecuteModel: "m", ContextWindow: 8192, ReservedTokens: 1024, Stages: "scope"})
		if err != nil {
			b.Fatal(err)
		}
		for _, typ := range []string{"task_analysis", "scope_judgment", "precision_judgment"} {
			stage := strings.TrimSuffix(typ, "_judgment")
			if typ == "task_analysis" {
				stage = ""
			}
			if _, err := c.AddRetrievalCall(ctx, corpus.Call{TaskID: task, Type: typ, Role: "reasoning", Stage: stage, Provider: "ollama", Model: "m", Prompt: prompt, Response: "{}"}); err != nil {
				b.Fatal(err)
			}
		}
		var ds []corpus.Decision
		for f := range 10 {
			ds = append(ds, corpus.Decision{Stage: "scope", FileID: int64(f), Included: f < 4})
		}
		if err := c.LogDecisions(ctx, task, ds); err != nil {
			b.Fatal(err)
		}
		for a := 1; a <= 2; a++ {
			if _, err := c.AddCall(ctx, corpus.Call{TaskID: task, Type: "solve", Role: "coding", Stage: "execute_code", Provider: "ollama", Model: "m", Prompt: prompt, Response: "blocks"}); err != nil {
				b.Fatal(err)
			}
			if err := c.AddAttempt(ctx, run, corpus.Attempt{Attempt: a, RawResponse: "blocks", PatchApplied: true,
				Validation: &corpus.Validation{Success: a == 2, FailingTests: []string{fmt.Sprintf("Test%d", i%7)}}}); err != nil {
				b.Fatal(err)
			}
		}
		if err := c.FinishRun(ctx, run, corpus.RunOutcome{Success: i%3 != 0}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("StageStats", func(b *testing.B) {
		for b.Loop() {
			if _, err := c.StageStats(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("FailurePatterns", func(b *testing.B) {
		for b.Loop() {
			if _, err := c.FailurePatterns(ctx, 20); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("LoggedCalls/scope_with_decisions", func(b *testing.B) {
		for b.Loop() {
			calls, err := c.LoggedCalls(ctx, corpus.CallFilter{Stage: "scope", Outcome: corpus.OutcomeSuccess, WithDecisions: true})
			if err != nil || len(calls) != 666 {
				b.Fatalf("%d calls, %v", len(calls), err)
			}
		}
	})
}
