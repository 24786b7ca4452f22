package retrieve

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/index"
	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
	"github.com/cra-dev/cra/internal/workspace"
)

// historyRepo is a git repository under test, indexed into its own state
// directory as often as a test asks.
type historyRepo struct {
	root    string
	factory *store.Factory
}

func newHistoryRepo(t *testing.T) *historyRepo {
	t.Helper()
	root := t.TempDir()
	git(t, root, "init", "-q")
	state, err := workspace.EnsureStateDir(root)
	if err != nil {
		t.Fatal(err)
	}
	return &historyRepo{root: root, factory: store.NewFactory(statedir.At(state))}
}

// commit writes files (an empty content deletes the file) and commits them
// with msg, returning the commit's hash.
func (h *historyRepo) commit(t *testing.T, msg string, files map[string]string) string {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(h.root, filepath.FromSlash(name))
		if content == "" {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, h.root, "add", "-A")
	git(t, h.root, "commit", "-qm", msg)
	return gitOut(t, h.root, "rev-parse", "HEAD")
}

// index indexes the checkout incrementally into the repository's curated
// DB, as the retrieval harness and bootstrap do at each task's parent,
// with commits over maxFiles left out of co-change (0: the default), and
// returns a ranker over it.
func (h *historyRepo) index(t *testing.T, maxFiles int) *Ranker {
	t.Helper()
	ctx := context.Background()
	b := index.NewBuilder(h.factory)
	if maxFiles > 0 {
		b.MaxCommitFiles = maxFiles
	}
	res, err := b.Run(ctx, h.root)
	if err != nil {
		t.Fatal(err)
	}
	db, err := h.factory.Open(ctx, store.Curated, "", true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	rk := NewRanker(kb.New(db), res.RepoID)
	rk.Weights.History = 0.6
	return rk
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return gittest.Run(t, dir, args...)
}

func rankFor(t *testing.T, rk *Ranker, task string) map[string]Candidate {
	t.Helper()
	cands, err := rk.Rank(context.Background(), Analyze(task), 50)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Candidate{}
	for _, c := range cands {
		out[c.Path] = c
	}
	return out
}

// TestHistorySignal scores, on a real repository, the files that the past
// commits most like the task changed: a file that only history links to
// the task enters as a candidate; a commit over max_commit_files and a
// file deleted since give nothing; a two-file commit gives each of its
// files 1/√2 of what a one-file commit of the same message gives.
func TestHistorySignal(t *testing.T) {
	h := newHistoryRepo(t)
	h.commit(t, "initial import", map[string]string{
		"shop/render.py": "def draw(canvas):\n    return canvas\n",
		"shop/parse.py":  "def read(text):\n    return text.split()\n",
		"shop/store.py":  "def save(rows):\n    return len(rows)\n",
		"shop/extra.py":  "def spare():\n    return 0\n",
		"shop/gone.py":   "def old():\n    return 1\n",
		"README.md":      "# shop\n",
	})
	h.commit(t, "Fix the zebulon overflow in widgets", map[string]string{"shop/render.py": "def draw(canvas):\n    return canvas[:10]\n"})
	h.commit(t, "Fix the zebulon overflow in widgets", map[string]string{
		"shop/parse.py": "def read(text):\n    return text.split(',')\n",
		"shop/store.py": "def save(rows):\n    return len(rows) + 0\n",
	})
	h.commit(t, "Teach the reader to skip comments", map[string]string{"shop/parse.py": "def read(text):\n    return [w for w in text.split(',') if w]\n"})
	h.commit(t, "zebulon zebulon overflow sweep", map[string]string{
		"shop/render.py": "def draw(canvas):\n    return canvas[:20]\n",
		"shop/parse.py":  "def read(text):\n    return [w for w in text.split(';') if w]\n",
		"shop/store.py":  "def save(rows):\n    return len(rows) + 1\n",
		"shop/extra.py":  "def spare():\n    return 2\n",
	})
	h.commit(t, "zebulon overflow in the old module", map[string]string{"shop/gone.py": "def old():\n    return 2\n"})
	h.commit(t, "Drop the old module", map[string]string{"shop/gone.py": ""})
	rk := h.index(t, 3)

	got := rankFor(t, rk, "widgets overflow with a zebulon")
	for _, tc := range []struct {
		path string
		want float64
	}{
		{"shop/render.py", 1},
		{"shop/parse.py", 1 / sqrt2},
		{"shop/store.py", 1 / sqrt2},
		{"shop/extra.py", 0}, // only in the four-file sweep, over max_commit_files 3
		{"README.md", 0},
	} {
		c, ok := got[tc.path]
		if tc.want == 0 {
			if ok && c.Signals["history"] != 0 {
				t.Errorf("%s: history %v, want none", tc.path, c.Signals["history"])
			}
			continue
		}
		if !ok {
			t.Errorf("%s is no candidate; want it brought by history (got %v)", tc.path, got)
			continue
		}
		if d := c.Signals["history"] - tc.want; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: history %v, want %v (signals %v)", tc.path, c.Signals["history"], tc.want, c.Signals)
		}
		if want := c.Signals["history"] * rk.Weights.History; c.Score < want-1e-9 {
			t.Errorf("%s: score %v below its history part %v", tc.path, c.Score, want)
		}
	}
	if _, ok := got["shop/gone.py"]; ok {
		t.Error("shop/gone.py, deleted, is a candidate")
	}
	if c := got["shop/render.py"]; len(c.Reasons) == 0 || c.Reasons[0] != `changed by a past commit like the task ("Fix the zebulon overflow in widgets")` {
		t.Errorf("shop/render.py reasons: %q", c.Reasons)
	}

	// Off (weight 0), the signal is not computed and brings nothing.
	rk.Weights.History = 0
	for p, c := range rankFor(t, rk, "widgets overflow with a zebulon") {
		if _, ok := c.Signals["history"]; ok {
			t.Errorf("%s has a history signal at weight 0: %v", p, c.Signals)
		}
	}
	// A learner's extraction records it for the candidates there are,
	// and brings none.
	rk.ExtraFacts = true
	if n := len(rankFor(t, rk, "widgets overflow with a zebulon")); n != 0 {
		t.Errorf("ExtraFacts at weight 0: %d candidates, want none (no file holds the words)", n)
	}
}

