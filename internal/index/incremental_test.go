package index

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
	"github.com/cra-dev/cra/internal/store/storetest"
)

// TestIncrementalEqualsFresh: an index brought up to date after changes —
// a few files or most of them, with files added, deleted and turned
// binary — holds exactly what a fresh index of the same tree holds, table
// by table (rows named by paths and symbol names, not by row IDs, which
// differ).
func TestIncrementalEqualsFresh(t *testing.T) {
	// One of the package's four longest tests (SQLite is Go code,
	// instrumented, under -race): they run side by side, on their own
	// trees and states, so the package's wall time is not their sum.
	t.Parallel()
	ctx := context.Background()
	index := func(f *store.Factory, root string) *Result {
		t.Helper()
		res, err := NewBuilder(f).Run(ctx, root)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// One tree and its first index serve every case: each starts from
	// copies of them (the tree at the same path, its files' mtimes
	// kept, so the stat gate sees what a first run left).
	s := newSynthRepo(t, t.TempDir(), 181)
	pristine := filepath.Join(t.TempDir(), "tree")
	copyTree(t, s.root, pristine)
	first := filepath.Join(t.TempDir(), "state")
	index(store.NewFactory(statedir.At(first)), s.root)
	for _, tc := range []struct {
		name    string
		every   int // every every-th file changes
		rebuilt bool
	}{
		{"one in ten", 10, false},
		{"a sixth", 6, false},
		{"a third", 3, false},
		{"all", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.RemoveAll(s.root); err != nil {
				t.Fatal(err)
			}
			copyTree(t, pristine, s.root)
			s.ver = map[int]int{}
			for i := range s.files - 1 {
				s.ver[i] = 0
			}
			dir := filepath.Join(t.TempDir(), "state")
			copyTree(t, first, dir)
			state := store.NewFactory(statedir.At(dir))
			s.set(t, tc.every, 1)
			// Beside the edits: a file deleted, one added, one that
			// becomes binary (skipped, so its rows go), a README.
			os.Remove(filepath.Join(s.root, s.path(7)))
			s.write(t, "pkgnew/mod_new.py", "from pkg000.mod00001 import func_1\n\n\ndef func_new():\n    return func_1(1)\n")
			s.write(t, s.path(8), "\x00binary now")
			s.write(t, "README.md", "# synthetic\n\nA tree for tests.\n")
			if res := index(state, s.root); res.Rebuilt != tc.rebuilt {
				t.Errorf("rebuilt: got %v, want %v", res.Rebuilt, tc.rebuilt)
			}

			fresh := store.NewFactory(statedir.At(filepath.Join(t.TempDir(), "state")))
			index(fresh, s.root)
			got, want := dumpIndex(t, state), dumpIndex(t, fresh)
			for table := range want {
				if diff := cmp.Diff(want[table], got[table]); diff != "" {
					t.Errorf("%s: incremental (+) differs from fresh (-):\n%s", table, diff)
				}
			}
			// A second run with nothing changed keeps it so.
			index(state, s.root)
			if diff := cmp.Diff(want, dumpIndex(t, state)); diff != "" {
				t.Errorf("after a run with no change (-fresh +incremental):\n%s", diff)
			}
		})
	}
}

// copyTree copies the directory src to dst, which must not exist, with
// each file's mode and modification time.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(to, info.Mode().Perm())
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(to, data, info.Mode().Perm()); err != nil {
			return err
		}
		return os.Chtimes(to, info.ModTime(), info.ModTime())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// dumpIndex reads every table the indexer writes as sorted text rows, with
