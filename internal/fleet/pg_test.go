package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/pgstore"
	"github.com/cra-dev/cra/internal/pgtest"
	"github.com/cra-dev/cra/internal/world"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

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
	ctx := context.Background()
	const tasks, lines = 1000, 100000
	state := writeFileBoard(t, tasks, lines)
	before := treeOf(t, state)
	cfg, getenv := pgConfig(t)
	m, err := Import(ctx, state, cfg, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if m.Lines != lines || m.Tasks != tasks {
		t.Fatalf("imported %+v, want %d lines and %d tasks", m, lines, tasks)
	}
	if _, err := Import(ctx, state, cfg, getenv); err == nil {
		t.Errorf("a second import: no error, want it refused")
	}
	back := filepath.Join(t.TempDir(), "back")
	m, err = Export(ctx, back, cfg, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if m.Lines != lines || m.Tasks != tasks {
		t.Errorf("exported %+v, want %d lines and %d tasks", m, lines, tasks)
	}
	after := treeOf(t, back)
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

// TestImportRefusesMalformed: a task file the board cannot read stops the
// import whole, the log's lines with it, naming the file and the fix.
func TestImportRefusesMalformed(t *testing.T) {
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