const sqrt2 = 1.4142135623730951

// TestHistoryTopK: only the historyK most similar commits count, ties by
// their order in the index, and a commit sharing no word counts nothing.
func TestHistoryTopK(t *testing.T) {
	var commits []kb.PastCommit
	for i := range historyK + 2 {
		commits = append(commits, kb.PastCommit{ID: int64(i + 1), Message: "zebulon overflow", FilesChanged: 1, Files: []int64{int64(100 + i)}})
	}
	commits = append(commits,
		kb.PastCommit{ID: 50, Message: "unrelated words", FilesChanged: 1, Files: []int64{7}},
		kb.PastCommit{ID: 51, Message: "zebulon", FilesChanged: 60, Files: []int64{8}}, // over the default bound
		kb.PastCommit{ID: 52, Message: "zebulon overflow\n\nSigned-off-by: Kwyjibo <k@example.org>", FilesChanged: 4, Files: []int64{9}},
	)
	px := newPastIndex(commits, 0)
	scores, _ := px.historyScores(Analyze("the zebulon overflow, says kwyjibo").Keywords)
	want := map[int64]float64{}
	for i := range historyK {
		want[int64(100+i)] = 1
	}
	if len(scores) != len(want) {
		t.Errorf("got %d files %v, want the %d of the first commits", len(scores), scores, len(want))
	}
	for f, v := range want {
		if d := scores[f] - v; d > 1e-9 || d < -1e-9 {
			t.Errorf("file %d: got %v, want %v", f, scores[f], v)
		}
	}
	if s, _ := px.historyScores(Analyze("nothing alike").Keywords); len(s) != 0 {
		t.Errorf("a task sharing no word: got %v", s)
	}
	if s, _ := newPastIndex(nil, 0).historyScores([]string{"zebulon"}); len(s) != 0 {
		t.Errorf("no history: got %v", s)
	}
}

// TestHistoryNeverSeesLaterCommits: the history signal reads only commits
// reachable from the indexed HEAD. A commit whose distinctive message
// changes F lends F its score when the index stands at it; indexed again
// at its parent (the harness stepping from a later task to an earlier
// one, or a checkout backwards), or at a commit on another branch, the
// same message gets no history score for F.
func TestHistoryNeverSeesLaterCommits(t *testing.T) {
	h := newHistoryRepo(t)
	base := h.commit(t, "initial import", map[string]string{
		"core/frob.py":  "def frob(x):\n    return x\n",
		"core/other.py": "def other(y):\n    return y\n",
	})
	h.commit(t, "Tidy the other helper", map[string]string{"core/other.py": "def other(y):\n    return y or 0\n"})
	parent := gitOut(t, h.root, "rev-parse", "HEAD")
	const task = "Quux the kwyjibo zebulon before the flange"
	leak := h.commit(t, task, map[string]string{"core/frob.py": "def frob(x):\n    return x + 1\n"})
	// A sibling of the parent, on another branch.
	git(t, h.root, "checkout", "-q", "-b", "side", base)
	side := h.commit(t, "Unrelated change on a side branch", map[string]string{"core/other.py": "def other(y):\n    return -y\n"})

	for _, tc := range []struct {
		name  string
		steps []string // checkouts indexed in turn; the task is ranked after the last
		see   bool     // whether F may have the task's commit's history
	}{
		{"at the commit", []string{leak}, true},
		{"backwards to its parent", []string{leak, parent}, false},
		{"to a side branch", []string{leak, side}, false},
		{"forwards from the parent", []string{parent, leak}, true},
		{"forwards, then back", []string{parent, leak, parent}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A fresh state directory per case: the checkouts are the
			// only history the index has seen.
			state := t.TempDir()
			h := &historyRepo{root: h.root, factory: store.NewFactory(statedir.At(state))}
			var rk *Ranker
			for _, c := range tc.steps {
				git(t, h.root, "checkout", "-q", "--force", c)
				rk = h.index(t, 0)
			}
			got := rankFor(t, rk, task)
			v := got["core/frob.py"].Signals["history"]
			if tc.see && v == 0 {
				t.Errorf("at the commit itself F has no history score: the test cannot tell (got %v)", got)
			}
			if !tc.see && v != 0 {
				t.Errorf("F has history %v from a commit after the indexed HEAD (reasons %q)", v, got["core/frob.py"].Reasons)
			}
			// No other file holds the words, so nothing else can bring F.
			if !tc.see && len(got) != 0 {
				for p, c := range got {
					if c.Signals["history"] > 0 {
						t.Errorf("%s has history %v: %q", p, c.Signals["history"], c.Reasons)
					}
				}
			}
		})
	}
}

