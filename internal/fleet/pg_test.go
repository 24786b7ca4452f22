package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/pgstore"
	"github.com/cra-dev/cra/internal/pgtest"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/testpar"
	"github.com/cra-dev/cra/internal/world"
)

// TestMain starts the test cluster on first use and stops it at the end.
// The parallel tests run testParallel at once unless -parallel says
// otherwise: each has its own database, repositories and remotes and
// waits on git and PostgreSQL most of its time, so two at a time,
// GOMAXPROCS on a small machine, left the cores idle. The tests that
// set the environment (t.Setenv) or time the services stay sequential
// and run before the parallel ones.
func TestMain(m *testing.M) {
	testpar.Default(testParallel)
	pgtest.Main(m)
}

// testParallel is how many tests run at once by default (see TestMain).
const testParallel = 4

// pgConfig returns a config whose [fleet] keeps the board in a new
// database of the test cluster, its schema made, and the getenv that
// gives its URL.
func pgConfig(t testing.TB) (*config.Config, func(string) string) {
	t.Helper()
	url := pgtest.DB(t)
	if _, _, err := pgstore.Init(context.Background(), url); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Fleet: &config.Fleet{DatabaseURLEnv: "CRA_TEST_DATABASE_URL"}}
	return cfg, func(name string) string {
		if name == "CRA_TEST_DATABASE_URL" {
			return url
		}
		return ""
	}
}

