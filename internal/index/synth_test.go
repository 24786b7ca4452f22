package index

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/gitx/gittest"
)

// synthRepo is a generated repository of small Python and Go files that
// import each other, define classes and functions, and call across files:
// names unique to a file, names shared by a few (resolved by a guess), and
// names shared by many (save, load). Two files in three are Python.
type synthRepo struct {
	root  string
	files int
	ver   map[int]int // the version of each file written
}

// pkgSize is the number of files per package directory.
const pkgSize = 50

func newSynthRepo(tb testing.TB, root string, files int) *synthRepo {
	tb.Helper()
	s := &synthRepo{root: root, files: files, ver: map[int]int{}}
	s.write(tb, "go.mod", "module example.com/synth\n\ngo 1.22\n")
	for i := range files - 1 {
		s.change(tb, i, 0)
	}
	gittest.Run(tb, root, "init", "-q")
	gittest.Run(tb, root, "add", "-A")
	gittest.Run(tb, root, "commit", "-qm", "synthetic tree")
	return s
}

func (s *synthRepo) write(tb testing.TB, rel, content string) {
	tb.Helper()
	p := filepath.Join(s.root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
}

func isGoFile(i int) bool { return i%3 == 2 }

func (s *synthRepo) path(i int) string {
	if isGoFile(i) {
		return fmt.Sprintf("gopkg%03d/file%05d.go", i/pkgSize, i)
	}
	return fmt.Sprintf("pkg%03d/mod%05d.py", i/pkgSize, i)
}

// peer returns another file of the same language, k steps away.
func (s *synthRepo) peer(i, k int) int {
	n := s.files - 1
	for j := (i + 3*k*7919) % n; ; j = (j + 1) % n {
		if j != i && isGoFile(j) == isGoFile(i) {
			return j
		}
	}
}

// rare is the number of distinct rare_N names: two Python files in
// three, each defining one, make 3.5 definitions a name.
func (s *synthRepo) rare() int { return max(1, (s.files-1)*2/3*2/7) }

// change writes version v of file i: v > 0 adds a function, drops one
// and changes a call, so symbols, references and imports all move.
func (s *synthRepo) change(tb testing.TB, i, v int) {
	tb.Helper()
	if w, ok := s.ver[i]; ok && w == v {
		return
	}
	s.ver[i] = v
	var b strings.Builder
	if isGoFile(i) {
		p := s.peer(i, 1+v)
		fmt.Fprintf(&b, "package gopkg%03d\n\nimport (\n\t\"fmt\"\n\n\tpeer \"example.com/synth/gopkg%03d\"\n)\n\n", i/pkgSize, p/pkgSize)
		fmt.Fprintf(&b, "// Func%d does the work of file %d.\nfunc Func%d(x int) int {\n\tfmt.Println(x)\n\treturn peer.Func%d(x + %d)\n}\n\n", i, i, i, p, v)
		fmt.Fprintf(&b, "// Store%d keeps items.\ntype Store%d struct{ items []int }\n\n", i, i)
		fmt.Fprintf(&b, "// Save adds an item.\nfunc (s *Store%d) Save(x int) { s.items = append(s.items, Func%d(x)) }\n", i, i)
		if v > 0 {
			fmt.Fprintf(&b, "\n// Extra%d_%d came with version %d.\nfunc Extra%d_%d() int { return %d }\n", i, v, v, i, v, v)
		}
		s.write(tb, s.path(i), b.String())
		return
	}
	a, c := s.peer(i, 1+v), s.peer(i, 2)
	fmt.Fprintf(&b, "\"\"\"Module %d.\"\"\"\n\nfrom pkg%03d.mod%05d import func_%d, Store%d\nfrom pkg%03d import mod%05d\n\n\n", i, a/pkgSize, a, a, a, c/pkgSize, c)
	fmt.Fprintf(&b, "def func_%d(x):\n    \"\"\"Return x through module %d.\n\n    Args:\n        x: a number.\n    \"\"\"\n    return func_%d(x) + mod%05d.func_%d(x)\n\n\n", i, a, a, c, c)
	// shared_N is defined in the files of two packages, helper in every
	// file: neither is ever a guess. rare_N is defined in three or four
	// files and used in others that do not import them: a guess by name
	// when there are three, none when there are four, and a change moves
	// definitions across that line.
	fmt.Fprintf(&b, "def shared_%d(y):\n    return rare_%d(helper(y))\n\n\n", i/(pkgSize*2), (i*13)%s.rare())
	fmt.Fprintf(&b, "def rare_%d(y):\n    return y\n\n\n", (i+v)%s.rare())
	fmt.Fprintf(&b, "def helper(y):\n    # Doubled because callers expect it.\n    return y * 2\n\n\n")
	fmt.Fprintf(&b, "class Store%d(Store%d):\n    def save(self, item):\n        self.load()\n        return shared_%d(item)\n\n    def load(self):\n        return Store%d().save(%d)\n", i, a, (i+v)/(pkgSize*2), a, v)
	if v == 0 {
		fmt.Fprintf(&b, "\n\ndef old_%d():\n    return func_%d(1)\n", i, i)
	} else {
		fmt.Fprintf(&b, "\n\ndef new_%d_%d():\n    return shared_%d(func_%d(%d))\n", i, v, i/(pkgSize*2), i, v)
	}
	s.write(tb, s.path(i), b.String())
}
