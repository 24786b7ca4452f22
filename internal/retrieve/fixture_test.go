package retrieve

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/index"
	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
	"github.com/cra-dev/cra/internal/workspace"
)

// fixture is an indexed git repository with history.
type fixture struct {
	root   string
	kb     *kb.KnowledgeBase // over the curated DB, read-only
	repoID int64
}

func git(t testing.TB, dir string, args ...string) {
	t.Helper()
	gittest.Run(t, dir, args...)
}

// newFixture writes files (commits: each map is one commit), indexes the
// repository and opens its curated DB read-only.
func newFixture(t testing.TB, commits ...map[string]string) *fixture {
	t.Helper()
	root := t.TempDir()
	git(t, root, "init", "-q")
	for i, files := range commits {
		for name, content := range files {
			p := filepath.Join(root, filepath.FromSlash(name))
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		git(t, root, "add", "-A")
		git(t, root, "commit", "-qm", "commit "+string(rune('a'+i)))
	}
	state, err := workspace.EnsureStateDir(root)
	if err != nil {
		t.Fatal(err)
	}
	f := store.NewFactory(statedir.At(state))
	res, err := index.NewBuilder(f).Run(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	db, err := f.Open(context.Background(), store.Curated, "", true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &fixture{root: root, kb: kb.New(db), repoID: res.RepoID}
}

// describe writes file_metadata rows, as 'cra enrich --promote' does: by
// path, module, domain, concepts (a JSON array) and purpose.
func (f *fixture) describe(t testing.TB, rows map[string][4]string) {
	t.Helper()
	ctx := context.Background()
	db, err := store.NewFactory(statedir.Of(f.root)).Open(ctx, store.Curated, "", false)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for p, m := range rows {
		if _, err := db.ExecContext(ctx, `INSERT INTO file_metadata (file_id, module, domain, concepts, purpose)
			SELECT id, ?, ?, ?, ? FROM files WHERE repo_id = ? AND path = ?`, m[0], m[1], m[2], m[3], f.repoID, p); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *fixture) rank(t testing.TB, task string) []Candidate {
	t.Helper()
	c, err := NewRanker(f.kb, f.repoID).Rank(context.Background(), Analyze(task), 20)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// assemble ranks the files for task and assembles its package within b.
func (f *fixture) assemble(t testing.TB, task string, b Budget) *Package {
	t.Helper()
	ctx := context.Background()
	q := Analyze(task)
	cands, err := NewRanker(f.kb, f.repoID).Rank(ctx, q, 10)
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := NewAssembler(f.kb, f.repoID, f.root).Assemble(ctx, q, cands, b)
	if err != nil {
		t.Fatal(err)
	}
	return pkg
}

func paths(cs []Candidate) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Path
	}
	return out
}

// shop is a small Python project: a pager module, a CLI that uses it,
// an unrelated formatter, tests, and a history in which cli.py and
// pager.py change together.
var shop = []map[string]string{
	{
		"shop/__init__.py": "",
		"shop/pager.py": `"""Paging of long output."""
import os


def _pager_contextmanager(color=None):
    """Yield a pager process."""
    cmd = os.environ.get("PAGER", "less")
    return cmd


def echo_via_pager(text):
    with _pager_contextmanager() as p:
        p.write(text)
`,
		"shop/cli.py": `from shop.pager import echo_via_pager


def main(argv):
    """Entry point."""
    echo_via_pager("\n".join(argv))
`,
		"shop/fmt.py": strings.Repeat("def wrap_text(text, width):\n    return text[:width]\n\n", 3) + `
def format_table(rows):
    """Format rows as a table with columns."""
    return "\n".join(" | ".join(r) for r in rows)
`,
		"tests/test_pager.py": `from shop.pager import echo_via_pager


def test_echo():
    echo_via_pager("x")
`,
		"README.md": "# shop\nA shop with a pager.\n",
	},
	{"shop/cli.py": "from shop.pager import echo_via_pager\n\n\ndef main(argv):\n    echo_via_pager(' '.join(argv))\n", "shop/pager.py": "\"\"\"Paging.\"\"\"\nimport os\n\n\ndef _pager_contextmanager(color=None):\n    return os.environ.get('PAGER')\n\n\ndef echo_via_pager(text):\n    return text\n"},
	{"shop/cli.py": "from shop.pager import echo_via_pager\n\n\ndef main(argv):\n    return echo_via_pager(argv)\n", "shop/pager.py": "\"\"\"Paging of long output.\"\"\"\nimport os\n\n\ndef _pager_contextmanager(color=None):\n    \"\"\"Yield a pager process.\"\"\"\n    cmd = os.environ.get(\"PAGER\", \"less\")\n    return cmd\n\n\ndef echo_via_pager(text):\n    with _pager_contextmanager() as p:\n        p.write(text)\n"},
}
