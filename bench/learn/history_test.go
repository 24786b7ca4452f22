package main

import (
	"path/filepath"
	"testing"

	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/learn"
	"github.com/cra-dev/cra/internal/retrieve"
)

// TestMarkHistory: the history signal markHistory sets on cached
// examples is the one Rank gives at each example's parent (the
// extraction records it, Ranker.ExtraFacts), and never comes from the
// example's own commit or a later one: the task "Quux the zebulon flange
// in frob" has one earlier commit like it, which changed frob.py and
// other.py alike, so both score 1; its own commit, which changed frob.py
// alone, and a later one like it, which changed other.py alone, would
// set them apart.
func TestMarkHistory(t *testing.T) {
	ctx := t.Context()
	dir := gittest.Init(t)
	gittest.Commit(t, dir, "initial import of the modules", map[string]string{
		"frob.py":  "def frob(x):\n    return x\n",
		"other.py": "def other(y):\n    return y\n",
		"third.py": "def third(z):\n    return z\n",
	})
	gittest.Commit(t, dir, "Tidy the zebulon flange code", map[string]string{
		"frob.py":  "def frob(x):\n    return x or 0\n",
		"other.py": "def other(y):\n    return y or 0\n",
	})
	gittest.Commit(t, dir, "Make third return its double", map[string]string{"third.py": "def third(z):\n    return 2 * z\n"})
	task := gittest.Commit(t, dir, "Quux the zebulon flange in frob", map[string]string{"frob.py": "def frob(x):\n    return (x or 0) + 1\n"})
	gittest.Commit(t, dir, "Quux the zebulon flange in other", map[string]string{"other.py": "def other(y):\n    return (y or 0) + 1\n"})

	var got []learn.Example
	_, err := learn.Extract(ctx, learn.ExtractOptions{Repo: dir, ScratchDir: filepath.Join(t.TempDir(), "scratch"), Name: "o/r", Weights: retrieve.HandSetWeights}, func(e learn.Example) error {
		got = append(got, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// What Rank recorded at each parent, then the same examples with the
	// signal wiped, as examples cached before it existed.
	want := map[string]map[string]float64{}
	for i := range got {
		want[got[i].Commit] = map[string]float64{}
		for j := range got[i].Candidates {
			c := &got[i].Candidates[j]
			if v := c.Signals["history"]; v > 0 {
				want[got[i].Commit][c.Path] = v
			}
			delete(c.Signals, "history")
		}
	}
	if _, err := markHistory(ctx, dir, got); err != nil {
		t.Fatal(err)
	}
	seen := false
	for _, e := range got {
		for _, c := range e.Candidates {
			v, w := c.Signals["history"], want[e.Commit][c.Path]
			if d := v - w; d > 1e-9 || d < -1e-9 {
				t.Errorf("example %.7s (%q): %s history %v, Rank at the parent gave %v", e.Commit, e.Task, c.Path, v, w)
			}
		}
		if e.Commit != task {
			continue
		}
		seen = true
		scores := map[string]float64{}
		for _, c := range e.Candidates {
			scores[c.Path] = c.Signals["history"]
		}
		if scores["frob.py"] != 1 || scores["other.py"] != 1 {
			t.Errorf("the task's example: history %v, want frob.py and other.py at 1 from the one earlier commit like it", scores)
		}
	}
	if !seen {
		t.Fatalf("no example of the task's commit among %d", len(got))
	}
}