// files named by path and symbols by file, kind, name and line.
func dumpIndex(t *testing.T, f *store.Factory) map[string][]string {
	t.Helper()
	db, err := f.Open(context.Background(), store.Curated, "", true)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const sym = `(SELECT kf.path || ':' || ks.kind || ':' || ks.name || ':' || ks.start_line FROM symbols ks JOIN files kf ON kf.id = ks.file_id WHERE ks.id = %s)`
	symKey := func(col string) string { return fmt.Sprintf(sym, col) }
	queries := map[string]string{
		"files":             `SELECT path, language, content_hash, size_bytes FROM files`,
		"file_index":        `SELECT f.path, i.mtime_ns, i.line_count, i.syntax_errors, i.parsed FROM file_index i JOIN files f ON f.id = i.file_id`,
		"symbols":           `SELECT ` + symKey("s.id") + `, s.end_line, COALESCE(s.signature, ''), COALESCE(` + symKey("s.parent_symbol_id") + `, '') FROM symbols s`,
		"docstrings":        `SELECT f.path, COALESCE(` + symKey("d.symbol_id") + `, ''), d.content, COALESCE(d.format, ''), COALESCE(d.parsed_fields, '') FROM docstrings d JOIN files f ON f.id = d.file_id`,
		"inline_comments":   `SELECT f.path, COALESCE(` + symKey("c.symbol_id") + `, ''), c.line, c.content, COALESCE(c.kind, ''), c.is_rationale FROM inline_comments c JOIN files f ON f.id = c.file_id`,
		"file_imports":      `SELECT f.path, i.module, i.level, i.names, i.type_only, i.line FROM file_imports i JOIN files f ON f.id = i.file_id`,
		"name_refs":         `SELECT f.path, COALESCE(` + symKey("r.symbol_id") + `, ''), r.name, r.qualifier, r.kind, r.line FROM name_refs r JOIN files f ON f.id = r.file_id`,
		"dependencies":      `SELECT s.path, t.path, d.kind FROM dependencies d JOIN files s ON s.id = d.source_file_id JOIN files t ON t.id = d.target_file_id`,
		"symbol_references": `SELECT ` + symKey("r.caller_symbol_id") + `, ` + symKey("r.callee_symbol_id") + `, r.reference_kind, printf('%.3f', r.confidence) FROM symbol_references r`,
		"commits":           `SELECT hash, author, message, timestamp, files_changed FROM commits`,
		"file_commits":      `SELECT f.path, c.hash FROM file_commits fc JOIN files f ON f.id = fc.file_id JOIN commits c ON c.id = fc.commit_id`,
		"co_changes":        `SELECT a.path, b.path, c.count, c.last_commit_hash FROM co_changes c JOIN files a ON a.id = c.file_a_id JOIN files b ON b.id = c.file_b_id`,
		"file_search":       `SELECT f.path FROM file_search s JOIN files f ON f.id = s.rowid`,
		"file_search_vocab": `SELECT term, doc, cnt FROM file_search_vocab`,
		"ident_names":       `SELECT u.path, d.path, n.name FROM ident_names n JOIN files u ON u.id = n.user_file JOIN files d ON d.id = n.def_file`,
		"ident_state":       `SELECT max_defs FROM ident_state`,
	}
	out := map[string][]string{}
	for table, q := range queries {
		out[table] = dumpRows(t, db, q)
	}
	return out
}

// dumpRows returns the rows of q, each as its values joined by " | ",
// sorted: rows compared as sets.
func dumpRows(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	var out []string
	for _, r := range storetest.RowList(t, db, q) {
		parts := make([]string, len(r))
		for i, v := range r {
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			parts[i] = fmt.Sprint(v)
		}
		out = append(out, strings.Join(parts, " | "))
	}
	sort.Strings(out)
	return out
}

// freshDump indexes r's tree afresh in a state directory of its own.
func freshDump(t *testing.T, r *repo, mod ...func(*Builder)) map[string][]string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fresh")
	f := store.NewFactory(statedir.At(dir))
	b := NewBuilder(f)
	for _, m := range mod {
		m(b)
	}
	if _, err := b.Run(t.Context(), r.root); err != nil {
		t.Fatal(err)
	}
	return dumpIndex(t, f)
}

// compareFresh compares r's index with a fresh index of the same tree,
// co-change pairs whatever their order.
func compareFresh(t *testing.T, r *repo, mod ...func(*Builder)) {
	t.Helper()
	got, want := dumpIndex(t, r.f), freshDump(t, r, mod...)
	got["co_changes"], want["co_changes"] = normPairs(got["co_changes"]), normPairs(want["co_changes"])
	for table := range want {
		if table == "file_index" {
			continue
		}
		if diff := cmp.Diff(want[table], got[table]); diff != "" {
			t.Errorf("%s: incremental (+) differs from fresh (-):\n%s", table, diff)
		}
	}
}

// normPairs orders each co-change pair's two paths: the stored order
// follows file IDs, which differ between an incremental and a fresh index.
func normPairs(rows []string) []string {
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		p := strings.SplitN(r, " | ", 3)
		if len(p) == 3 && p[1] < p[0] {
			p[0], p[1] = p[1], p[0]
		}
		out = append(out, strings.Join(p, " | "))
	}
	sort.Strings(out)
	return out
}

// TestHistoryFileReturns: a file out of the work tree for one run (moved
// aside, stashed) and back, HEAD unchanged, gets its commits and
// co-changes back, as a fresh index has them.
func TestHistoryFileReturns(t *testing.T) {
	r := newRepo(t, true)
	r.write("a.py", "a = 1\n")
	r.write("b.py", "b = 1\n")
	r.commit("add a b")
	r.write("a.py", "a = 2\n")
	r.write("b.py", "b = 2\n")
	r.commit("change a b")
	r.index()
	takeAsideAndBack(t, r, "a.py")
	// A new file has no history: no full mine for it.
	r.write("c.py", "c = 1\n")
	if res := r.index(); res.History != "up to date" {
		t.Errorf("history %q after a new file, want up to date", res.History)
	}
}

