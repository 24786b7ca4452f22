package retrieve

import (
	"maps"
	"math"
	"strings"
	"testing"
)

// TestFuseIsTheScore: a learner scores past commits' candidates with
// Weights.Fuse, so Fuse must give Rank's score for every file the fusion
// scored, the prose-scaled ones (a README, an example program) and the
// demoted tests and declaration-only files included, whatever the
// weights.
func TestFuseIsTheScore(t *testing.T) {
	f := newFixture(t, map[string]string{
		"go.mod":           "module example.com/m\n",
		"mode.go":          "package m\n\n// SetMode sets the mode.\nfunc SetMode(value string) { mode = value }\n\nvar mode string\n",
		"mode_test.go":     "package m\n\nimport \"testing\"\n\nfunc TestIt(t *testing.T) { SetMode(\"\") }\n",
		"examples/main.go": "package main\n\n// SetMode with an empty value.\nfunc main() { m.SetMode(\"\") }\n",
		"README.md":        "# m\n\nSetMode ignores an empty value. SetMode, value, empty, ignores, mode.\n",
		"types.go":         "package m\n\n// Mode is an empty value or a mode SetMode ignores.\ntype Mode string\n\n// Modes lists the value of every mode.\ntype Modes struct{ Empty, Value Mode }\n",
	})
	for _, w := range []Weights{HandSetWeights, {Search: 0.5, Mention: 3, Symbol: 0.2, Chunk: 1.5, Name: 0.1, Dep: 0.4, CoChange: 0.1, Ident: 0.3, Churn: 0.5, Test: 0.9, Area: 0.1, Metadata: 0.1, Implied: 0.2, Prose: 0.7, TestDemotion: 0.6, DeclDemotion: 0.3}} {
		rk := NewRanker(f.kb, f.repoID)
		rk.Weights = w
		cands, err := rk.Rank(t.Context(), Analyze("`SetMode` ignores an empty value"), 20)
		if err != nil {
			t.Fatal(err)
		}
		proses, tests, decls := 0, 0, 0
		for _, c := range cands {
			if _, recalled := c.Signals["recall"]; recalled {
				continue
			}
			proses += c.Prose
			if c.TestFile {
				tests++
			}
			if c.DeclFile {
				decls++
			}
			if got := w.Fuse(c.Signals, c.Prose, c.TestFile, c.DeclFile); math.Abs(got-c.Score) > 1e-12 {
				t.Errorf("%s: Fuse gives %v, Rank scored %v (signals %v, prose %d, test %v, decl %v)", c.Path, got, c.Score, c.Signals, c.Prose, c.TestFile, c.DeclFile)
			}
		}
		if proses < 2 {
			t.Errorf("weights %+v: got %d prose scalings among %v, want the README and the example scaled", w, proses, paths(cands))
		}
		if tests != 1 {
			t.Errorf("weights %+v: got %d test files among %v, want mode_test.go marked", w, tests, paths(cands))
		}
		// Marked only where the weights demote (types.go's score is the
		// same either way at DeclDemotion 0).
		if want := map[bool]int{false: 0, true: 1}[w.DeclDemotion > 0]; decls != want {
			t.Errorf("weights %+v: got %d declaration-only files among %v, want %d (types.go)", w, decls, paths(cands), want)
		}
	}
}

