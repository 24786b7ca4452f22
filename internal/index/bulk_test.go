package index

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/store"
)

// A run into empty content tables drops the indexes of bulkIndexes and
// builds them again before it commits: after a first run, a failed one
// and a rebuild the schema's indexes are the migrations', and the name
// lookups they serve answer.
func TestBulkIndexesBuiltAgain(t *testing.T) {
	r := newRepo(t, true)
	n := rebuildMinFiles + 10 // enough files for a rebuild below
	mod := func(i int) string { return fmt.Sprintf("pkg/m%03d.py", i) }
	for i := range n {
		r.write(mod(i), "from pkg import base\n\nclass Handler:\n    def save(self):\n        return base.helper()\n")
	}
	r.write("pkg/__init__.py", "")
	r.write("pkg/base.py", "def helper():\n    return 1\n")
	r.commit("init")
	schema := func() []string {
		t.Helper()
		return r.strings(`SELECT name || ': ' || sql FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL ORDER BY name`)
	}
	db, err := r.f.Open(t.Context(), store.Curated, "", false) // migrates a new file
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	migrated := schema() // the curated DB as the migrations left it
	for _, n := range bulkIndexes {
		if !slices.ContainsFunc(migrated, func(s string) bool { return strings.HasPrefix(s, n+": ") }) {
			t.Fatalf("the migrations create no index %s: %q", n, migrated)
		}
	}
	check := func(when string) {
		t.Helper()
		if got := schema(); !slices.Equal(got, migrated) {
			t.Errorf("%s: indexes %q, want the migrations' %q", when, got, migrated)
		}
		r.integrity()
	}

	// A first run that fails after the drop leaves the schema as it was.
	failing := func(b *Builder) {
		b.readFile = func(p string) ([]byte, error) {
			if strings.HasSuffix(p, "m007.py") {
				return nil, errors.New("injected read error")
			}
			return os.ReadFile(p)
		}
	}
	if _, err := r.run(failing); err == nil {
		t.Fatal("a run with an unreadable file succeeded")
	}
	check("after a failed first run")

	r.index()
	check("after a first run")
	if got := r.count(`SELECT COUNT(*) FROM symbols INDEXED BY idx_symbols_name WHERE name = 'save'`); got != n {
		t.Errorf("symbols named save through idx_symbols_name: %d, want %d", got, n)
	}
	if got := r.count(`SELECT COUNT(*) FROM symbol_references r INDEXED BY idx_symbol_references_callee
		WHERE r.callee_symbol_id = (SELECT id FROM symbols WHERE name = 'helper')`); got != n {
		t.Errorf("references to helper through idx_symbol_references_callee: %d, want %d", got, n)
	}

	// Every file changed: the run rebuilds, into emptied tables.
	for i := range n {
		r.write(mod(i), "from pkg import base\n\nclass Handler:\n    def load(self):\n        return base.helper()\n")
	}
	r.write("pkg/base.py", "def helper():\n    return 2\n")
	r.commit("change all")
	if res := r.index(); !res.Rebuilt {
		t.Fatalf("changing every file did not rebuild: %+v", res)
	}
	check("after a rebuild")
}
