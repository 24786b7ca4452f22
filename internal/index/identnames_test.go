package index

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
)

// TestIdentNamesMatchQuery: the identifier graph the index keeps gives
// the rare-name links retrieval would compute from name_refs and symbols,
// after a first run, an incremental run (a file changed, one deleted, one
// added, one made binary) and a run with a name's definers moving past
// the bound, for every file and for a set of files at once.
func TestIdentNamesMatchQuery(t *testing.T) {
	// One of the package's four longest tests (SQLite is Go code,
	// instrumented, under -race): they run side by side, on their own
	// trees and states, so the package's wall time is not their sum.
	t.Parallel()
	ctx := context.Background()
	s := newSynthRepo(t, t.TempDir(), 121)
	state := store.NewFactory(statedir.At(filepath.Join(t.TempDir(), "state")))
	index := func() {
		t.Helper()
		if _, err := NewBuilder(state).Run(ctx, s.root); err != nil {
			t.Fatal(err)
		}
	}
	check := func(step string) {
		t.Helper()
		db, err := state.Open(ctx, store.Curated, "", false)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var ids []int64
		rows, err := db.Query(`SELECT id FROM files ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id int64
			rows.Scan(&id)
			ids = append(ids, id)
		}
		rows.Close()
		// Every file is checked through the set of all files: both ways
		// of computing the links group them by file (From), so a set's
		// links are its files' links side by side, and a file's own
		// links are the set's rows from it. A few files alone check
		// the one-file lists. (Asking for each file alone, 121 files ×
		// 5 steps, cost 330 s under -race: SQLite is Go code there.)
		sets := [][]int64{ids, ids[:min(len(ids), 12)], ids[len(ids)/2:], ids[:1], ids[len(ids)/3 : len(ids)/3+1], ids[len(ids)-1:]}
		links := func() [][]kb.FileLink {
			k := kb.New(db)
			var out [][]kb.FileLink
			for _, set := range sets {
				for _, bound := range []int{IdentMaxDefs, 1} {
					d, u, err := k.RareNameLinks(ctx, set, bound)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, d, u)
				}
			}
			return out
		}
		var n int
		db.QueryRow(`SELECT COUNT(*) FROM ident_names`).Scan(&n)
		if n == 0 {
			t.Fatalf("%s: the identifier graph is empty", step)
		}
		got := links()
		// Without the graph's state row kb computes the links itself.
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.Exec(`DELETE FROM ident_state`); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		want := links()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: links from the graph (+) differ from the query (-):\n%s", step, diff)
		}
		if _, err := db.Exec(`INSERT INTO ident_state (max_defs) VALUES (?)`, IdentMaxDefs); err != nil {
			t.Fatal(err)
		}
	}
	index()
	check("first run")

	s.set(t, 10, 1)
	os.Remove(filepath.Join(s.root, s.path(7)))
	s.write(t, s.path(8), "\x00binary now")
	s.write(t, "pkgnew/mod_new.py", "from pkg000.mod00001 import func_1\n\n\ndef func_new():\n    return func_1(1)\n")
	index()
	check("incremental run")

	// rare_0 gets more definers than the bound: its links go.
	for i := range 4 {
		s.write(t, filepath.Join("extra", "def"+string(rune('a'+i))+".py"), "def rare_0():\n    return 0\n")
	}
	index()
	check("a name no longer rare")

	// Files touched but not changed: the stat gate lets them through,
	// their content is the same, and the graph stays right.
	later := time.Now().Add(time.Hour)
	for i := range 5 {
		if err := os.Chtimes(filepath.Join(s.root, s.path(20+i)), later, later); err != nil {
			t.Fatal(err)
		}
	}
	index()
	check("files touched")

	// An index whose graph was never built (written before the table)
	// gets it on the next run, even with no file changed.
	db, err := state.Open(ctx, store.Curated, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM ident_names; DELETE FROM ident_state`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	index()
	check("no graph before")
}

// TestIdentNamesWhileIndexing: a reader in another connection, asking for
// the links while an incremental run rewrites the graph, sees the graph
// before the run or after it, never a mix nor an empty one (the graph and
// its state row change in the index's one transaction).
func TestIdentNamesWhileIndexing(t *testing.T) {
	ctx := context.Background()
	s := newSynthRepo(t, t.TempDir(), 121)
	state := store.NewFactory(statedir.At(filepath.Join(t.TempDir(), "state")))
	if _, err := NewBuilder(state).Run(ctx, s.root); err != nil {
		t.Fatal(err)
	}
	db, err := state.Open(ctx, store.Curated, "", true)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	k := kb.New(db)
	ids := []int64{1, 2, 3, 5, 8, 13, 21, 34, 55, 89}
	links := func() string {
		d, u, err := k.RareNameLinks(ctx, ids, IdentMaxDefs)
		if err != nil {
			t.Error(err)
		}
		return fmt.Sprint(d, u)
	}
	before := links()
	s.set(t, 3, 1) // a third of the files: an incremental run
	seen := map[string]int{}
	done := make(chan error)
	go func() {
		_, err := NewBuilder(state).Run(ctx, s.root)
		done <- err
	}()
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		default:
			seen[links()]++
		}
	}
	after := links()
	if before == after {
		t.Fatal("the run changed no link: the test shows nothing")
	}
	for got, n := range seen {
		if got != before && got != after {
			t.Errorf("a reader saw links %d time(s) that are neither the graph before the run nor after it:\n%s", n, got)
		}
	}
}