// TestDeclDemotion: a source file that only declares types is scaled by
// 1 − DeclDemotion unless the task names it; a file with a function, a
// test, and every file at DeclDemotion 0 are left as they are, and the
// signals do not move with the demotion.
func TestDeclDemotion(t *testing.T) {
	f := newFixture(t, map[string]string{
		"go.mod":        "module example.com/m\n",
		"merge.go":      "package m\n\n// Merge merges the retry options.\nfunc Merge(a, b Options) Options { a.Retry = b.Retry; return a }\n",
		"types.go":      "package m\n\n// Options are the retry options: the retry limit and methods.\ntype Options struct{ Retry RetryOptions }\n\n// RetryOptions hold the retry limit and the retry methods.\ntype RetryOptions struct{ Limit int; Methods []string }\n\ntype Hook interface{ Retry() }\n",
		"types_test.go": "package m\n\ntype retryCase struct{ limit int }\n",
	})
	rank := func(w Weights, task string, extra bool) map[string]Candidate {
		rk := NewRanker(f.kb, f.repoID)
		rk.Weights, rk.ExtraFacts = w, extra
		cands, err := rk.Rank(t.Context(), Analyze(task), 20)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]Candidate{}
		for _, c := range cands {
			out[c.Path] = c
		}
		return out
	}
	demoted := HandSetWeights
	demoted.DeclDemotion = 0.6
	tests := []struct {
		task  string
		named bool
	}{
		{"retry limit lost when retry options merge", false},
		{"types.go: retry limit lost when retry options merge", true},
	}
	for _, tc := range tests {
		t.Run(tc.task, func(t *testing.T) {
			plain, marked, down := rank(HandSetWeights, tc.task, false), rank(HandSetWeights, tc.task, true), rank(demoted, tc.task, false)
			pt, dt := plain["types.go"], down["types.go"]
			if pt.Score == 0 || pt.DeclFile || marked["types.go"].DeclFile == tc.named || dt.DeclFile == tc.named {
				t.Fatalf("types.go scored %v, marked %v / %v / %v: want it scored, marked only with ExtraFacts or a demotion and when the task does not name it", pt.Score, pt.DeclFile, marked["types.go"].DeclFile, dt.DeclFile)
			}
			for _, p := range []string{"merge.go", "types_test.go"} {
				if c, ok := down[p]; ok && c.DeclFile || marked[p].DeclFile {
					t.Errorf("%s marked as declaration-only", p)
				}
			}
			want := pt.Score
			if !tc.named {
				want *= 0.4
			}
			if math.Abs(dt.Score-want) > 1e-12 {
				t.Errorf("types.go scored %v demoted, want %v", dt.Score, want)
			}
			if marked["types.go"].Score != pt.Score {
				t.Errorf("marking moved the score at DeclDemotion 0: %v → %v", pt.Score, marked["types.go"].Score)
			}
			for _, p := range []string{"types.go", "merge.go"} {
				if !maps.Equal(plain[p].Signals, down[p].Signals) {
					t.Errorf("%s: signals moved with the demotion: %v → %v", p, plain[p].Signals, down[p].Signals)
				}
			}
		})
	}
}

