package learn

import (
	"context"
	"fmt"
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

// tuneRepo is a small history of commits that each name the function
// they change, indexed, with its curated DB open read-write.
func tuneRepo(t *testing.T, commits int) (dir string, f *store.Factory, repoID int64) {
	t.Helper()
	dir = t.TempDir()
	gittest.Run(t, dir, "init", "-q")
	files := map[string]string{".gitignore": ".clean_room/\n"}
	for i := range 6 {
		files[fmt.Sprintf("pkg/mod%d.py", i)] = fmt.Sprintf("def func%d(value):\n    return value\n", i)
	}
	commitFiles(t, dir, "2024-01-01T00:00:00Z", "Start the package with six modules", files)
	for i := range commits {
		m := i % 6
		commitFiles(t, dir, fmt.Sprintf("2024-01-%02dT00:00:00Z", i+2), fmt.Sprintf("Make func%d return the value plus %d", m, i),
			map[string]string{fmt.Sprintf("pkg/mod%d.py", m): fmt.Sprintf("def func%d(value):\n    return value + %d\n", m, i)})
	}
	f = store.NewFactory(statedir.At(filepath.Join(dir, ".clean_room")))
	res, err := index.NewBuilder(f).Run(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, f, res.RepoID
}

// TestTuneStoresAndRerunsIncrementally: a tune draws the history's
// examples, fits, stores the verdict where WeightsFor reads it; a second
// tune after one more commit replays that commit only.
func TestTuneStoresAndRerunsIncrementally(t *testing.T) {
	ctx := context.Background()
	dir, f, repoID := tuneRepo(t, 8)
	db, err := f.Open(ctx, store.Curated, "", false)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	opts := TuneOptions{Repo: dir, ScratchDir: ScratchDir(filepath.Join(dir, ".clean_room")), DB: db, RepoID: repoID,
		Config: RepoConfig{MinTrain: 4, MinValid: 2}}
	res, err := Tune(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Extract.Examples != 8 || res.Examples != 8 || len(res.Fit.Train)+len(res.Fit.Valid) != 8 {
		t.Fatalf("got %d examples drawn, %d learned from, fit %d+%d; want the 8 commits after the first", res.Extract.Examples, res.Examples, len(res.Fit.Train), len(res.Fit.Valid))
	}
	stored, err := kb.New(db).RankingWeights(ctx, repoID)
	if err != nil || stored == nil {
		t.Fatalf("got %+v, %v, want the fit stored", stored, err)
	}
	if stored.Used != res.Fit.Use || stored.Head != res.Head || stored.ValidCommits != len(res.Fit.Valid) || stored.ValidAcc5 != res.Fit.ValidRepo.Acc5 {
		t.Errorf("stored %+v, want the fit's verdict and figures (%+v)", stored, res.Fit)
	}

	commitFiles(t, dir, "2024-02-01T00:00:00Z", "Make func1 return the value times two", map[string]string{"pkg/mod1.py": "def func1(value):\n    return value * 2\n"})
	res, err = Tune(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Extract.Examples != 1 || res.Extract.Skipped != 8 || res.Examples != 9 {
		t.Errorf("rerun: got %d drawn, %d skipped, %d learned from; want the one new commit drawn", res.Extract.Examples, res.Extract.Skipped, res.Examples)
	}
}

// TestCachedExamples: examples drawn by another version of the drawing,
// or with other weights, are dropped; the same ones are read back.
func TestCachedExamples(t *testing.T) {
	dir := t.TempDir()
	w := retrieve.HandSetWeights
	if ex, err := cachedExamples(dir, w); err != nil || len(ex) != 0 {
		t.Fatalf("empty cache: got %v, %v", ex, err)
	}
	f, err := os.Create(filepath.Join(dir, "examples.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range synthetic("a", 3) {
		if err := WriteExample(f, e); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	if ex, err := cachedExamples(dir, w); err != nil || len(ex) != 3 {
		t.Fatalf("same weights: got %d examples, %v, want 3", len(ex), err)
	}
	other := w
	other.Search = 2
	if ex, err := cachedExamples(dir, other); err != nil || len(ex) != 0 {
		t.Fatalf("other weights: got %d examples, %v, want none", len(ex), err)
	}
	if _, err := os.Stat(filepath.Join(dir, "examples.jsonl")); !os.IsNotExist(err) {
		t.Errorf("the examples of other weights are still there: %v", err)
	}
}

// TestWeightsFor: retrieval ranks with the repository's weights only when
// they won, against the global weights cra ships now.
func TestWeightsFor(t *testing.T) {
	ctx := context.Background()
	_, f, repoID := tuneRepo(t, 1)
	db, err := f.Open(ctx, store.Curated, "", false)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	k := kb.New(db)
	own := retrieve.Weights{Search: 2, Mention: 1, Symbol: 3, Prose: 0.3}
	c, err := retrieve.WeightsFor(ctx, k, repoID)
	if err != nil || c.Source != retrieve.WeightsGlobal || c.Weights != retrieve.DefaultWeights || c.Learned != nil {
		t.Fatalf("never tuned: got %+v, %v, want the global weights", c, err)
	}
	tests := []struct {
		name   string
		fit    RepoFit
		source string
		reason string
	}{
		{"won", RepoFit{Weights: own, Global: retrieve.DefaultWeights, Use: true, Reason: "kept: better"}, retrieve.WeightsRepository, "kept: better"},
		{"lost", RepoFit{Weights: own, Global: retrieve.DefaultWeights, Use: false, Reason: "not kept: worse"}, retrieve.WeightsGlobal, "did not beat"},
		{"judged against other global weights", RepoFit{Weights: own, Global: retrieve.Weights{Search: 9}, Use: true}, retrieve.WeightsGlobal, "run 'cra tune' again"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := Store(ctx, db, repoID, tc.fit, "abc", 0); err != nil {
				t.Fatal(err)
			}
			c, err := retrieve.WeightsFor(ctx, k, repoID)
			if err != nil || c.Source != tc.source || !strings.Contains(c.Reason, tc.reason) {
				t.Fatalf("got %+v, %v, want source %s and a reason with %q", c, err, tc.source, tc.reason)
			}
			want := retrieve.DefaultWeights
			if tc.source == retrieve.WeightsRepository {
				want = own
			}
			if c.Weights != want {
				t.Errorf("got weights %+v, want %+v", c.Weights, want)
			}
		})
	}
	if _, err := db.ExecContext(ctx, `UPDATE ranking_weights SET weights = '{"search": -1}'`); err != nil {
		t.Fatal(err)
	}
	if _, err := retrieve.WeightsFor(ctx, k, repoID); err == nil || !strings.Contains(err.Error(), "cra tune --forget") {
		t.Errorf("damaged weights: got %v, want an error naming the fix", err)
	}
	if had, err := Forget(ctx, db, repoID); err != nil || !had {
		t.Errorf("forget: got %v, %v", had, err)
	}
	if c, err := retrieve.WeightsFor(ctx, k, repoID); err != nil || c.Source != retrieve.WeightsGlobal || c.Learned != nil {
		t.Errorf("after forget: got %+v, %v, want the global weights", c, err)
	}
}