// TestIdentNamesIncrementalRows: an incremental run rewrites the rows of
// a name only when its definers change, and otherwise only the rows from
// the files it read again; after each kind of change the graph holds
// what a fresh index of the same files does.
func TestIdentNamesIncrementalRows(t *testing.T) {
	r := newRepo(t, true)
	r.write("lib/helpers.py", "def rare_helper():\n    return 1\n\ndef other_helper():\n    return 2\n")
	r.write("app/a.py", "from lib.helpers import rare_helper\n\ndef a():\n    return rare_helper()\n")
	r.write("app/b.py", "from lib.helpers import rare_helper, other_helper\n\ndef b():\n    return rare_helper() + other_helper()\n")
	r.write("app/c.py", "def c():\n    return 3\n")
	r.commit("init")
	r.index()
	graph := func(f *store.Factory) []string {
		t.Helper()
		rr := &repo{t: t, root: r.root, f: f}
		return rr.strings(`SELECT u.path || ' -> ' || d.path || ' ' || g.name FROM ident_names g
			JOIN files u ON u.id = g.user_file JOIN files d ON d.id = g.def_file ORDER BY 1`)
	}
	for _, step := range []struct {
		name    string
		edit    func()
		links   int  // rows after the step
		changed bool // whether the step changes them
	}{
		{"a user drops a use, another starts one", func() {
			r.write("app/a.py", "def a():\n    return 0\n")
			r.write("app/c.py", "from lib.helpers import other_helper\n\ndef c():\n    return other_helper()\n")
		}, 3, true},
		{"the definer changes its bodies, not its names", func() {
			r.write("lib/helpers.py", "def rare_helper():\n    return 10\n\ndef other_helper():\n    return 20\n")
		}, 3, false},
		{"a new definer, a user of a name defined in it", func() {
			r.write("app/d.py", "def rare_helper():\n    return 4\n\ndef d_only():\n    return 5\n")
			r.write("app/a.py", "from app.d import d_only\n\ndef a():\n    return d_only()\n")
		}, 5, true},
		{"the definer drops a name", func() {
			r.write("lib/helpers.py", "def rare_helper():\n    return 10\n")
		}, 3, true},
		{"a definer deleted", func() {
			r.git("rm", "-q", "app/d.py")
		}, 1, true},
	} {
		before := graph(r.f)
		step.edit()
		r.commit(step.name)
		if res := r.index(); res.Rebuilt {
			t.Fatalf("%s: rebuilt; want an incremental run", step.name)
		}
		got := graph(r.f)
		fresh := store.NewFactory(statedir.At(filepath.Join(t.TempDir(), "state")))
		if _, err := NewBuilder(fresh).Run(t.Context(), r.root); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(graph(fresh), got); diff != "" {
			t.Errorf("%s: graph differs from a fresh index's (-fresh +incremental):\n%s", step.name, diff)
		}
		if len(got) != step.links || cmp.Equal(before, got) == step.changed {
			t.Errorf("%s: %d rows %q (before %q); want %d, changed %v", step.name, len(got), got, before, step.links, step.changed)
		}
	}
}
