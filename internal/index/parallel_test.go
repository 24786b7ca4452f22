package index

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
)

// TestParallelEqualsSequential: the parsers run on every core while one
// writer writes their results in path order, so an index built by many
// workers is the index one worker builds, row for row and row ID for
// row ID, the full-text index's own b-trees included; a fresh run and an
// incremental one after changes alike. The repository is a real one:
// this module's own checkout, cloned with 200 commits of its history,
// its work tree cut to the packages with source in every language the
// indexer parses (the files left out are tracked but absent, which the
// indexer skips as a deleted file).
func TestParallelEqualsSequential(t *testing.T) {
	// One of the package's four longest tests (SQLite is Go code,
	// instrumented, under -race): they run side by side, on their own
	// trees and states, so the package's wall time is not their sum.
	t.Parallel()
	ctx := context.Background()
	root := cloneSelf(t, 200, "internal/index", "internal/lang", "internal/kb", "bench", "internal/server/web", "go.mod")
	// Every run inserts its full-text rows in bursts of 32 KiB, many of
	// them; the third parses at most 2 files ahead of its writer, which
	// then waits for the parsers at nearly every file.
	runs := []struct {
		name           string
		workers, ahead int
	}{{"1 worker", 1, parseAhead}, {"4 workers", 4, parseAhead}, {"4 workers 2 ahead", 4, 2}}
	states := map[string]*store.Factory{}
	index := func() {
		t.Helper()
		for _, r := range runs {
			f, ok := states[r.name]
			if !ok {
				f = store.NewFactory(statedir.At(filepath.Join(t.TempDir(), "state")))
				states[r.name] = f
			}
			b := NewBuilder(f)
			b.Workers, b.ahead, b.searchBurst = r.workers, r.ahead, 32<<10
			b.HistoryDepth = 150
			if _, err := b.Run(ctx, root); err != nil {
				t.Fatalf("%s: %v", r.name, err)
			}
		}
		want := dumpTables(t, states[runs[0].name])
		if len(want["files"]) < 100 || len(want["symbols"]) < 1000 || len(want["commits"]) < 100 {
			t.Fatalf("the clone indexed %d files, %d symbols, %d commits: too few to show anything", len(want["files"]), len(want["symbols"]), len(want["commits"]))
		}
		for _, r := range runs[1:] {
			got := dumpTables(t, states[r.name])
			for table := range want {
				if diff := cmp.Diff(want[table], got[table]); diff != "" {
					t.Errorf("%s: %s (+) differ from %s (-):\n%s", table, r.name, runs[0].name, diff)
				}
			}
		}
	}
	index()

	// Changes: a file edited, one deleted, one added.
	edit := filepath.Join(root, "internal", "lang", "testdata", "python.py")
	data, err := os.ReadFile(edit)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(edit, append(data, "\n\ndef added_by_test():\n    return helper_of_test()\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "internal", "index", "scan.go")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "internal", "index", "zz_added.py"), []byte("def helper_of_test():\n    return 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	index()
}

// cloneSelf clones this module's git checkout with depth commits of
// history into a temp dir and removes from the work tree every file
// outside keep (paths relative to the repository's top).
func cloneSelf(t *testing.T, depth int, keep ...string) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	top := strings.TrimSpace(gittest.Run(t, wd, "rev-parse", "--show-toplevel"))
	root := filepath.Join(t.TempDir(), "repo")
	gittest.Run(t, wd, "clone", "-q", "--depth", fmt.Sprint(depth), "file://"+top, root)
	for _, rel := range strings.Split(gittest.Run(t, root, "ls-files"), "\n") {
		if rel == "" {
			continue
		}
		kept := false
		for _, k := range keep {
			kept = kept || rel == k || strings.HasPrefix(rel, k+"/")
		}
		if !kept {
			if err := os.Remove(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

// dumpTables reads every table of the curated database in storage order
// (rowid, or the primary key of a table without one), each row as text:
// two dumps are equal when the tables hold the same rows under the same
// IDs. The run's timestamps are left out.
func dumpTables(t *testing.T, f *store.Factory) map[string][]string {
	t.Helper()
	db, err := f.Open(context.Background(), store.Curated, "", true)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	type table struct{ name, sql string }
	var tables []table
	rows, err := db.Query(`SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND sql NOT LIKE 'CREATE VIRTUAL%'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var tb table
		if err := rows.Scan(&tb.name, &tb.sql); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, tb)
	}
	rows.Close()
	timestamps := map[string]bool{"schema_migrations.applied_at": true, "repos.indexed_at": true, "repo_state.last_run_ns": true}
	out := map[string][]string{}
	for _, tb := range tables {
		q := `SELECT * FROM "` + tb.name + `"`
		if !strings.Contains(strings.ToUpper(tb.sql), "WITHOUT ROWID") {
			q += ` ORDER BY rowid`
		}
		out[tb.name] = dumpOrdered(t, db, q, tb.name, timestamps)
	}
	return out
}

// dumpOrdered returns q's rows in order, each as its columns' values;
// the columns named table.column in skip read as "-".
func dumpOrdered(t *testing.T, db *sql.DB, q, table string, skip map[string]bool) []string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(cols))
		for i, v := range vals {
			switch {
			case skip[table+"."+cols[i]]:
				parts[i] = "-"
			case v == nil:
				parts[i] = "NULL"
			default:
				if b, ok := v.([]byte); ok {
					v = fmt.Sprintf("%x", b)
				}
				parts[i] = fmt.Sprint(v)
			}
		}
		out = append(out, strings.Join(parts, " | "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