// TestHistoryRevertBringsAFileBack: a file deleted by one commit and
// brought back by a revert keeps its older history.
func TestHistoryRevertBringsAFileBack(t *testing.T) {
	r := newRepo(t, true)
	r.write("a.py", "a = 1\n")
	r.write("b.py", "b = 1\n")
	r.commit("add a b")
	r.git("rm", "-q", "a.py")
	r.git("commit", "-qm", "drop a")
	r.index()
	r.git("revert", "--no-edit", "HEAD")
	r.index()
	compareFresh(t, r)
}

// TestHistoryDepthIncrementally: an incremental mine keeps the newest
// history_depth commits, as a fresh one reads them, once the index holds
// more than a twentieth (one here) over them, dropping the oldest with
// their share of the co-change counts.
func TestHistoryDepthIncrementally(t *testing.T) {
	r := newRepo(t, true)
	depth := func(b *Builder) { b.HistoryDepth = 2 }
	for i := range 3 {
		r.write("a.py", "a = "+strconv.Itoa(i)+"\n")
		r.write("b.py", "b = "+strconv.Itoa(i)+"\n")
		r.commit("c")
	}
	r.index(depth)
	r.write("a.py", "a = 8\n")
	r.commit("c4")
	if res := r.index(depth); res.History != "incremental" || res.Commits != 3 {
		t.Errorf("one commit on: history %q, %d commits; want an incremental mine keeping 3, within the slack", res.History, res.Commits)
	}
	r.write("a.py", "a = 9\n")
	r.write("b.py", "b = 9\n")
	r.commit("c5")
	res := r.index(depth)
	if res.History != "incremental" || res.Commits != 2 {
		t.Errorf("two commits on: history %q, %d commits; want an incremental mine trimmed to 2", res.History, res.Commits)
	}
	compareFresh(t, r, depth)
}

// TestTSExtendsTargetChange: a tsconfig "extends" target, whatever its
// name, steers resolution: a change to it alone resolves imports again.
func TestTSExtendsTargetChange(t *testing.T) {
	r := newRepo(t, true)
	r.write("tsconfig.json", `{"extends": "./configs/base.json"}`)
	r.write("configs/base.json", `{"compilerOptions": {"baseUrl": "..", "paths": {"@app/*": ["src/*"]}}}`)
	r.write("src/x.ts", "export const x = 1;\n")
	r.write("lib/x.ts", "export const x = 2;\n")
	r.write("main.ts", "import { x } from '@app/x';\nconsole.log(x);\n")
	r.commit("init")
	r.index()
	r.write("configs/base.json", `{"compilerOptions": {"baseUrl": "..", "paths": {"@app/*": ["lib/*"]}}}`)
	r.index()
	compareFresh(t, r)
}

// TestPyRefsFollowNewPackage: a new, empty __init__.py turns app/ into a
// package, so app/main.py's "from helpers import helper" resolves to the
// root helpers.py: its symbol references follow the edge, although
// main.py is unchanged and imports neither new file.
func TestPyRefsFollowNewPackage(t *testing.T) {
	r := newRepo(t, true)
	r.write("helpers.py", "def helper():\n    return 1\n")
	r.write("app/helpers.py", "def helper():\n    return 2\n")
	r.write("app/main.py", "from helpers import helper\n\n\ndef run():\n    return helper()\n")
	r.commit("init")
	r.index()
	r.write("app/__init__.py", "")
	r.index()
	compareFresh(t, r)
}

// TestHistoryFileReturnsAcrossTimeZones: the oldest mined commit is the
// oldest by the instant, whatever the offsets its authors wrote: a file
// that comes back finds its first commit, made in London three hours
// before a later one made in California at an earlier clock time.
func TestHistoryFileReturnsAcrossTimeZones(t *testing.T) {
	r := newRepo(t, true)
	dated := func(date, msg string) {
		t.Setenv("GIT_AUTHOR_DATE", date)
		t.Setenv("GIT_COMMITTER_DATE", date)
		r.commit(msg)
	}
	r.write("a.py", "a = 1\n")
	r.write("b.py", "b = 1\n")
	dated("2026-01-01T20:00:00+00:00", "add a and b, in London")
	r.write("b.py", "b = 2\n")
	dated("2026-01-01T15:00:00-08:00", "change b, in California three hours later")
	r.index()
	takeAsideAndBack(t, r, "a.py")
}

// takeAsideAndBack indexes r without file rel, puts it back, indexes
// again, and checks that the history was mined in full and matches a
// fresh index's: the returning file's commits and co-changes are linked.
func takeAsideAndBack(t *testing.T, r *repo, rel string) {
	t.Helper()
	path := filepath.Join(r.root, rel)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	r.index()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if res := r.index(); res.History != "full" {
		t.Errorf("history %q, want a full mine for a file that came back", res.History)
	}
	compareFresh(t, r)
}
