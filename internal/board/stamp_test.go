package board

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/world"
)

// idsCounter is a FileStore that counts the listings of its folders.
type idsCounter struct {
	*FileStore
	ids int
}

func (c *idsCounter) IDs(ctx context.Context, folder Folder) ([]string, error) {
	c.ids++
	return c.FileStore.IDs(ctx, folder)
}

// TestRepairFoldersIdle: a Level 1 repair on a board that has not
// changed since the last pass, which found everything where the log puts
// it, lists no folder; a line in the log, a task's move, or a task left
// to its live run makes the next pass read the folders again.
func TestRepairFoldersIdle(t *testing.T) {
	ctx := context.Background()
	b, s, _ := newTestBoard(t)
	c := &idsCounter{FileStore: s}
	b.Store = c
	var ids []string
	for _, title := range []string{"closed", "finished", "third"} {
		ids = append(ids, add(t, b, title).ID)
	}
	if _, err := b.Close(ctx, ids[0], "done"); err != nil {
		t.Fatal(err)
	}
	// An hour on: every folder's last change is older than racySlack.
	b.Now = func() time.Time { return time.Now().Add(time.Hour) }
	pass := func(live func(string) bool) (moved []string, listings int) {
		t.Helper()
		c.ids = 0
		moved, err := b.RepairFolders(ctx, live)
		if err != nil {
			t.Fatal(err)
		}
		return moved, c.ids
	}
	if _, n := pass(nil); n == 0 {
		t.Fatalf("first pass listed no folder")
	}
	if moved, n := pass(nil); n != 0 || len(moved) != 0 {
		t.Errorf("idle pass: listed %d folders and moved %q, want none", n, moved)
	}
	// A run finished, but its file stayed in pending (a move that failed
	// after its log line): the log changed, and the pass moves it.
	for _, st := range []world.Status{world.StatusActive, world.StatusFinish} {
		if _, err := b.Log.Agent(ctx, st, ids[1], "run 1: shell", ""); err != nil {
			t.Fatal(err)
		}
	}
	if moved, n := pass(nil); n == 0 || len(moved) != 1 {
		t.Errorf("after the log changed: listed %d folders and moved %q, want the folders read and one move", n, moved)
	}
	if f := folderOn(t, s, ids[1]); f != Completed {
		t.Errorf("finished task in %s, want completed", f)
	}
	if _, n := pass(nil); n == 0 {
		t.Errorf("after a move: listed no folder")
	}
	if _, n := pass(nil); n != 0 {
		t.Errorf("idle again: listed %d folders, want none", n)
	}
	// A task left where it is for a run still going is asked about again
	// on every pass.
	for _, st := range []world.Status{world.StatusActive, world.StatusFinish} {
		if _, err := b.Log.Agent(ctx, st, ids[2], "run 1: shell", ""); err != nil {
			t.Fatal(err)
		}
	}
	live := func(id string) bool { return id == ids[2] }
	for i := range 2 {
		if moved, n := pass(live); n == 0 || len(moved) != 0 {
			t.Errorf("pass %d with a live run: listed %d folders and moved %q, want the folders read and nothing moved", i, n, moved)
		}
	}
	if moved, _ := pass(nil); len(moved) != 1 {
		t.Errorf("once the run is gone: moved %q, want the task", moved)
	}
}

// TestStampOfYoungFolder: a folder changed within racySlack gives no
// stamp (a second change in the same tick of the file system's clock
// would not change it); a store that is not files gives none either.
func TestStampOfYoungFolder(t *testing.T) {
	b, _, _ := newTestBoard(t)
	add(t, b, "young")
	if _, ok := b.Stamp(); ok {
		t.Errorf("stamp of a board changed just now: ok, want none")
	}
	b.Now = func() time.Time { return time.Now().Add(time.Hour) }
	before, ok := b.Stamp()
	if !ok {
		t.Fatalf("stamp of a board changed an hour ago: none")
	}
	add(t, b, "another")
	if after, ok := b.Stamp(); !ok || after == before {
		t.Errorf("stamp after an add: %v (ok %v), want a new one", after, ok)
	}
	b.Store = struct{ Store }{b.Store}
	if _, ok := b.Stamp(); ok {
		t.Errorf("stamp of a store that is not a FileStore: ok, want none")
	}
}

// TestRebuildAtStartKeepsIndex: the daemon's start repairs the folders as
// Rebuild does but leaves the list index the listing brought up to date
// (its file is not written again when no task changed), while Rebuild
// ('cra task rebuild') writes it anew.
func TestRebuildAtStartKeepsIndex(t *testing.T) {
	ctx := context.Background()
	b, s, _ := newTestBoard(t)
	moved := add(t, b, "moved by hand")
	add(t, b, "stays")
	if _, err := s.List(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.Move(ctx, moved.ID, Pending, Failed); err != nil {
		t.Fatal(err)
	}
	index := func() os.FileInfo {
		t.Helper()
		fi, err := os.Stat(s.indexPath(Pending))
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	rep, err := b.RebuildAtStart(ctx)
	if err != nil || len(rep.Repairs) != 1 || folderOn(t, s, moved.ID) != Pending {
		t.Fatalf("start: %+v %v, task in %s; want the task moved back to pending", rep, err, folderOn(t, s, moved.ID))
	}
	if _, err := s.List(ctx, ""); err != nil {
		t.Fatal(err)
	}
	// Marked by a time long past, which a write of the file replaces.
	past := time.Now().Add(-24 * time.Hour).Truncate(time.Second)
	if err := os.Chtimes(s.indexPath(Pending), past, past); err != nil {
		t.Fatal(err)
	}
	if rep, err := b.RebuildAtStart(ctx); err != nil || len(rep.Repairs) != 0 {
		t.Fatalf("start again: %+v %v, want nothing to repair", rep, err)
	}
	if !index().ModTime().Equal(past) {
		t.Errorf("the start wrote the list index again: want it kept")
	}
	if _, err := b.Rebuild(ctx, false); err != nil {
		t.Fatal(err)
	}
	if index().ModTime().Equal(past) {
		t.Errorf("Rebuild kept the list index's file: want it written anew")
	}
}
