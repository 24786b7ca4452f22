package learn

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/index"
	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/retrieve"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
)

// commitFiles writes files and commits them with msg at date.
func commitFiles(t *testing.T, dir, date, msg string, files map[string]string) string {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "--date="+date, "-m", msg)
	return gittest.Run(t, dir, "rev-parse", "HEAD")
}

// honestRepo is a history whose last commit adds the very words of its
// message: a new module that defines them, and a call of them in an old
// one. At its parent no file holds them.
func honestRepo(t *testing.T) (dir, last string) {
	dir = t.TempDir()
	gittest.Run(t, dir, "init", "-q")
	commitFiles(t, dir, "2024-01-01T00:00:00Z", "Add the request handler module", map[string]string{
		"app/core.py":        "def handle(request):\n    return request\n",
		"app/util.py":        "def slug(text):\n    return text.lower()\n",
		"tests/test_core.py": "from app.core import handle\n\n\ndef test_handle():\n    assert handle(1) == 1\n",
	})
	commitFiles(t, dir, "2024-01-02T00:00:00Z", "Make slug strip surrounding spaces", map[string]string{
		"app/util.py": "def slug(text):\n    return text.strip().lower()\n",
	})
	last = commitFiles(t, dir, "2024-01-03T00:00:00Z", "Frobnicate the quux widget before handling", map[string]string{
		"app/quux.py": "def frobnicate_quux_widget(widget):\n    \"\"\"Frobnicate the quux widget.\"\"\"\n    return widget\n",
		"app/core.py": "from app.quux import frobnicate_quux_widget\n\n\ndef handle(request):\n    return frobnicate_quux_widget(request)\n",
	})
	return dir, last
}

// TestExtractSeesTheParentOnly: an example's signals are computed at the
// commit's parent. The last commit of honestRepo adds the words of its
// message; at the parent nothing holds them, so no file matches them and
// the file the commit adds is no candidate, while a ranking at HEAD
// puts that file first by those very words (the test can fail).
func TestExtractSeesTheParentOnly(t *testing.T) {
	ctx := context.Background()
	dir, last := honestRepo(t)
	var got []Example
	rep, err := Extract(ctx, ExtractOptions{Repo: dir, ScratchDir: filepath.Join(t.TempDir(), "scratch"), Name: "o/r"}, func(e Example) error {
		got = append(got, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed != 0 || len(got) != 2 {
		t.Fatalf("got %d examples (report %+v), want the two non-root commits", len(got), rep)
	}
	e := got[1]
	if e.Commit != last || e.Repo != "o/r" || e.Task != "Frobnicate the quux widget before handling" {
		t.Fatalf("second example: got %s %q, want the last commit", e.Commit, e.Task)
	}
	if !slices.Equal(e.Gold, []string{"app/core.py"}) {
		t.Errorf("gold: got %v, want app/core.py only (app/quux.py is new)", e.Gold)
	}
	if want := [][2]int{{1, 1}, {2, 2}}; !slices.Equal(e.Lines["app/core.py"], want) {
		t.Errorf("changed lines: got %v, want %v", e.Lines["app/core.py"], want)
	}
	for _, c := range e.Candidates {
		if c.Path == "app/quux.py" {
			t.Errorf("app/quux.py, added by the commit, is a candidate at its parent: %+v", c)
		}
		if c.Signals["symbol"] > 0 || c.Signals["chunk"] > 0 && c.Path != "app/core.py" {
			t.Errorf("%s matches the commit's new words at its parent: %v", c.Path, c.Signals)
		}
		// No commit before it shares its message's words: only the
		// commit itself, mined past its parent, could give history.
		if c.Signals["history"] > 0 {
			t.Errorf("%s has history %v at the parent: the commit's own message was mined", c.Path, c.Signals["history"])
		}
	}

	// The same ranking at HEAD finds the new file by the words.
	state := t.TempDir()
	f := store.NewFactory(statedir.At(state))
	res, err := index.NewBuilder(f).Run(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	db, err := f.Open(ctx, store.Curated, "", true)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rk := retrieve.NewRanker(kb.New(db), res.RepoID)
	rk.Root = dir
	cands, err := rk.Rank(ctx, retrieve.Analyze(e.Task), 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(cands) == 0 || cands[0].Path != "app/quux.py" || cands[0].Signals["search"] == 0 {
		t.Fatalf("at HEAD: got %v, want app/quux.py first by the task's words", cands)
	}
	// At HEAD the commit's own message is history, and app/core.py,
	// which it changed, has a history score (the check above can fail).
	rk.Weights.History = 0.6
	if cands, err = rk.Rank(ctx, retrieve.Analyze(e.Task), 100); err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(cands, func(c retrieve.Candidate) bool { return c.Path == "app/core.py" }); i < 0 || cands[i].Signals["history"] == 0 {
		t.Errorf("at HEAD: app/core.py has no history score from the commit that changed it: %v", cands)
	}

	// A second extraction with the first's commits skipped has nothing to do.
	skip := map[string]bool{got[0].Commit: true, got[1].Commit: true}
	rep, err = Extract(ctx, ExtractOptions{Repo: dir, ScratchDir: filepath.Join(t.TempDir(), "scratch"), Skip: skip}, func(Example) error {
		t.Error("an extracted commit was extracted again")
		return nil
	})
	if err != nil || rep.Skipped != 2 || rep.Kept != 2 {
		t.Errorf("rerun: got %+v, %v, want both kept commits skipped", rep, err)
	}
}
