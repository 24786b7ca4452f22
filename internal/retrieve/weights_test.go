package retrieve

import (
	"math"
	"strings"
	"testing"
)

// TestFuseIsTheScore: a learner scores past commits' candidates with
// Weights.Fuse, so Fuse must give Rank's score for every file the fusion
// scored, the prose-scaled ones (a README, an example program) included,
// whatever the weights.
func TestFuseIsTheScore(t *testing.T) {
	f := newFixture(t, map[string]string{
		"go.mod":           "module example.com/m\n",
		"mode.go":          "package m\n\n// SetMode sets the mode.\nfunc SetMode(value string) { mode = value }\n\nvar mode string\n",
		"mode_test.go":     "package m\n\nimport \"testing\"\n\nfunc TestIt(t *testing.T) { SetMode(\"\") }\n",
		"examples/main.go": "package main\n\n// SetMode with an empty value.\nfunc main() { m.SetMode(\"\") }\n",
		"README.md":        "# m\n\nSetMode ignores an empty value. SetMode, value, empty, ignores, mode.\n",
	})
	for _, w := range []Weights{HandSetWeights, {Search: 0.5, Mention: 3, Symbol: 0.2, Chunk: 1.5, Name: 0.1, Dep: 0.4, CoChange: 0.1, Ident: 0.3, Churn: 0.5, Test: 0.9, Area: 0.1, Metadata: 0.1, Implied: 0.2, Prose: 0.7}} {
		rk := NewRanker(f.kb, f.repoID)
		rk.Weights = w
		cands, err := rk.Rank(t.Context(), Analyze("`SetMode` ignores an empty value"), 20)
		if err != nil {
			t.Fatal(err)
		}
		proses := 0
		for _, c := range cands {
			if _, recalled := c.Signals["recall"]; recalled {
				continue
			}
			proses += c.Prose
			if got := w.Fuse(c.Signals, c.Prose); math.Abs(got-c.Score) > 1e-12 {
				t.Errorf("%s: Fuse gives %v, Rank scored %v (signals %v, prose %d)", c.Path, got, c.Score, c.Signals, c.Prose)
			}
		}
		if proses < 2 {
			t.Errorf("weights %+v: got %d prose scalings among %v, want the README and the example scaled", w, proses, paths(cands))
		}
	}
}

func TestWeightsGetSetValidate(t *testing.T) {
	var w Weights
	for i, n := range append(Signals, "prose") {
		if err := w.Set(n, float64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := w.Get("cochange"); got != w.CoChange || got == 0 {
		t.Errorf("Get(cochange): got %v, want %v", got, w.CoChange)
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
