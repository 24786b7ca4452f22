package index

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
)

// TestMovedRepository: a repository moved (or renamed) keeps its
// .clean_room/ and its index: its rows follow it, no file is indexed
// again, and nothing is left of the old path (the identifier graph,
// built over every repository row, once linked to stale copies).
func TestMovedRepository(t *testing.T) {
	parent := t.TempDir()
	oldRoot := filepath.Join(parent, "proj")
	os.MkdirAll(oldRoot, 0o755)
	r := &repo{t: t, root: oldRoot}
	r.git("init", "-q")
	r.write("a.py", "def alpha():\n    return 1\n")
	r.write("b.py", "from a import alpha\n\n\ndef beta():\n    return alpha()\n")
	r.commit("init")
	r.f = store.NewFactory(statedir.At(filepath.Join(oldRoot, ".clean_room")))
	r.index()
	newRoot := filepath.Join(parent, "proj-renamed")
	if err := os.Rename(oldRoot, newRoot); err != nil {
		t.Fatal(err)
	}
	r.root = newRoot
	r.f = store.NewFactory(statedir.At(filepath.Join(newRoot, ".clean_room")))
	res := r.index()
	t.Logf("after the move: added %d, unchanged %d", res.Added, res.Unchanged)
	if n := r.count(`SELECT COUNT(*) FROM repos`); n != 1 {
		t.Errorf("repos after moving the repository: got %d rows, want 1 (%v)", n, r.strings(`SELECT path FROM repos`))
	}
	if n := r.count(`SELECT COUNT(*) FROM files`); n != 2 {
		t.Errorf("files in curated.sqlite: got %d, want 2", n)
	}
	// The graph for the live repository's files must not name files of
	// another repository row.
	if n := r.count(`SELECT COUNT(*) FROM ident_names n JOIN files u ON u.id = n.user_file JOIN files d ON d.id = n.def_file WHERE u.repo_id != d.repo_id`); n != 0 {
		t.Errorf("ident_names: %d links cross from one repository row to another", n)
	}
	compareFresh(t, r)
}
