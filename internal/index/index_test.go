package index

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
	"github.com/cra-dev/cra/internal/workspace"
)

// repo is a real repository in a temp dir with a state dir beside it.
type repo struct {
	t    *testing.T
	root string
	f    *store.Factory
}

func newRepo(t *testing.T, git bool) *repo {
	t.Helper()
	root := t.TempDir()
	dir, err := workspace.EnsureStateDir(root)
	if err != nil {
		t.Fatal(err)
	}
	r := &repo{t: t, root: root, f: store.NewFactory(statedir.At(dir))}
	if git {
		r.git("init", "-q")
	}
	return r
}

func (r *repo) git(args ...string) string {
	r.t.Helper()
	return gittest.Run(r.t, r.root, args...)
}

func (r *repo) write(name, content string) {
	r.t.Helper()
	p := filepath.Join(r.root, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *repo) commit(msg string) {
	r.t.Helper()
	r.git("add", "-A")
	r.git("commit", "-qm", msg)
}

func (r *repo) index(mod ...func(*Builder)) *Result {
	r.t.Helper()
	res, err := r.run(mod...)
	if err != nil {
		r.t.Fatalf("index: %v", err)
	}
	return res
}

func (r *repo) run(mod ...func(*Builder)) (*Result, error) {
	b := NewBuilder(r.f)
	for _, m := range mod {
		m(b)
	}
	return b.Run(context.Background(), r.root)
}

func (r *repo) db() *sql.DB {
	r.t.Helper()
	db, err := r.f.Open(context.Background(), store.Curated, "", true)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { db.Close() })
	return db
}

func (r *repo) count(q string, args ...any) int {
	r.t.Helper()
	var n int
	if err := r.db().QueryRow(q, args...).Scan(&n); err != nil {
		r.t.Fatalf("%s: %v", q, err)
	}
	return n
}

