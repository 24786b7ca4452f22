package index

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/store"
)

// TestChanges: Changes names what the next run adds, reads again and
// deletes, and nothing once that run is done; a file touched but not
// changed and a new binary file (which a run skips) are not stale.
func TestChanges(t *testing.T) {
	ctx := context.Background()
	s := newSynthRepo(t, t.TempDir(), 12)
	b := NewBuilder(store.NewFactory(filepath.Join(t.TempDir(), "state")))
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
	b := NewBuilder(store.NewFactory(filepath.Join(t.TempDir(), "state")))
	if _, err := b.Run(ctx, s.root); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	if _, err := b.Changes(ctx, other); err == nil || !strings.Contains(err.Error(), "cra index") {
		t.Errorf("got %v, want an error naming 'cra index'", err)
	}
}
