package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/index"
	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/retrieve"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
)

// TestHistoryHonestAtEachCheckout: the harness indexes each task at its
// checkout into one curated DB, as it steps from a later task to an
// earlier one. The index at the parent holds neither the task's commit
// nor its message, so the history signal gives the file it changed
// nothing for that message; historyHonest, which the harness runs after
// every index, passes there and fails on an index that was not moved
// back (the check can fail).
func TestHistoryHonestAtEachCheckout(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	gittest.Run(t, dir, "init", "-q")
	write := func(name, content, msg string) string {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		gittest.Run(t, dir, "add", "-A")
		gittest.Run(t, dir, "commit", "-qm", msg)
		return gittest.Run(t, dir, "rev-parse", "HEAD")
	}
	write("other.py", "def other():\n    return 0\n", "initial import")
	parent := write("frob.py", "def frob(x):\n    return x\n", "Add the helper")
	const task = "Quux the kwyjibo zebulon before the flange"
	leak := write("frob.py", "def frob(x):\n    return x + 1\n", task)

	f := store.NewFactory(statedir.At(t.TempDir()))
	b := index.NewBuilder(f)
	historyOf := func(checkout string) (float64, error) {
		gittest.Run(t, dir, "checkout", "-q", "--force", checkout)
		res, err := b.Run(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		db, err := f.Open(ctx, store.Curated, "", true)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		rk := retrieve.NewRanker(kb.New(db), res.RepoID)
		rk.Weights.History = 0.6
		cands, err := rk.Rank(ctx, retrieve.Analyze(task), 20)
		if err != nil {
			t.Fatal(err)
		}
		v := 0.0
		for _, c := range cands {
			if c.Path == "frob.py" {
				v = c.Signals["history"]
			}
		}
		// The index at the task's commit, checked against its parent:
		// what a harness that forgot to move the index back would rank.
		if checkout == leak {
			if err := historyHonest(ctx, db, res.RepoID, dir, parent); err == nil || !strings.Contains(err.Error(), "see the future") {
				t.Errorf("an index holding the task's commit passed the check at its parent: %v", err)
			}
		}
		return v, historyHonest(ctx, db, res.RepoID, dir, checkout)
	}
	// The later task first, then the earlier one, as a harness would if
	// its tasks came in that order.
	if v, err := historyOf(leak); err != nil || v == 0 {
		t.Fatalf("at the commit: history %v, check %v; want a score from its own message (the test could not fail)", v, err)
	}
	if v, err := historyOf(parent); err != nil || v != 0 {
		t.Errorf("at the parent: history %v, check %v; want none and a passing check", v, err)
	}
}