func (r *repo) strings(q string, args ...any) []string {
	r.t.Helper()
	rows, err := r.db().Query(q, args...)
	if err != nil {
		r.t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			r.t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// integrity fails the test on any dangling reference in the curated DB.
func (r *repo) integrity() {
	r.t.Helper()
	rows, err := r.db().Query("PRAGMA foreign_key_check")
	if err != nil {
		r.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var table, parent string
		var rowid, fkid sql.NullInt64
		rows.Scan(&table, &rowid, &parent, &fkid)
		r.t.Errorf("foreign key violation: %s row %v -> %s", table, rowid.Int64, parent)
	}
	for _, q := range []string{
		"SELECT COUNT(*) FROM file_index WHERE file_id NOT IN (SELECT id FROM files)",
		"SELECT COUNT(*) FROM name_refs WHERE file_id NOT IN (SELECT id FROM files)",
		"SELECT COUNT(*) FROM file_imports WHERE file_id NOT IN (SELECT id FROM files)",
	} {
		if n := r.count(q); n != 0 {
			r.t.Errorf("%s: got %d, want 0", q, n)
		}
	}
}

const pyUtil = `"""Utilities."""


def helper(x):
    """Return x doubled.

    Args:
        x: a number.
    """
    return x * 2


class Store:
    def save(self, item):
        # Flush first because the backend buffers writes.
        self.flush()
        return helper(item)

    def flush(self):
        pass
`

const pyMain = `from pkg.util import helper, Store
from . import sibling


def run():
    s = Store()
    s.save(1)
    return helper(2)
`

func TestIncremental(t *testing.T) {
	r := newRepo(t, true)
	r.write("pkg/__init__.py", "")
	r.write("pkg/util.py", pyUtil)
	r.write("pkg/main.py", pyMain)
	r.write("pkg/sibling.py", "VALUE = 1\n")
	r.write("README.md", "# demo\n")
	r.commit("initial")

	res := r.index()
	if got := [5]int{res.Indexed, res.Parsed, res.Added, res.Changed, res.Deleted}; got != [5]int{5, 4, 5, 0, 0} {
		t.Fatalf("first run indexed/parsed/added/changed/deleted: got %v, want [5 4 5 0 0]", got)
	}
	if n := r.count("SELECT COUNT(*) FROM symbols WHERE name IN ('helper', 'Store', 'save', 'flush', 'run')"); n != 5 {
		t.Errorf("symbols: got %d, want 5", n)
	}
	deps := r.strings(`SELECT s.path || ' -> ' || t.path FROM dependencies d JOIN files s ON s.id = d.source_file_id
		JOIN files t ON t.id = d.target_file_id ORDER BY 1`)
	// "from . import sibling" resolves to the submodule only; "from pkg.util
	// import ..." to util.py. The package __init__ is not a target unless a
	// name is not a submodule.
	if diff := cmp.Diff([]string{"pkg/main.py -> pkg/sibling.py", "pkg/main.py -> pkg/util.py"}, deps); diff != "" {
		t.Errorf("dependencies (-want +got):\n%s", diff)
	}
	refs := r.strings(`SELECT a.name || ' -> ' || b.name || ' ' || r.reference_kind || printf(' %.2f', r.confidence)
		FROM symbol_references r JOIN symbols a ON a.id = r.caller_symbol_id JOIN symbols b ON b.id = r.callee_symbol_id ORDER BY 1`)
	if !containsAll(refs, "run -> Store call 0.90", "run -> helper call 0.90", "save -> flush call 0.95", "save -> helper call 1.00") {
		t.Errorf("symbol references: got %v", refs)
	}
	r.integrity()
	search := func(q string) []string {
		return r.strings(`SELECT f.path FROM file_search s JOIN files f ON f.id = s.rowid WHERE file_search MATCH ? ORDER BY bm25(file_search), f.path`, q)
	}
	if got := search("symbols:flush"); !cmp.Equal(got, []string{"pkg/util.py"}) {
		t.Errorf("search symbols:flush: got %v, want [pkg/util.py]", got)
	}
	if got := search("path:sibling"); !cmp.Equal(got, []string{"pkg/sibling.py"}) {
		t.Errorf("search path:sibling: got %v", got)
	}
	if got := search("buffers"); !cmp.Equal(got, []string{"pkg/util.py"}) {
		t.Errorf("search body: got %v", got)
	}
	if got := search("demo"); !cmp.Equal(got, []string{"README.md"}) {
		t.Errorf("search a text file: got %v", got)
	}

	// No change: nothing read, parsed or written (the stat gate).
	var reads int64
	res = r.index(countReads(&reads))
	if reads != 0 {
		t.Errorf("no-change run read %d files, want 0", reads)
	}
	if res.Parsed != 0 || res.Unchanged != 5 || res.FilesChanged() != 0 {
		t.Errorf("no-change run: got parsed %d unchanged %d changed %d, want 0 5 0", res.Parsed, res.Unchanged, res.FilesChanged())
	}
	if res.History != "up to date" {
		t.Errorf("no-change history: got %q, want up to date", res.History)
	}

	// Edit one file: exactly it is parsed; references into it are rebuilt.
	r.write("pkg/util.py", strings.Replace(pyUtil, "def flush(self):", "def flush(self, force=False):", 1))
	res = r.index()
	if res.Parsed != 1 || res.Changed != 1 || res.Unchanged != 4 {
		t.Errorf("one-file change: got parsed %d changed %d unchanged %d, want 1 1 4", res.Parsed, res.Changed, res.Unchanged)
	}
	refs2 := r.strings(`SELECT a.name || ' -> ' || b.name FROM symbol_references r JOIN symbols a ON a.id = r.caller_symbol_id
		JOIN symbols b ON b.id = r.callee_symbol_id ORDER BY 1`)
	if !containsAll(refs2, "run -> Store", "run -> helper", "save -> flush") {
		t.Errorf("references after editing the callee's file: got %v", refs2)
	}
	if sig := r.strings("SELECT signature FROM symbols WHERE name = 'flush'"); len(sig) != 1 || !strings.Contains(sig[0], "force") {
		t.Errorf("flush signature after edit: got %v", sig)
	}
	r.integrity()

	// Touch without change: read and hashed, found equal, not parsed; the
	// next run reads nothing again.
	rewrite(t, r, "pkg/sibling.py")
	reads = 0
	res = r.index(countReads(&reads))
	if res.Parsed != 0 || res.Unchanged != 5 || reads != 1 {
		t.Errorf("touched file: got parsed %d unchanged %d read %d, want 0 5 1", res.Parsed, res.Unchanged, reads)
	}
	reads = 0
	if r.index(countReads(&reads)); reads != 0 {
		t.Errorf("run after the touch read %d files, want 0", reads)
	}

	// Delete a file: its rows are gone, edges into it too.
	os.Remove(filepath.Join(r.root, "pkg/sibling.py"))
	res = r.index()
	if res.Deleted != 1 || res.Indexed != 4 {
		t.Errorf("delete: got deleted %d indexed %d, want 1 4", res.Deleted, res.Indexed)
	}
	if n := r.count("SELECT COUNT(*) FROM files WHERE path = 'pkg/sibling.py'"); n != 0 {
		t.Errorf("deleted file still indexed")
	}
	if n := r.count("SELECT COUNT(*) FROM symbols WHERE name = 'VALUE'"); n != 0 {
		t.Errorf("deleted file's symbols: got %d, want 0", n)
	}
	if got := search("path:sibling"); len(got) != 0 {
		t.Errorf("deleted file still searchable: %v", got)
	}
	// The edited file is found by its new text only.
	if got := search("force"); !cmp.Equal(got, []string{"pkg/util.py"}) {
		t.Errorf("search after edit: got %v", got)
	}
	r.integrity()

	// Adding it back makes the import resolve again.
	r.write("pkg/sibling.py", "VALUE = 2\n")
	r.index()
	deps = r.strings(`SELECT t.path FROM dependencies d JOIN files t ON t.id = d.target_file_id JOIN files s ON s.id = d.source_file_id WHERE s.path = 'pkg/main.py'`)
	if !containsAll(deps, "pkg/sibling.py") {
		t.Errorf("re-added file: dependencies of main.py got %v", deps)
	}
	r.integrity()
}

// rewrite writes a file's content back unchanged: a new mtime, the same
// bytes.
func rewrite(t *testing.T, r *repo, name string) {
	t.Helper()
	p := filepath.Join(r.root, name)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// countReads makes a Builder count the files it reads into n (reads run
// in parallel).
func countReads(n *int64) func(*Builder) {
	return func(b *Builder) {
		read := b.readFile
		b.readFile = func(p string) ([]byte, error) {
			atomic.AddInt64(n, 1)
			return read(p)
		}
	}
}

func containsAll(have []string, want ...string) bool {
	set := map[string]bool{}
	for _, h := range have {
		set[h] = true
	}
	for _, w := range want {
		if !set[w] {
			return false
		}
	}
	return true
}

func TestBadInput(t *testing.T) {
	r := newRepo(t, false)
	r.write("ok.py", "def fine():\n    return 1\n")
	r.write("image.png", "\x89PNG\x00\x00")
	r.write("data.py", "x = 1\n\x00\x00binary")
	r.write("latin1.py", "# caf\xe9\ndef f():\n    return '\xff\xfe'\n")
	r.write("big.py", strings.Repeat("x = 1\n", 5<<20/6+1))
	r.write("broken.py", "def ok():\n    pass\n\ndef broken(:\n    return (\n\nclass After:\n    pass\n")
	r.write("unreadable.py", "secret = 1\n")
	r.write("node_modules/lib/index.js", "module.exports = 1\n")
	r.write("package-lock.json", "{}")
	r.write("dist/bundle.min.js", "var a=1")
	r.write("app.min.js", "var a=1")
	r.write(".venv2/pyvenv.cfg", "home = /usr\n")
	r.write(".venv2/lib/x.py", "x = 1\n")
	r.write("ignored/by/rule.py", "x = 1\n")
	r.write(".gitignore", "ignored/\n")
	os.Symlink("loop_b", filepath.Join(r.root, "loop_a"))
	os.Symlink("loop_a", filepath.Join(r.root, "loop_b"))
	if err := syscall.Mkfifo(filepath.Join(r.root, "pipe.py"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := r.index(func(b *Builder) {
		read := b.readFile
		b.readFile = func(p string) ([]byte, error) {
			if strings.HasSuffix(p, "unreadable.py") {
				return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrPermission}
			}
			return read(p)
		}
	})
	want := map[string]int{
		SkipBinary:      2,
		SkipTooLarge:    1,
		SkipUnreadable:  1,
		SkipExcludedDir: 3, // node_modules/, dist/, .venv2 (by pyvenv.cfg)
		SkipLockfile:    1,
		SkipMinified:    1,
		SkipSymlink:     2,
		SkipNotRegular:  1,
	}
	if diff := cmp.Diff(want, res.Skipped); diff != "" {
		t.Errorf("skip counts (-want +got):\n%s\nskipped: %v", diff, res.SkipList)
	}
	got := r.strings("SELECT path FROM files ORDER BY path")
	if diff := cmp.Diff([]string{".gitignore", "broken.py", "latin1.py", "ok.py"}, got); diff != "" {
		t.Errorf("indexed files (-want +got):\n%s", diff)
	}
	// The file with syntax errors keeps what parsed and is a warning.
	if names := r.strings("SELECT s.name FROM symbols s JOIN files f ON f.id = s.file_id WHERE f.path = 'broken.py' ORDER BY s.name"); !containsAll(names, "ok", "After") {
		t.Errorf("symbols of broken.py: got %v, want ok and After", names)
	}
	var warned []string
	for _, w := range res.Warnings {
		warned = append(warned, w.Path)
	}
	if !containsAll(warned, "broken.py", "unreadable.py") {
		t.Errorf("warnings: got %v, want broken.py and unreadable.py", res.Warnings)
	}
	if n := r.count("SELECT syntax_errors FROM file_index fi JOIN files f ON f.id = fi.file_id WHERE f.path = 'broken.py'"); n == 0 {
		t.Error("broken.py: syntax_errors not recorded")
	}
	r.integrity()
}

func TestEmptyRepositories(t *testing.T) {
	t.Run("empty directory", func(t *testing.T) {
		r := newRepo(t, false)
		res := r.index()
		if res.Indexed != 0 || res.History != "none" || res.Git {
			t.Errorf("got %+v", res)
		}
	})
	t.Run("git repository with no commits", func(t *testing.T) {
		r := newRepo(t, true)
		r.write("a.py", "x = 1\n")
		res := r.index()
		if res.Indexed != 1 || res.History != "none" || !res.Git || res.Commits != 0 {
			t.Errorf("got indexed %d history %q git %v commits %d", res.Indexed, res.History, res.Git, res.Commits)
		}
	})
}

func TestReadErrors(t *testing.T) {
	r := newRepo(t, false)
	r.write("a.py", "def a():\n    pass\n")
	r.write("b.py", "def b():\n    pass\n")
	r.index()
	r.write("a.py", "def a2():\n    pass\n")
	r.write("b.py", "def b2():\n    pass\n")
	eio := func(b *Builder) {
		b.readFile = func(p string) ([]byte, error) {
			if strings.HasSuffix(p, "b.py") {
				return nil, &fs.PathError{Op: "read", Path: p, Err: syscall.EIO}
			}
			return os.ReadFile(p)
		}
	}
	_, err := r.run(eio)
	if err == nil || !strings.Contains(err.Error(), "b.py") || !strings.Contains(err.Error(), "--continue-on-error") {
		t.Fatalf("fail-fast: got %v, want an error naming b.py and --continue-on-error", err)
	}
	// Nothing of the failed run was written: a.py still has its old symbol.
	if names := r.strings("SELECT name FROM symbols ORDER BY name"); !cmp.Equal(names, []string{"a", "b"}) {
		t.Errorf("after a failed run: got symbols %v, want the previous index [a b]", names)
	}
	if n := r.count("SELECT COUNT(*) FROM files"); n != 2 {
		t.Errorf("after a failed run: got %d files, want 2", n)
	}
	res, err := r.run(eio, func(b *Builder) { b.ContinueOnError = true })
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped[SkipReadError] != 1 || res.Parsed != 1 {
		t.Errorf("continue-on-error: got skipped %v parsed %d, want 1 read error and 1 parsed", res.Skipped, res.Parsed)
	}
	// Both runs are in the raw DB, the failed one with its status.
	raw, err := r.f.Open(context.Background(), store.Raw, "", true)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var statuses []string
	rows, _ := raw.Query("SELECT status FROM index_runs ORDER BY id")
	for rows.Next() {
		var s string
		rows.Scan(&s)
		statuses = append(statuses, s)
	}
	rows.Close()
	if len(statuses) != 3 || statuses[0] != "ok" || !strings.HasPrefix(statuses[1], "failed: ") || statuses[2] != "ok_with_warnings" {
		t.Errorf("index_runs statuses: got %q", statuses)
	}
}

func TestCancelledRunWritesNothing(t *testing.T) {
	r := newRepo(t, false)
	r.write("a.py", "x = 1\n")
	r.index()
	r.write("b.py", "y = 1\n")
	ctx, cancel := context.WithCancel(context.Background())
	b := NewBuilder(r.f)
	// Cancel while files are being parsed: the run's transaction is rolled back.
	b.Progress = func(Progress) { cancel() }
	if _, err := b.Run(ctx, r.root); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if got := r.strings("SELECT path FROM files"); !cmp.Equal(got, []string{"a.py"}) {
		t.Errorf("after a cancelled run: got files %v, want the previous index [a.py]", got)
	}
}

func TestHistory(t *testing.T) {
	r := newRepo(t, true)
	r.write("a.py", "a = 1\n")
	r.write("b.py", "b = 1\n")
	r.write("c.py", "c = 1\n")
	r.commit("add a b c")
	for i := 0; i < 3; i++ {
		r.write("a.py", fmt.Sprintf("a = %d\n", i+2))
		r.write("b.py", fmt.Sprintf("b = %d\n", i+2))
		r.commit(fmt.Sprintf("change a and b %d", i))
	}
	res := r.index(func(b *Builder) { b.MaxCommitFiles = 2 })
	if res.History != "full" || res.NewCommits != 4 || res.Commits != 4 {
		t.Fatalf("first mine: got %q new %d total %d, want full 4 4", res.History, res.NewCommits, res.Commits)
	}
	pairs := func() []string {
		return r.strings(`SELECT a.path || '+' || b.path || ':' || c.count FROM co_changes c JOIN files a ON a.id = c.file_a_id
			JOIN files b ON b.id = c.file_b_id ORDER BY 1`)
	}
	// The 3-file commit is over MaxCommitFiles: only a+b counts, 3 times.
	if diff := cmp.Diff([]string{"a.py+b.py:3"}, pairs()); diff != "" {
		t.Errorf("co-change (-want +got):\n%s", diff)
	}
	if n := r.count("SELECT COUNT(*) FROM file_commits fc JOIN files f ON f.id = fc.file_id WHERE f.path = 'c.py'"); n != 1 {
		t.Errorf("file_commits of c.py: got %d, want 1", n)
	}
	head := r.git("rev-parse", "HEAD")
	if last := r.strings("SELECT last_commit_hash FROM co_changes"); len(last) != 1 || last[0] != head {
		t.Errorf("last_commit_hash: got %v, want %s", last, head)
	}

	// A new commit is mined incrementally and adds to the counts.
	r.write("a.py", "a = 9\n")
	r.write("b.py", "b = 9\n")
	r.commit("change a and b again")
	res = r.index(func(b *Builder) { b.MaxCommitFiles = 2 })
	if res.History != "incremental" || res.NewCommits != 1 || res.Commits != 5 {
		t.Errorf("incremental: got %q new %d total %d, want incremental 1 5", res.History, res.NewCommits, res.Commits)
	}
	if diff := cmp.Diff([]string{"a.py+b.py:4"}, pairs()); diff != "" {
		t.Errorf("co-change after incremental (-want +got):\n%s", diff)
	}

	// Rewriting history (amend) forces a full re-mine with the same result.
	r.git("commit", "-q", "--amend", "-m", "amended")
	res = r.index(func(b *Builder) { b.MaxCommitFiles = 2 })
	if res.History != "full" || res.Commits != 5 {
		t.Errorf("after amend: got %q total %d, want full 5", res.History, res.Commits)
	}
	if diff := cmp.Diff([]string{"a.py+b.py:4"}, pairs()); diff != "" {
		t.Errorf("co-change after amend (-want +got):\n%s", diff)
	}
	// New bounds re-mine too.
	res = r.index(func(b *Builder) { b.MaxCommitFiles = 3 })
	if res.History != "full" {
		t.Errorf("new bounds: got %q, want full", res.History)
	}
	if diff := cmp.Diff([]string{"a.py+b.py:5", "a.py+c.py:1", "b.py+c.py:1"}, pairs()); diff != "" {
		t.Errorf("co-change with max 3 (-want +got):\n%s", diff)
	}
	// Line counts are NULL unless asked for.
	if n := r.count("SELECT COUNT(*) FROM commits WHERE insertions IS NOT NULL"); n != 0 {
		t.Errorf("insertions without LineStats: got %d non-NULL, want 0", n)
	}
	r.index(func(b *Builder) { b.MaxCommitFiles = 4; b.LineStats = true })
	if got := r.strings("SELECT insertions || '/' || deletions FROM commits WHERE message = 'add a b c'"); !cmp.Equal(got, []string{"3/0"}) {
		t.Errorf("line stats of the first commit: got %v, want [3/0]", got)
	}
	// Depth bounds the walk.
	res = r.index(func(b *Builder) { b.HistoryDepth = 2 })
	if res.Commits != 2 {
		t.Errorf("depth 2: got %d commits, want 2", res.Commits)
	}
	r.integrity()
}

func TestNonGitWalkHonoursGitignore(t *testing.T) {
	r := newRepo(t, false)
	r.write(".gitignore", "*.log\n/generated/\n!keep.log\n")
	r.write("sub/.gitignore", "local.py\n")
	r.write("a.py", "x = 1\n")
	r.write("debug.log", "no")
	r.write("keep.log", "yes")
	r.write("generated/x.py", "no")
	r.write("sub/generated/y.py", "yes: anchored pattern applies at the root only")
	r.write("sub/local.py", "no")
	r.write("other/local.py", "yes: sub/.gitignore applies below sub only")
	r.index()
	got := r.strings("SELECT path FROM files ORDER BY path")
	want := []string{".gitignore", "a.py", "keep.log", "other/local.py", "sub/.gitignore", "sub/generated/y.py"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("walked files (-want +got):\n%s", diff)
	}
}
