package board

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/world"
)

// newTestBoard is a board over a real tasks directory and world log in a
// temp state directory.
func newTestBoard(t *testing.T) (*Board, *FileStore, string) {
	t.Helper()
	dir := t.TempDir()
	l, err := world.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := NewFileStore(dir)
	return New(s, l), s, dir
}

func add(t *testing.T, b *Board, title string) *Task {
	t.Helper()
	task := NewTask(title)
	task.Need = "tests pass"
	got, err := b.Add(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// logLines returns the world log's lines for id, as written.
func logLines(t *testing.T, b *Board, id string) []string {
	t.Helper()
	var out []string
	err := b.Log.Select(context.Background(), world.Filter{IDs: []string{id}}, func(r *world.Record) error {
		out = append(out, string(r.Raw))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func folderOn(t *testing.T, s *FileStore, id string) Folder {
	t.Helper()
	_, f, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestRebuildRepairsFolders(t *testing.T) {
	ctx := context.Background()
	b, s, dir := newTestBoard(t)
	moved := add(t, b, "moved by hand")
	twice := add(t, b, "in two folders")
	ok := add(t, b, "where it belongs")
	gone := add(t, b, "file lost")

	// The log moves twice to completed; its file stays in pending and a
	// copy lands in failed. moved's file goes to completed by hand.
	for _, st := range []struct {
		s   world.Status
		out string
	}{{world.StatusActive, "run 1"}, {world.StatusFinish, "exit 0: done"}} {
		if _, err := b.Log.Agent(ctx, st.s, twice.ID, st.out, ""); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(t, s.Path(twice.ID, Pending), s.Path(twice.ID, Failed))
	if err := s.Move(ctx, moved.ID, Pending, Completed); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(s.Path(gone.ID, Pending)); err != nil {
		t.Fatal(err)
	}
	// A hand-dropped task, one the log does not know outside pending, a
	// malformed file and a crashed write's temp file.
	writeFile(t, s.Path("hand-1", Pending), "id: hand-1\ntitle: dropped in\n")
	writeFile(t, s.Path("hand-2", Completed), "id: hand-2\ntitle: dropped in\n")
	writeFile(t, s.Path("broken", Pending), "id: broken\ntitle: x\npriority: urgent\n")
	tmp := filepath.Join(s.Dir(), "pending", "."+ok.ID+".yaml.tmp123")
	writeFile(t, tmp, "id: ") // just now: the crash was a moment ago

	before := logLines(t, b, twice.ID)
	rep, err := b.Rebuild(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	wantKinds := map[string]string{
		moved.ID: "move", twice.ID: "duplicate,move", gone.ID: "recreate",
		"hand-1": "adopt", "hand-2": "unlogged", "broken": "malformed", "": "temp",
	}
	if got := repairKinds(rep); !equalMaps(got, wantKinds) {
		t.Fatalf("check found %v, want %v\n%+v", got, wantKinds, rep)
	}
	if len(logLines(t, b, twice.ID)) != len(before) || folderOn(t, s, moved.ID) != Completed {
		t.Fatalf("check changed something")
	}
	if _, err := os.Stat(tmp); err != nil {
		t.Fatalf("check removed the temp file")
	}

	rep, err = b.Rebuild(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := repairKinds(rep); !equalMaps(got, wantKinds) {
		t.Fatalf("rebuild found %v, want %v", got, wantKinds)
	}
	for id, want := range map[string]Folder{moved.ID: Pending, twice.ID: Completed, ok.ID: Pending, "hand-1": Pending, "hand-2": Completed, gone.ID: Pending} {
		if f := folderOn(t, s, id); f != want {
			t.Errorf("%s in %s, want %s", id, f, want)
		}
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("temp file left: %v", err)
	}
	lines := logLines(t, b, twice.ID)
	if !strings.Contains(strings.Join(lines, "\n"), "[event:system]["+twice.ID+"] rebuild: removed the copy in") {
		t.Errorf("duplicate repair not logged:\n%s", strings.Join(lines, "\n"))
	}
	if a, _, _ := b.Log.Lookup(ctx, "hand-1"); a.Status != world.StatusStart {
		t.Errorf("adopted task is %s in the log, want start", a.Status)
	}

	// What is left needs a person: the unlogged and malformed ones.
	rep, err = b.Rebuild(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	left := map[string]string{"hand-2": "unlogged", "broken": "malformed"}
	if got := repairKinds(rep); !equalMaps(got, left) {
		t.Errorf("second check found %v, want %v", got, left)
	}
	_ = dir
}

func TestMigrateTwice(t *testing.T) {
	ctx := context.Background()
	b, s, _ := newTestBoard(t)
	task := add(t, b, "logged")
	// An older file: no counters, no flag, no times; an unknown field.
	writeFile(t, s.Path(task.ID, Pending), "id: "+task.ID+"\ntitle: logged\nowner: alice\n")
	writeFile(t, s.Path("old-1", FailedBlocked), "id: old-1\ntitle: older\nprocessor_auto_requeue: false\nruns: 4\n")
	rep, err := b.Migrate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Tasks != 2 || len(rep.Changed) != 2 {
		t.Fatalf("first migrate: %+v", rep)
	}
	got, _, err := s.Get(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !got.ProcessorAutoRequeue || !got.CreatedAt.Equal(task.CreatedAt) || got.UpdatedAt.IsZero() {
		t.Errorf("migrated %+v; want created_at from the log's start, %v", got, task.CreatedAt)
	}
	data, _ := os.ReadFile(s.Path(task.ID, Pending))
	for _, key := range append(defaultKeys, "owner: alice") {
		if !strings.Contains(string(data), key) {
			t.Errorf("migrated file lacks %s:\n%s", key, data)
		}
	}
	old, _, _ := s.Get(ctx, "old-1")
	if old.ProcessorAutoRequeue || old.Runs != 4 {
		t.Errorf("migrate changed set values: %+v", old)
	}
	rep, err = b.Migrate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Tasks != 2 || len(rep.Changed) != 0 {
		t.Errorf("second migrate changed %+v", rep.Changed)
	}
	again, _ := os.ReadFile(s.Path(task.ID, Pending))
	if string(again) != string(data) {
		t.Errorf("second migrate rewrote the file")
	}
}

func TestListReportsMalformed(t *testing.T) {
	ctx := context.Background()
	b, s, _ := newTestBoard(t)
	add(t, b, "fine")
	writeFile(t, s.Path("t-00000001", Pending), "id: t-00000002\ntitle: x\n")
	writeFile(t, s.Path("bad name", Pending), "id: x\ntitle: x\n")
	ls, err := s.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var errs []string
	for _, l := range ls {
		if l.Err != nil {
			errs = append(errs, l.Err.Error())
		}
	}
	if len(ls) != 3 || len(errs) != 2 {
		t.Fatalf("listed %d, errors %q", len(ls), errs)
	}
	for _, want := range []string{"tasks/pending/t-00000001.yaml: field id: \"t-00000002\" differs from the file name: set id: t-00000001 or rename the file to t-00000002.yaml", "the file name is not a task id"} {
		if !strings.Contains(strings.Join(errs, "\n"), want) {
			t.Errorf("errors %q lack %q", errs, want)
		}
	}
}

func repairKinds(r Report) map[string]string {
	out := map[string]string{}
	for _, p := range r.Repairs {
		if out[p.ID] != "" {
			out[p.ID] += ","
		}
		out[p.ID] += p.What
	}
	return out
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, string(data))
}

// TestConcurrentChanges: adds, moves and rebuilds from many goroutines
// (each Lock is its own flock, as in separate processes) leave every task
// in one folder, where the log puts it.
func TestConcurrentChanges(t *testing.T) {
	ctx := context.Background()
	b, s, _ := newTestBoard(t)
	const workers, each = 6, 4
	errs := make(chan error, workers+1)
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				errs <- nil
				return
			default:
			}
			if _, err := b.Rebuild(ctx, false); err != nil {
				errs <- err
				return
			}
		}
	}()
	done := make(chan error, workers)
	for w := 0; w < workers; w++ {
		go func() {
			for i := 0; i < each; i++ {
				task, err := b.Add(ctx, NewTask("concurrent"))
				if err != nil {
					done <- err
					return
				}
				for _, f := range []Folder{FailedBlocked, Pending} {
					if _, err := b.Move(ctx, task.ID, f, "shuffle"); err != nil {
						done <- err
						return
					}
				}
			}
			done <- nil
		}()
	}
	for w := 0; w < workers; w++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	rep, err := b.Rebuild(ctx, true)
	if err != nil || !rep.Clean() || rep.Tasks != workers*each {
		t.Fatalf("after the changes: %d tasks, %+v, %v", rep.Tasks, rep.Repairs, err)
	}
	ls, _ := s.List(ctx, Pending)
	if len(ls) != workers*each {
		t.Errorf("pending holds %d tasks, want %d", len(ls), workers*each)
	}
}

// TestSymlinkTaskFile: a task file that is a symbolic link (to a file
// outside the board, whose id matches) is reported by List and by
// Rebuild's check, left out of IDs, and never read through: Get refuses
// it, and a list index written while the file was regular is not
// trusted for the link.
func TestSymlinkTaskFile(t *testing.T) {
	ctx := context.Background()
	b, s, _ := newTestBoard(t)
	task := add(t, b, "real")
	if _, err := s.List(ctx, ""); err != nil { // the index now holds the regular file
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "elsewhere.yaml")
	copyFile(t, s.Path(task.ID, Pending), outside)
	data, _ := os.ReadFile(outside)
	writeFile(t, outside, strings.Replace(string(data), "title: real", "title: through the link", 1))
	if err := os.Remove(s.Path(task.ID, Pending)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, s.Path(task.ID, Pending)); err != nil {
		t.Fatal(err)
	}
	want := "task file tasks/pending/" + task.ID + ".yaml is a symbolic link, which cra never reads through"

	ls, err := s.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || ls[0].Err == nil || !strings.Contains(ls[0].Err.Error(), want) || ls[0].Task != nil {
		t.Fatalf("list: %+v, want the link reported", ls)
	}
	if _, _, err := s.Get(ctx, task.ID); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("get: %v, want %q", err, want)
	}
	if ids, err := s.IDs(ctx, Pending); err != nil || len(ids) != 0 {
		t.Errorf("ids: %q %v, want none", ids, err)
	}
	rep, err := b.Rebuild(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Repairs) != 1 || rep.Repairs[0].What != "malformed" || !strings.Contains(rep.Repairs[0].Detail, want) {
		t.Errorf("rebuild --check: %+v", rep.Repairs)
	}
	if _, err := b.Rebuild(ctx, false); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(s.Path(task.ID, Pending)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("rebuild replaced the link (a person decides): %v", err)
	}
	if got, _ := os.ReadFile(outside); !strings.Contains(string(got), "title: through the link") {
		t.Errorf("the file behind the link changed:\n%s", got)
	}
}
