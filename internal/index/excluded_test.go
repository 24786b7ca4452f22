package index

import (
	"strings"
	"testing"
)

// TestExcludedMemo: the memo answers as excludedPath does, in any order
// of paths, for excluded names, virtual environments and plain paths.
func TestExcludedMemo(t *testing.T) {
	venv := func(dir string) bool { return strings.HasSuffix(dir, "env") }
	paths := []string{
		"a.py", "src/a.py", "src/node_modules/x/y.js", "node_modules/x.js", "src/myenv/lib/site.py",
		"src/myenv/x.py", "src/b/c/d.py", "src/b/c/node_modules/e.js", "src/b/c/d2.py", "myenv/a.py",
		".git/config", "src/__pycache__/a.pyc", "deep/er/still/fine.go",
	}
	memo := excludedMemo(venv)
	for _, order := range [][]string{paths, reversed(paths)} {
		for _, p := range order {
			if got, want := memo(p), excludedPath(p, venv); got != want {
				t.Errorf("%s: got %v, want %v", p, got, want)
			}
		}
	}
	if !memo("src/node_modules/x/y.js") || memo("src/b/c/d.py") {
		t.Error("the cases do not exercise both answers")
	}
}

func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}
