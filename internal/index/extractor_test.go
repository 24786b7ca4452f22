package index

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
)

// TestExtractorVersion: an index stores the extractor version it was
// written with, and one written by an older extractor is read again
// once, file by file or as a rebuild, into what a fresh index of the same
// tree holds.
func TestExtractorVersion(t *testing.T) {
	// One of the package's four longest tests (SQLite is Go code,
	// instrumented, under -race): they run side by side, on their own
	// trees and states, so the package's wall time is not their sum.
	t.Parallel()
	for _, tc := range []struct {
		name    string
		files   int
		rebuilt bool
	}{
		{"incremental", 12, false}, // under rebuildMinFiles
		{"rebuilt", 181, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := newSynthRepo(t, t.TempDir(), tc.files)
			s.write(t, "third_party/six.py", "PY3 = True\n")
			state := store.NewFactory(statedir.At(filepath.Join(t.TempDir(), "state")))
			var reads int64
			index := func(f *store.Factory) *Result {
				t.Helper()
				reads = 0
				b := NewBuilder(f)
				countReads(&reads)(b)
				res, err := b.Run(ctx, s.root)
				if err != nil {
					t.Fatal(err)
				}
				return res
			}

			res := index(state)
			if got := storedExtractor(t, state); got != ExtractorVersion {
				t.Errorf("after a first run: stored extractor %d, want %d", got, ExtractorVersion)
			}
			if res.Reextracted {
				t.Error("a first run says it re-extracted")
			}
			files := res.Indexed
			if res = index(state); res.Changed != 0 || res.Unchanged != files || reads != 0 || res.Reextracted {
				t.Errorf("a run with no change: changed %d, unchanged %d, read %d, reextracted %v; want 0, %d, 0, false",
					res.Changed, res.Unchanged, reads, res.Reextracted, files)
			}

			// An index as an older extractor left it: some of what the
			// current one extracts is missing, and the version is 0.
			execCurated(t, state,
				`DELETE FROM name_refs`,
				`DELETE FROM docstrings`,
				`UPDATE file_index SET vendored = ''`,
				`UPDATE repo_state SET extractor = 0`)
			res = index(state)
			if !res.Reextracted || res.Rebuilt != tc.rebuilt {
				t.Errorf("after an older extractor: reextracted %v, rebuilt %v; want true, %v", res.Reextracted, res.Rebuilt, tc.rebuilt)
			}
			if res.Changed != files || res.Added != 0 || res.Deleted != 0 || res.Unchanged != 0 || reads != int64(files) {
				t.Errorf("after an older extractor: changed %d, added %d, deleted %d, unchanged %d, read %d; want %d changed and read",
					res.Changed, res.Added, res.Deleted, res.Unchanged, reads, files)
			}
			if res.Vendored != 1 {
				t.Errorf("after an older extractor: vendored %d, want 1", res.Vendored)
			}
			if got := storedExtractor(t, state); got != ExtractorVersion {
				t.Errorf("after a re-extraction: stored extractor %d, want %d", got, ExtractorVersion)
			}
			fresh := store.NewFactory(statedir.At(filepath.Join(t.TempDir(), "state")))
			index(fresh)
			if diff := cmp.Diff(dumpIndex(t, fresh), dumpIndex(t, state)); diff != "" {
				t.Errorf("re-extracted index (+) differs from a fresh one (-):\n%s", diff)
			}

			if res = index(state); res.Changed != 0 || reads != 0 || res.Reextracted {
				t.Errorf("the run after: changed %d, read %d, reextracted %v; want 0, 0, false", res.Changed, reads, res.Reextracted)
			}
		})
	}
}

// TestExtractorVersionKeptOnFailure: a run that does not finish leaves
// the old version stored, so the next run reads every file again.
func TestExtractorVersionKeptOnFailure(t *testing.T) {
	r := newRepo(t, false)
	r.write("a.py", "def a():\n    return 1\n")
	r.write("b.py", "def b():\n    return 2\n")
	r.index()
	execCurated(t, r.f, `UPDATE repo_state SET extractor = 0`)

	ctx, cancel := context.WithCancel(context.Background())
	b := NewBuilder(r.f)
	b.Progress = func(Progress) { cancel() }
	if _, err := b.Run(ctx, r.root); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if got := storedExtractor(t, r.f); got != 0 {
		t.Errorf("after a cancelled run: stored extractor %d, want the old 0", got)
	}

	res := r.index()
	if !res.Reextracted || res.Changed != 2 {
		t.Errorf("the run after: reextracted %v, changed %d; want true, 2", res.Reextracted, res.Changed)
	}
	if got := storedExtractor(t, r.f); got != ExtractorVersion {
		t.Errorf("the run after: stored extractor %d, want %d", got, ExtractorVersion)
	}
	r.integrity()
}

// storedExtractor reads repo_state.extractor of the only repository in
// f's index.
func storedExtractor(t *testing.T, f *store.Factory) int {
	t.Helper()
	db, err := f.Open(context.Background(), store.Curated, "", true)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int
	if err := db.QueryRow(`SELECT extractor FROM repo_state`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// execCurated runs statements on f's index, as an older cra or a user
// with sqlite3 would.
func execCurated(t *testing.T, f *store.Factory, qs ...string) {
	t.Helper()
	ctx := context.Background()
	db, err := f.Open(ctx, store.Curated, "", false)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range qs {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}
