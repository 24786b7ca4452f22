package board

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestListIndex: a listing through the list indexes (tasks/.index.<folder>) is the
// listing every file gives, after the index is deleted, damaged or
// rebuilt, and after files change behind it: by the board, by hand at
// the same size with the mtime put back, removed, or unreadable. A
// listed task written back keeps the keys this cra does not know.
func TestListIndex(t *testing.T) {
	ctx := context.Background()
	b, s, _ := newTestBoard(t)
	// Every reading is taken after its file's change by more than
	// racySlack, so the index's entries are trusted.
	s.now = func() time.Time { return time.Now().Add(2 * racySlack) }
	var ids []string
	for i := range 6 {
		ids = append(ids, add(t, b, fmt.Sprintf("task %d", i)).ID)
	}
	view := func(ls []Listed) []string {
		var out []string
		for _, l := range ls {
			task, _ := json.Marshal(l.Task)
			e := ""
			if l.Err != nil {
				e = l.Err.Error()
			}
			out = append(out, fmt.Sprintf("%s %s %s %s", l.Folder, l.ID, task, e))
		}
		return out
	}
	check := func(step string) {
		t.Helper()
		got, err := s.List(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		var want []Listed
		for _, f := range Folders() {
			l, _, err := s.listIndexed(ctx, newListIndex(), f)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, l...)
		}
		if diff := cmp.Diff(view(want), view(got)); diff != "" {
			t.Errorf("%s: the listing (+) differs from the files (-):\n%s", step, diff)
		}
		entries, readable := 0, 0
		for _, f := range Folders() {
			entries += len(s.loadIndex(f).Entries)
		}
		for _, l := range want {
			if l.Err == nil {
				readable++
				if e := s.loadIndex(l.Folder).Entries[l.ID]; e == nil || e.Task.Title != l.Task.Title {
					t.Errorf("%s: the index has no entry for %s/%s as its file says", step, l.Folder, l.ID)
				}
			}
		}
		if entries != readable {
			t.Errorf("%s: the indexes have %d entries, want %d", step, entries, readable)
		}
	}
	check("first listing")

	// The listing reads the index: a title changed in it alone shows.
	ix := s.loadIndex(Pending)
	ix.Entries[ids[0]].Task.Title = "from the index"
	if err := s.saveIndex(Pending, ix); err != nil {
		t.Fatal(err)
	}
	if l, err := s.List(ctx, Pending); err != nil || l[indexOf(l, ids[0])].Task.Title != "from the index" {
		t.Fatalf("the listing did not come from the index (%v)", err)
	}
	if err := os.Remove(s.indexPath(Pending)); err != nil {
		t.Fatal(err)
	}
	check("index deleted")

	if err := os.WriteFile(s.indexPath(Pending), []byte("not an index"), 0o644); err != nil {
		t.Fatal(err)
	}
	check("index damaged")

	// A hand's edit at the same size, its mtime put back.
	path := s.Path(ids[1], Pending)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(data), "task 1", "TASK 1", 1)
	if edited == string(data) {
		t.Fatal("the title is not in the file")
	}
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	check("edited by hand, same size and mtime")

	if _, err := b.Move(ctx, ids[2], FailedBlocked, "test"); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(s.Path(ids[3], Pending)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Path(ids[4], Pending), []byte("id: [unclosed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check("moved, removed, made unreadable")

	// A key this cra does not know survives a listed task written back.
	if err := os.WriteFile(s.Path(ids[5], Pending), []byte("id: "+ids[5]+"\ntitle: custom\ncustom_key: kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check("a key this cra does not know")
	l, err := s.List(ctx, Pending)
	if err != nil {
		t.Fatal(err)
	}
	task := l[indexOf(l, ids[5])].Task
	if task.node != nil || task.raw == nil {
		t.Fatal("the task did not come from the index")
	}
	// What 'cra task migrate' asks of it: the keys its file lacks.
	if got := task.missingKeys([]string{"title", "kind"}); !slices.Equal(got, []string{"kind"}) {
		t.Errorf("keys missing from the file of a task from the index: %v, want [kind]", got)
	}
	task.Notes = "written back"
	if err := s.Put(ctx, task, Pending); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(s.Path(ids[5], Pending)); err != nil || !strings.Contains(string(data), "custom_key: kept") || !strings.Contains(string(data), "written back") {
		t.Errorf("written back from the index: %q (%v), want custom_key kept and the notes", data, err)
	}

	// 'cra task rebuild' builds the indexes anew from the files: one
	// damaged, one deleted.
	if err := os.WriteFile(s.indexPath(Pending), []byte("damaged"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(s.indexPath(FailedBlocked)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Rebuild(ctx, false); err != nil {
		t.Fatal(err)
	}
	if len(s.loadIndex(Pending).Entries) == 0 || len(s.loadIndex(FailedBlocked).Entries) == 0 {
		t.Error("Rebuild left a folder without its list index")
	}
	check("rebuilt")
}

func indexOf(ls []Listed, id string) int {
	for i, l := range ls {
		if l.ID == id {
			return i
		}
	}
	return -1
}
