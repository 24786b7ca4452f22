package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/learn"
	"github.com/cra-dev/cra/internal/retrieve"
)

// TestHistoryVariants: -history-variants measures, for the shipped
// setting, what markHistory and learn.Evaluate give: the same signal at
// each parent, the same figures; and it reports every setting at every
// history weight.
func TestHistoryVariants(t *testing.T) {
	ctx := t.Context()
	src := manifest[0]
	clones := t.TempDir()
	dir := gittest.Init(t)
	if err := os.Symlink(dir, filepath.Join(clones, src.Dir)); err != nil {
		t.Fatal(err)
	}
	gittest.Commit(t, dir, "initial import of the modules", map[string]string{
		"frob.py":  "def frob(x):\n    return x\n",
		"other.py": "def other(y):\n    return y\n",
		"third.py": "def third(z):\n    return z\n",
	})
	gittest.Commit(t, dir, "Tidy the zebulon flange code", map[string]string{"frob.py": "def frob(x):\n    return x or 0\n"})
	gittest.Commit(t, dir, "Make third return its double value", map[string]string{"third.py": "def third(z):\n    return 2 * z\n"})
	gittest.Commit(t, dir, "Quux the zebulon flange in frob", map[string]string{"frob.py": "def frob(x):\n    return (x or 0) + 1\n"})
	gittest.Commit(t, dir, "Make other return its double value", map[string]string{"other.py": "def other(y):\n    return 2 * y\n"})

	var ex []learn.Example
	if _, err := learn.Extract(ctx, learn.ExtractOptions{Repo: dir, ScratchDir: filepath.Join(t.TempDir(), "scratch"), Name: src.Name, Weights: retrieve.HandSetWeights}, func(e learn.Example) error {
		ex = append(ex, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(ex) < 2 {
		t.Fatalf("%d examples, want at least 2", len(ex))
	}
	data := t.TempDir()
	f, err := os.Create(filepath.Join(data, strings.ReplaceAll(src.Name, "/", "+")+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ex {
		if err := learn.WriteExample(f, e); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()

	var out strings.Builder
	got, err := historyVariants(ctx, options{clones: clones, data: data, only: src.Name, validShare: 0.5}, &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(historyGrid()) * len(historyWeights()); len(got) != want {
		t.Fatalf("%d results, want %d (every setting at every weight)", len(got), want)
	}
	if _, err := markHistory(ctx, dir, ex); err != nil {
		t.Fatal(err)
	}
	marked := 0
	for _, e := range ex {
		for _, c := range e.Candidates {
			if c.Signals["history"] > 0 {
				marked++
			}
		}
	}
	if marked == 0 {
		t.Fatal("no candidate has a history signal: the comparison below would hold for any setting")
	}
	_, valid := learn.SplitByTime(ex, 0.5)
	for _, r := range got[:len(historyWeights())] {
		if r.Params != retrieve.DefaultHistoryParams() {
			t.Fatalf("the first setting is %+v, want the shipped one", r.Params)
		}
		w := retrieve.HandSetWeights
		w.History = r.History
		if all, v := learn.Evaluate(ex, w), learn.Evaluate(valid, w); r.All != all || r.Valid != v {
			t.Errorf("history %v: got %+v / %+v, markHistory and Evaluate give %+v / %+v", r.History, r.All, r.Valid, all, v)
		}
	}
	if !strings.Contains(out.String(), "best by macro Acc@5") {
		t.Errorf("no summary in the report:\n%s", out.String())
	}
}