// TestTestDemotion: a test file's score is scaled by 1 − TestDemotion
// when the task does not speak of tests, and left alone when it does;
// the test pairing, which picks sources by score, does not see the
// demotion, so the signals are the same either way.
func TestTestDemotion(t *testing.T) {
	f := newFixture(t, map[string]string{
		"go.mod":       "module example.com/m\n",
		"mode.go":      "package m\n\n// SetMode sets the mode.\nfunc SetMode(value string) { mode = value }\n\nvar mode string\n",
		"mode_test.go": "package m\n\nimport \"testing\"\n\nfunc TestSetModeEmptyValue(t *testing.T) { SetMode(\"\"); SetMode(\"empty value\") }\n",
	})
	rank := func(w Weights, task string) map[string]Candidate {
		rk := NewRanker(f.kb, f.repoID)
		rk.Weights = w
		cands, err := rk.Rank(t.Context(), Analyze(task), 20)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]Candidate{}
		for _, c := range cands {
			out[c.Path] = c
		}
		return out
	}
	demoted := HandSetWeights
	demoted.TestDemotion = 0.75
	tests := []struct {
		task       string
		aboutTests bool
	}{
		{"`SetMode` ignores an empty value", false},
		{"`SetMode` ignores an empty value: add a test", true},
		{"test: `SetMode` with an empty value", true},
	}
	for _, tc := range tests {
		t.Run(tc.task, func(t *testing.T) {
			if got := Analyze(tc.task).AboutTests(); got != tc.aboutTests {
				t.Fatalf("AboutTests: got %v, want %v", got, tc.aboutTests)
			}
			plain, down := rank(HandSetWeights, tc.task), rank(demoted, tc.task)
			pt, dt := plain["mode_test.go"], down["mode_test.go"]
			if pt.Score == 0 || dt.TestFile == tc.aboutTests || down["mode.go"].TestFile {
				t.Fatalf("mode_test.go scored %v, marked %v (mode.go %v): want a scored test marked only when the task is not about tests", pt.Score, dt.TestFile, down["mode.go"].TestFile)
			}
			want := pt.Score
			if !tc.aboutTests {
				want *= 0.25
			}
			if math.Abs(dt.Score-want) > 1e-12 {
				t.Errorf("demoted test scored %v, want %v", dt.Score, want)
			}
			if !maps.Equal(pt.Signals, dt.Signals) || !maps.Equal(plain["mode.go"].Signals, down["mode.go"].Signals) {
				t.Errorf("signals moved with the demotion: %v → %v, %v → %v", pt.Signals, dt.Signals, plain["mode.go"].Signals, down["mode.go"].Signals)
			}
		})
	}
}

func TestWeightsGetSetValidate(t *testing.T) {
	var w Weights
	for i, n := range append(Signals, "prose", "test_demotion") {
		if err := w.Set(n, float64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := w.Get("cochange"); got != w.CoChange || got == 0 {
		t.Errorf("Get(cochange): got %v, want %v", got, w.CoChange)
	}
	if w.TestDemotion == 0 {
		t.Error("Set(test_demotion) did not set TestDemotion")
	}
	if err := w.Set("history_damping", 0.5); err != nil || w.HistoryDamping != 0.5 {
		t.Errorf("Set(history_damping, 0.5): err %v, HistoryDamping %v", err, w.HistoryDamping)
	}
	if err := w.Set("pair_match", 0.5); err != nil || w.PairMatch != 0.5 {
		t.Errorf("Set(pair_match, 0.5): got %v, PairMatch %v", err, w.PairMatch)
	}
	if err := w.Set("nope", 1); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("Set(nope): got %v, want an error naming it", err)
	}
	tests := []struct {
		name string
		w    Weights
		want string
	}{
		{"hand-set", HandSetWeights, ""},
		{"negative", Weights{Search: 1, Dep: -0.1}, "dep"},
		{"nan", Weights{Search: math.NaN()}, "search"},
		{"all zero", Weights{Prose: 1}, "every ranking weight is 0"},
		{"test demotion 1", Weights{Search: 1, TestDemotion: 1}, "test_demotion"},
		{"test demotion negative", Weights{Search: 1, TestDemotion: -0.1}, "test_demotion"},
		{"test demotion nan", Weights{Search: 1, TestDemotion: math.NaN()}, "test_demotion"},
		{"pair history 1", Weights{Search: 1, PairHistory: 1}, ""},
		{"pair history above 1", Weights{Search: 1, PairHistory: 1.5}, "pair_history"},
		{"pair history negative", Weights{Search: 1, PairHistory: -0.1}, "pair_history"},
		{"history damping 1", Weights{Search: 1, HistoryDamping: 1}, ""},
		{"history damping above 1", Weights{Search: 1, HistoryDamping: 1.5}, "history_damping"},
		{"history damping nan", Weights{Search: 1, HistoryDamping: math.NaN()}, "history_damping"},
		{"pair match 1", Weights{Search: 1, PairMatch: 1}, ""},
		{"pair match above 1", Weights{Search: 1, PairMatch: 1.2}, "pair_match"},
		{"pair match nan", Weights{Search: 1, PairMatch: math.NaN()}, "pair_match"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.w.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}
