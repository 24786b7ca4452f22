package index

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
)

// TestChanges: Changes names what the next run adds, reads again and
// deletes, and nothing once that run is done; a file touched but not
// changed and a new binary file (which a run skips) are not stale.
func TestChanges(t *testing.T) {
	ctx := context.Background()
	s := newSynthRepo(t, t.TempDir(), 12)
	b := NewBuilder(store.NewFactory(statedir.At(filepath.Join(t.TempDir(), "state"))))
	if _, err := b.Run(ctx, s.root); err != nil {
		t.Fatal(err)
	}
	changes := func() *Changeset {
		t.Helper()
		d, err := b.Changes(ctx, s.root)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := changes(); d.Stale() {
		t.Fatalf("right after a run: got %+v, want no change", d)
	}

	s.change(t, 1, 1)
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(filepath.Join(s.root, s.path(2)), later, later); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(s.root, s.path(3)))
	s.write(t, "pkgnew/added.py", "def added():\n    return 1\n")
	s.write(t, "blob.dat", "\x00binary")
	s.write(t, s.path(4), "\x00binary now")
	want := &Changeset{
		Added:   []string{"pkgnew/added.py"},
		Changed: []string{s.path(1), s.path(4)},
		Deleted: []string{s.path(3)},
	}
	if diff := cmp.Diff(want, changes()); diff != "" {
		t.Errorf("after edits (-want +got):\n%s", diff)
	}
	if got := want.Paths(); len(got) != 4 || got[0] != "pkgnew/added.py" || got[3] != s.path(3) {
		t.Errorf("paths: got %v, want added, then changed, then deleted", got)
	}

	if _, err := b.Run(ctx, s.root); err != nil {
		t.Fatal(err)
	}
	if d := changes(); d.Stale() {
		t.Errorf("after the run that took them in: got %+v, want no change", d)
	}
}

// TestChangesNotIndexed: a repository the index does not hold is an
// error that names 'cra index'.
func TestChangesNotIndexed(t *testing.T) {
	ctx := context.Background()
	s := newSynthRepo(t, t.TempDir(), 3)
	b := NewBuilder(store.NewFactory(statedir.At(filepath.Join(t.TempDir(), "state"))))
	if _, err := b.Run(ctx, s.root); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	if _, err := b.Changes(ctx, other); err == nil || !strings.Contains(err.Error(), "cra index") {
		t.Errorf("got %v, want an error naming 'cra index'", err)
	}
}

// TestWatch: a Watch answers from memory while nothing it keeps moved,
// whether its last answer was current or stale, and compares in full when
// a file is edited, added, deleted or renamed, when the index is written,
// and once its trust expires.
func TestWatch(t *testing.T) {
	ctx := context.Background()
	s := newSynthRepo(t, t.TempDir(), 12)
	if err := os.Mkdir(filepath.Join(s.root, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	b := NewBuilder(store.NewFactory(statedir.At(filepath.Join(t.TempDir(), "state"))))
	if _, err := b.Run(ctx, s.root); err != nil {
		t.Fatal(err)
	}
	w := b.Watch(s.root, s.root)
	clock := time.Now()
	w.now = func() time.Time { return clock }
	check := func(step string, wantFull int, want *Changeset) {
		t.Helper()
		before := w.full
		got, err := w.Changes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", step, diff)
		}
		if w.full-before != wantFull {
			t.Errorf("%s: %d full comparisons, want %d", step, w.full-before, wantFull)
		}
	}
	index := func() {
		t.Helper()
		if _, err := b.Run(ctx, s.root); err != nil {
			t.Fatal(err)
		}
	}
	check("first call", 1, &Changeset{})
	check("nothing moved", 0, &Changeset{})

	s.change(t, 1, 1)
	check("a file edited", 1, &Changeset{Changed: []string{s.path(1)}})
	check("still stale: from memory", 0, &Changeset{Changed: []string{s.path(1)}})
	s.change(t, 1, 2)
	check("edited again", 1, &Changeset{Changed: []string{s.path(1)}})
	index()
	check("after the index run", 1, &Changeset{})
	check("then from memory", 0, &Changeset{})

	s.write(t, "pkg000/beside.py", "x = 1\n")
	check("a file added beside others", 1, &Changeset{Added: []string{"pkg000/beside.py"}})
	index()
	check("after the index run", 1, &Changeset{})

	s.write(t, "newdir/deep/fresh.py", "y = 2\n")
	check("a file in a new directory", 1, &Changeset{Added: []string{"newdir/deep/fresh.py"}})
	index()
	check("after the index run", 1, &Changeset{})

	if err := os.Rename(filepath.Join(s.root, s.path(2)), filepath.Join(s.root, "pkg000/renamed.py")); err != nil {
		t.Fatal(err)
	}
	check("a file renamed", 1, &Changeset{Added: []string{"pkg000/renamed.py"}, Deleted: []string{s.path(2)}})
	index()
	check("after the index run", 1, &Changeset{})

	// A file in a directory that held no listed file moves nothing kept:
	// it shows once the trust expires.
	s.write(t, "empty/late.py", "z = 3\n")
	check("a file where nothing was listed", 0, &Changeset{})
	clock = clock.Add(DefaultWatchAge)
	check("after MaxAge", 1, &Changeset{Added: []string{"empty/late.py"}})
}

// TestChangesIn: a copy of the repository (a run's working copy) is
// compared with the repository's index: its own edits show, the
// repository's files are not looked at.
func TestChangesIn(t *testing.T) {
	ctx := context.Background()
	s := newSynthRepo(t, t.TempDir(), 8)
	b := NewBuilder(store.NewFactory(statedir.At(filepath.Join(t.TempDir(), "state"))))
	if _, err := b.Run(ctx, s.root); err != nil {
		t.Fatal(err)
	}
	copyDir := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(copyDir, os.DirFS(s.root)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(copyDir, filepath.FromSlash(s.path(1))), []byte("def edited():\n    return 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := b.ChangesIn(ctx, s.root, copyDir)
	if err != nil {
		t.Fatal(err)
	}
	// The copy's mtimes are new, so every file is hashed: only the edit
	// differs.
	if diff := cmp.Diff(&Changeset{Changed: []string{s.path(1)}}, d); diff != "" {
		t.Errorf("the copy (-want +got):\n%s", diff)
	}
	if d, err := b.Changes(ctx, s.root); err != nil || d.Stale() {
		t.Errorf("the repository itself: got %+v, %v, want no change", d, err)
	}
}
