package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/knowledge"
	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/llm/llmtest"
	"github.com/cra-dev/cra/internal/review"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
)

// TestCheckTriggers follows the daemon's path: a Check after each
// verdict runs the supervisors when their counters or the urgency say so,
// and a run that repeats its findings doubles its interval.
func TestCheckTriggers(t *testing.T) {
	ctx := context.Background()
	srv := llmtest.NewServer(t)
	srv.On(llmtest.Matches(regexp.MustCompile(`code style supervisor`)), llmtest.Text(`{"conventions_updated": [], "documents": [{"path": "conventions/errors.md", "title": "Errors", "rules": "Wrap once.", "examples": {"good": "", "bad": ""}, "rationale": ""}], "directives": [], "summary": "errors"}`))
	srv.On(llmtest.Matches(regexp.MustCompile(`design supervisor`)), llmtest.Text(`{"design_updates": [], "documents": [], "directives": [], "summary": "fine"}`))
	srv.On(llmtest.Matches(regexp.MustCompile(`internaliser`)), llmtest.Text(`{"knowledge_items": [{"category": "lesson", "content": "Retries need backoff.", "source_task": "", "confidence": "high", "needs_user_review": false}], "summary": "one"}`))

	r, state := newTestRunner(t, nil)
	cfgText := fmt.Sprintf("[models]\nreasoning = \"thinker:4b\"\nbase_url = %q\nmax_retries = 0\nreasoning_context_window = 8192\n", srv.OllamaURL())
	if err := os.WriteFile(filepath.Join(state, statedir.ConfigFile), []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	r.Config = func() (*config.Config, error) { return config.Load(statedir.Of(r.Root).Config()) }
	raw, err := store.NewFactory(statedir.At(state)).Open(ctx, store.Raw, "", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	r.Recorder = llm.NewRecorder(corpus.New(raw))

	ran := func(want string) {
		t.Helper()
		rep, err := r.Check(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, rec := range rep.Runs {
			got = append(got, fmt.Sprintf("%s(%s)", rec.Supervisor, strings.Join(rec.Reasons, ",")))
			if !rec.Ran() {
				t.Errorf("%s did not run: %s%s", rec.Supervisor, rec.Skipped, rec.Discarded)
			}
		}
		if strings.Join(got, " ") != want {
			t.Errorf("ran %q, want %q", strings.Join(got, " "), want)
		}
	}
	task := addTask(t, r, "work", nil)
	run := 0
	verdicts := func(n int, a review.Action) {
		for range n {
			run++
			addVerdict(t, r, task.ID, run, a)
		}
	}
	finalize := func(n int) {
		// Complete verdicts without ending the task: a retry whose review
		// is full_complete.
		for range n {
			run++
			verdictClass(t, r, task.ID, run, review.FullComplete)
		}
	}
	ran("")
	finalize(1)
	ran("code_style(first run) design(first run) internaliser(first run)")
	finalize(2)
	ran("")
	finalize(1)
	ran("internaliser(3 completions (every 3))")
	// It found what it found the first time: converging, every 6 now.
	st, _ := r.Status(ctx)
	if iv := st.Supervisors[2]; iv.Interval != 6 || iv.Base != 3 {
		t.Errorf("internaliser interval %+v", iv)
	}
	finalize(2)
	ran("code_style(5 completions (every 5))")
	// Urgency: four partial verdicts reach 1.2 and run all three.
	verdicts(4, review.Requeue)
	ran("code_style(urgency 1.2) design(urgency 1.2) internaliser(6 completions (every 6),urgency 1.2)")
	if st, _ := r.Status(ctx); st.Urgency != 0 {
		t.Errorf("urgency after the batch %v", st.Urgency)
	}
	var calls int
	if err := raw.QueryRow(`SELECT count(*) FROM llm_calls WHERE call_type = 'supervisor' AND role = 'supervisor'`).Scan(&calls); err != nil || calls != 8 {
		t.Errorf("recorded calls %d, %v", calls, err)
	}
	if l, _ := (&knowledge.Store{Root: r.Root}).List(); len(l) != 2 {
		t.Errorf("store: %+v", l)
	}
}

// runnerOn is a test runner whose reasoning model is model on the server
// at url, read from its config file as the daemon reads it, recording its
// calls in raw.sqlite.
func runnerOn(t *testing.T, model, url string) *Runner {
	t.Helper()
	r, state := newTestRunner(t, nil)
	cfgText := fmt.Sprintf("[models]\nreasoning = %q\nbase_url = %q\nmax_retries = 0\nreasoning_context_window = 8192\n", model, url)
	if err := os.WriteFile(filepath.Join(state, statedir.ConfigFile), []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	r.Config = func() (*config.Config, error) { return config.Load(statedir.Of(r.Root).Config()) }
	raw, err := store.NewFactory(statedir.At(state)).Open(context.Background(), store.Raw, "", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	r.Recorder = llm.NewRecorder(corpus.New(raw))
	return r
}

// TestCheckWithoutModel: no model reachable, the supervisors are skipped
// with a warning and not asked again before RetryAfter.
func TestCheckWithoutModel(t *testing.T) {
	ctx := context.Background()
	srv := llmtest.NewServer(t)
	url := srv.OllamaURL()
	srv.Close()
	r := runnerOn(t, "thinker:4b", url)
	now := time.Now()
	r.Now = func() time.Time { return now }
	task := addTask(t, r, "work", nil)
	addVerdict(t, r, task.ID, 1, review.Finalize)
	rep, err := r.Check(ctx)
	if err != nil || len(rep.Runs) != 3 || len(rep.Warnings) != 3 || rep.Runs[0].Skipped == "" {
		t.Fatalf("first check: %+v %v", rep, err)
	}
	if rep, _ := r.Check(ctx); len(rep.Runs) != 0 {
		t.Errorf("asked again at once: %+v", rep.Runs)
	}
	now = now.Add(RetryAfter + time.Second)
	if rep, _ := r.Check(ctx); len(rep.Runs) != 3 {
		t.Errorf("not asked again after %s: %+v", RetryAfter, rep.Runs)
	}
}

// TestCheckBacksOff: a small model that never writes the schema is asked
// again after RetryAfter, then after twice as long each time, up to
// MaxRetryAfter, not every RetryAfter for ever.
func TestCheckBacksOff(t *testing.T) {
	ctx := context.Background()
	srv := llmtest.NewServer(t)
	srv.SetDefault(llmtest.Text("Sure! Here are my findings: the code looks fine."))
	r := runnerOn(t, "small:1b", srv.OllamaURL())
	start := time.Now()
	now := start
	r.Now = func() time.Time { return now }
	task := addTask(t, r, "work", nil)
	addVerdict(t, r, task.ID, 1, review.Requeue)
	// The daemon checks every 30 s; a simulated day of checks a minute apart.
	var tries []time.Duration
	for ; now.Sub(start) < 24*time.Hour; now = now.Add(time.Minute) {
		rep, err := r.Check(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Runs) > 0 {
			tries = append(tries, now.Sub(start))
		}
	}
	// 0, 10 m, 30 m, 70 m, 150 m, 310 m, 630 m, then every 6 h.
	want := []time.Duration{0, 10 * time.Minute, 30 * time.Minute, 70 * time.Minute, 150 * time.Minute, 310 * time.Minute, 630 * time.Minute, 990 * time.Minute, 1350 * time.Minute}
	if len(tries) != len(want) {
		t.Fatalf("tries at %v, want %v", tries, want)
	}
	for i := range want {
		if d := tries[i] - want[i]; d < 0 || d > 2*time.Minute {
			t.Errorf("try %d at %v, want %v (the wait doubling from %v to %v)", i, tries[i], want[i], RetryAfter, MaxRetryAfter)
		}
	}
}