func TestHistoryDeterministic(t *testing.T) {
	h := newHistoryRepo(t)
	h.commit(t, "initial import", map[string]string{"a.py": "def a():\n    return 1\n", "b.py": "def b():\n    return 2\n", "c.py": "def c():\n    return 3\n"})
	for i := range 4 {
		// Equal messages and sizes: every file ties.
		h.commit(t, "Mend the zebulon flange", map[string]string{"a.py": fmt.Sprintf("def a():\n    return %d\n", i), "b.py": fmt.Sprintf("def b():\n    return %d\n", i)})
		h.commit(t, "Mend the zebulon flange", map[string]string{"c.py": fmt.Sprintf("def c():\n    return %d\n", i)})
	}
	rk := h.index(t, 0)
	var first []string
	for i := range 5 {
		rk.past = nil // read the index again, as a new ranker would
		cands, err := rk.Rank(context.Background(), Analyze("mend the zebulon flange"), 10)
		if err != nil {
			t.Fatal(err)
		}
		got := paths(cands)
		if i == 0 {
			first = got
			if len(got) != 3 {
				t.Fatalf("got %v, want a.py, b.py and c.py by history", got)
			}
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(first) {
			t.Fatalf("run %d: got %v, first %v", i, got, first)
		}
	}
}

// TestHistoryVariants: HistoryVariants under DefaultHistoryParams is
// HistoryScores, and each other setting moves the scores as it says: a
// smaller K counts fewer commits, Alpha damps big commits, MaxFiles drops
// them, HalfLife favours the newest (the commits newest first) and
// Confidence scales every score by how much of the task the best commit
// says.
func TestHistoryVariants(t *testing.T) {
	commits := []kb.PastCommit{
		{ID: 1, Message: "zebulon overflow in the widget", FilesChanged: 1, Files: []int64{10}},
		{ID: 2, Message: "zebulon overflow in the widget", FilesChanged: 4, Files: []int64{20, 21, 22, 23}},
		{ID: 3, Message: "zebulon", FilesChanged: 1, Files: []int64{30}},
	}
	q := Analyze("zebulon overflow in the widget")
	d := DefaultHistoryParams()
	at := func(hp func(*HistoryParams)) HistoryParams {
		v := d
		hp(&v)
		return v
	}
	got := HistoryVariants(commits, 0, q, []HistoryParams{
		d,
		at(func(v *HistoryParams) { v.K = 1 }),
		at(func(v *HistoryParams) { v.Alpha = 1 }),
		at(func(v *HistoryParams) { v.MaxFiles = 3 }),
		at(func(v *HistoryParams) { v.HalfLife = 1 }),
		at(func(v *HistoryParams) { v.Confidence = 1 }),
	})
	if def := HistoryScores(commits, 0, q); !maps.Equal(got[0], def) {
		t.Errorf("default setting: got %v, HistoryScores gives %v", got[0], def)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	// Default: file 10 best (1), commit 2's files 1/sqrt(4) of it.
	if !near(got[0][10], 1) || !near(got[0][20], 0.5) || got[0][30] <= 0 {
		t.Errorf("default: got %v", got[0])
	}
	if len(got[1]) != 1 || !near(got[1][10], 1) {
		t.Errorf("K=1: got %v, want file 10 alone", got[1])
	}
	if !near(got[2][20], 0.25) {
		t.Errorf("Alpha=1: file 20 got %v, want 1/4", got[2][20])
	}
	if _, ok := got[3][20]; ok || !near(got[3][10], 1) {
		t.Errorf("MaxFiles=3: got %v, want commit 2's files dropped", got[3])
	}
	// HalfLife 1: commit 2 is one commit older than commit 1 (half),
	// commit 3 two (a quarter).
	if !near(got[4][20], 0.25) || !(got[4][30] < got[0][30]) {
		t.Errorf("HalfLife=1: got %v, want file 20 at 1/4 and file 30 below its %v", got[4], got[0][30])
	}
	// Confidence scales every file by one factor in (0, 1]; a task
	// that says more than its best commit (a word another commit holds)
	// gets a smaller one.
	factor := got[5][10] / got[0][10]
	if factor <= 0 || factor > 1 || !near(got[5][20]/got[0][20], factor) || !near(got[5][30]/got[0][30], factor) {
		t.Errorf("Confidence=1: got %v against %v, want one factor in (0, 1]", got[5], got[0])
	}
	more := HistoryVariants(append(commits, kb.PastCommit{ID: 4, Message: "gizmo", FilesChanged: 1, Files: []int64{40}}), 0,
		Analyze("zebulon overflow in the widget gizmo"), []HistoryParams{d, at(func(v *HistoryParams) { v.Confidence = 1 })})
	if f := more[1][10] / more[0][10]; !(f < factor) {
		t.Errorf("Confidence=1: a task saying more than its best commit got factor %v, want below %v", f, factor)
	}
}

// TestHistoryFileDamping: FileDamping divides a file's history score by
// its number of past commits (those under the files bound) to its power
// before the best is scaled to 1, so a hub that many unrelated commits
// changed falls behind a file that changed with it in the one similar
// commit; at 0 the scores are HistoryScores'.
func TestHistoryFileDamping(t *testing.T) {
	commits := []kb.PastCommit{
		{ID: 1, Message: "zebulon overflow in the widget", FilesChanged: 2, Files: []int64{10, 11}},
		{ID: 2, Message: "zebulon sweep", FilesChanged: 60, Files: []int64{11, 12}}, // over the bound: not counted
	}
	for i := range 8 {
		commits = append(commits, kb.PastCommit{ID: int64(3 + i), Message: "unrelated chore", FilesChanged: 1, Files: []int64{11}})
	}
	q := Analyze("zebulon overflow in the widget")
	d := DefaultHistoryParams()
	damped := d
	damped.FileDamping = 0.5
	got := HistoryVariants(commits, 0, q, []HistoryParams{d, damped})
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if def := HistoryScores(commits, 0, q); !maps.Equal(got[0], def) {
		t.Errorf("FileDamping 0: got %v, HistoryScores gives %v", got[0], def)
	}
	if !near(got[0][10], 1) || !near(got[0][11], 1) {
		t.Errorf("undamped: got %v, want files 10 and 11 at 1 (one commit each)", got[0])
	}
	// File 11: nine commits under the bound, file 10 one.
	if !near(got[1][10], 1) || !near(got[1][11], 1/3.0) {
		t.Errorf("FileDamping 0.5: got %v, want file 10 at 1 and file 11 at 1/√9", got[1])
	}
}

// TestHistoryDampingWeight: Rank damps the history signal by
// Weights.HistoryDamping, and leaves it as HistoryScores has it at 0.
func TestHistoryDampingWeight(t *testing.T) {
	h := newHistoryRepo(t)
	h.commit(t, "initial import", map[string]string{"hub.py": "def hub():\n    return 0\n", "leaf.py": "def leaf():\n    return 0\n"})
	h.commit(t, "Mend the zebulon flange", map[string]string{"hub.py": "def hub():\n    return 1\n", "leaf.py": "def leaf():\n    return 1\n"})
	for i := range 3 {
		h.commit(t, "chore", map[string]string{"hub.py": fmt.Sprintf("def hub():\n    return %d\n", i+2)})
	}
	rk := h.index(t, 0)
	off := rankFor(t, rk, "mend the zebulon flange")
	if off["hub.py"].Signals["history"] != 1 || off["leaf.py"].Signals["history"] != 1 {
		t.Fatalf("HistoryDamping 0: history hub %v, leaf %v; want 1 both", off["hub.py"].Signals["history"], off["leaf.py"].Signals["history"])
	}
	rk.Weights.HistoryDamping = 1
	on := rankFor(t, rk, "mend the zebulon flange")
	// hub.py: the import, the fix and three chores; leaf.py: two.
	if got, want := on["hub.py"].Signals["history"], 2.0/5; math.Abs(got-want) > 1e-9 || on["leaf.py"].Signals["history"] != 1 {
		t.Errorf("HistoryDamping 1: history hub %v (want %v), leaf %v (want 1)", got, want, on["leaf.py"].Signals["history"])
	}
}