// writeFileBoard writes a board of tasks task files (spread over the six
// folders, some with fields this cra does not know) and a world log of
// lines lines (each task's start, then events, a few lines malformed)
// into a new state directory.
func writeFileBoard(t testing.TB, tasks, lines int) string {
	t.Helper()
	dir := t.TempDir()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := func() time.Time { at = at.Add(time.Millisecond); return at }
	var log bytes.Buffer
	n := 0
	put := func(e world.Entry) {
		_, line, err := world.Prepare(e, now)
		if err != nil {
			t.Fatal(err)
		}
		log.Write(line)
		n++
	}
	files := board.NewFileStore(dir)
	folders := board.Folders()
	for i := range tasks {
		task := board.NewTask(fmt.Sprintf("task %d: make it so", i))
		task.ID = fmt.Sprintf("t-%08x", i)
		task.Need = "tests pass"
		put(world.Entry{Kind: world.KindAgent, Status: world.StatusStart, ID: task.ID, Output: task.Title, Need: task.Need})
		task.CreatedAt, task.UpdatedAt = at, at
		body, err := board.Encode(task)
		if err != nil {
			t.Fatal(err)
		}
		if i%7 == 0 {
			body = append(body, fmt.Sprintf("owner: person %d # a field of a newer cra\n", i)...)
		}
		path := files.Path(task.ID, folders[i%len(folders)])
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for n < lines {
		if n%10000 == 0 {
			log.WriteString("not a log line, kept as written\n")
			n++
			continue
		}
		put(world.Entry{Kind: world.KindEvent, Source: world.SourceBash, ID: fmt.Sprintf("t-%08x", n%tasks), Output: fmt.Sprintf("npm test: run %d", n)})
	}
	if err := os.WriteFile(world.Path(dir), log.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// treeOf reads every file under dir, by path relative to dir.
func treeOf(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if d.Name()[0] == '.' { // the file store's list index and lock
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		out[rel], err = os.ReadFile(path)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestImportExportRoundTrip: 'cra fleet import' then 'export' gives back a
// board of 1,000 tasks and a 100,000-line world log byte for byte (issue
// 34's acceptance), and a second import is refused whole.
func TestImportExportRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const tasks, lines = 1000, 100000
	state := writeFileBoard(t, tasks, lines)
	notices := writeRecyclerState(t, state)
	before := treeOf(t, state)
	cfg, getenv := pgConfig(t)
	m, err := Import(ctx, state, cfg, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Moved{Lines: lines, Tasks: tasks, Reviews: 5, Notices: 2, BadNotices: 1}); m != want {
		t.Fatalf("imported %+v, want %+v", m, want)
	}
	if _, err := Import(ctx, state, cfg, getenv); err == nil {
		t.Errorf("a second import: no error, want it refused")
	}
	back := filepath.Join(t.TempDir(), "back")
	m, err = Export(ctx, back, cfg, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Moved{Lines: lines, Tasks: tasks, Reviews: 5, Notices: 2}); m != want {
		t.Errorf("exported %+v, want %+v", m, want)
	}
	after := treeOf(t, back)
	// The notifications come back as the same JSON objects, in order; the
	// line that did not parse is not among them (it stays in the file).
	checkNotices(t, after[statedir.NotifyPending], notices)
	delete(before, statedir.NotifyPending)
	delete(after, statedir.NotifyPending)
	if len(after) != len(before) {
		t.Errorf("exported %d files, want %d", len(after), len(before))
	}
	for path, want := range before {
		if got, ok := after[path]; !ok {
			t.Errorf("%s not exported", path)
		} else if !bytes.Equal(got, want) {
			t.Errorf("%s differs after the round trip:\ngot  %q\nwant %q", path, got[:min(len(got), 200)], want[:min(len(want), 200)])
		}
	}
	if _, err := Export(ctx, back, cfg, getenv); !errors.Is(err, ErrExportTarget) {
		t.Errorf("export into a directory holding a log: got %v, want ErrExportTarget", err)
	}
}

// writeRecyclerState writes review histories for three tasks (one with a
// torn last record, as a crash leaves it) and a notification queue of two
// notifications and a line that does not parse into the state directory
// dir, and returns the notifications.
func writeRecyclerState(t *testing.T, dir string) []string {
	t.Helper()
	reviews := map[string]string{
		"t-00000001": `{"task_id":"t-00000001","verdict":"needs_work"}` + "\n" + `{"task_id":"t-00000001","verdict":"verified"}` + "\n",
		"t-00000002": `{"task_id":"t-00000002","verdict":"failed"}` + "\n",
		"t-00000003": `{"task_id":"t-00000003","verdict":"needs_work"}` + "\n" + `{"task_id":"t-00000003","verd` + "\n",
	}
	for id, body := range reviews {
		path := statedir.At(dir).Run(id).Reviews()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	notices := []string{`{"task":"t-00000001","kind":"verified","tries":0}`, `{"task":"t-00000002","kind":"failed","tries":2,"next":"2026-01-02T03:04:05Z"}`}
	queue := notices[0] + "\nnot json, skipped by the recycler\n" + notices[1] + "\n"
	if err := os.WriteFile(statedir.At(dir).NotifyPending(), []byte(queue), 0o644); err != nil {
		t.Fatal(err)
	}
	return notices
}

// checkNotices checks that file holds the notifications want, in order,
// each the same JSON object.
func checkNotices(t *testing.T, file []byte, want []string) {
	t.Helper()
	got := bytes.Split(bytes.TrimSuffix(file, []byte("\n")), []byte("\n"))
	if len(got) != len(want) {
		t.Fatalf("notify-pending.jsonl after the round trip:\n%s\nwant %d notifications", file, len(want))
	}
	for i := range want {
		var g, w any
		if err := json.Unmarshal(got[i], &g); err != nil {
			t.Fatalf("notification %d: %v", i+1, err)
		}
		if err := json.Unmarshal([]byte(want[i]), &w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("notification %d after the round trip: %s, want %s", i+1, got[i], want[i])
		}
	}
}

// TestImportRefusesMalformed: a task file the board cannot read stops the
// import whole, the log's lines with it, naming the file and the fix.
func TestImportRefusesMalformed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	state := writeFileBoard(t, 3, 10)
	files := board.NewFileStore(state)
	if err := os.WriteFile(files.Path("t-0000beef", board.Pending), []byte("id: t-0000beef\ntitle: x\npriority: urgent\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, getenv := pgConfig(t)
	_, err := Import(ctx, state, cfg, getenv)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("tasks/pending/t-0000beef.yaml")) || !bytes.Contains([]byte(err.Error()), []byte("fix or remove the file")) {
		t.Fatalf("import of a malformed task file: got %v", err)
	}
	if err := os.Remove(files.Path("t-0000beef", board.Pending)); err != nil {
		t.Fatal(err)
	}
	if m, err := Import(ctx, state, cfg, getenv); err != nil || m.Lines != 10 || m.Tasks != 3 {
		t.Errorf("import after the fix: %+v, %v; want the refused one to have written nothing", m, err)
	}
}
