package board

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
	if task.node != nil || task.srcDir == "" {
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

// TestListLargeFolder: a folder statted on several goroutines (a
// statChunk of 4) lists as its files say, in order and each with its file's
// mtime, from the files and then from the index: among them a symbolic
// link (listed with its error), a folder named like a task file (not
// listed) and a file name that is no task id. A file rewritten in place
// behind the index shows in the next listing.
func TestListLargeFolder(t *testing.T) {
	ctx := context.Background()
	s := NewFileStore(t.TempDir())
	s.now = func() time.Time { return time.Now().Add(2 * racySlack) }
	s.statChunk = 4
	dir := s.sd.TaskFolder(string(Pending))
	if err := os.MkdirAll(filepath.Join(dir, "t-fffffffe.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	n := 4*s.statChunk + 3
	var want []string
	for i := range n {
		id := fmt.Sprintf("t-%08x", i)
		if err := os.WriteFile(filepath.Join(dir, id+".yaml"), fmt.Appendf(nil, "id: %s\ntitle: task %d\n", id, i), 0o644); err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("%s task %d", id, i))
	}
	if err := os.Symlink("t-00000000.yaml", filepath.Join(dir, "t-ffffffff.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Not An Id.yaml"), []byte("id: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Listed in the order of the files' names: x-1-2.yaml before x-1.yaml.
	for _, id := range []string{"x-1", "x-1-2"} {
		if err := os.WriteFile(filepath.Join(dir, id+".yaml"), []byte("id: "+id+"\ntitle: task "+id+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want = append([]string{"Not An Id the file name is not a task id"}, append(want, "t-ffffffff a symbolic link", "x-1-2 task x-1-2", "x-1 task x-1")...)
	check := func(step string) {
		t.Helper()
		l, err := s.List(ctx, Pending)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range l {
			switch {
			case e.Err != nil && strings.Contains(e.Err.Error(), "not a task id"):
				got = append(got, e.ID+" the file name is not a task id")
			case e.Err != nil && strings.Contains(e.Err.Error(), "a symbolic link"):
				got = append(got, e.ID+" a symbolic link")
			case e.Err != nil:
				got = append(got, e.ID+" "+e.Err.Error())
			default:
				got = append(got, e.ID+" "+e.Task.Title)
				fi, err := os.Lstat(s.Path(e.ID, Pending))
				if err != nil || !fi.ModTime().Equal(e.ModTime) {
					t.Fatalf("%s: %s listed with mtime %v, its file's is %v (%v)", step, e.ID, e.ModTime, fi.ModTime(), err)
				}
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%s: the listing (+) differs from the files (-):\n%s", step, diff)
		}
	}
	check("from the files")
	// Every task comes from the index, each statted file found unchanged:
	// a title changed in the index alone shows.
	ix := s.loadIndex(Pending)
	if got := len(ix.Entries); got != n+2 {
		t.Fatalf("the index has %d entries, want %d", got, n+2)
	}
	for _, e := range ix.Entries {
		e.Task.Title = "indexed " + e.Task.Title
	}
	if err := s.saveIndex(Pending, ix); err != nil {
		t.Fatal(err)
	}
	for i, w := range want[1:] {
		if !strings.HasSuffix(w, "symbolic link") {
			want[i+1] = strings.Replace(w, " task", " indexed task", 1)
		}
	}
	check("from the index")
	last := fmt.Sprintf("t-%08x", n-1)
	f, err := os.OpenFile(s.Path(last, Pending), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(f, "id: %s\ntitle: TASK %d\n", last, n-1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	want[n] = fmt.Sprintf("%s TASK %d", last, n-1)
	check("rewritten in place")
}
