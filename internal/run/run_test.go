package run

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/agent"
)

func TestNewTaskID(t *testing.T) {
	a, b := NewTaskID(), NewTaskID()
	if a == b || len(a) != 36 || a[14] != '4' || !strings.ContainsRune("89ab", rune(a[19])) {
		t.Errorf("got %s and %s, want two different UUIDv4", a, b)
	}
}

// TestSavePlanFallsBack: a plan whose --output went bad while the model
// worked is saved where cra keeps plans, with a warning, not lost.
func TestSavePlanFallsBack(t *testing.T) {
	repo := t.TempDir()
	blocker := filepath.Join(repo, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fallback := filepath.Join(repo, ".clean_room", "plans", "t.md")
	p := &agent.Plan{Task: "fix add"}
	var w strings.Builder

	md, js, err := savePlan(&w, repo, filepath.Join(blocker, "x.md"), fallback, p)
	if err != nil || md != fallback || js != filepath.Join(repo, ".clean_room", "plans", "t.json") {
		t.Fatalf("got %q, %q, %v; want the fallback", md, js, err)
	}
	if !strings.Contains(w.String(), "warning: could not save the plan to file/x.md") || !strings.Contains(w.String(), "saved it to .clean_room/plans/t.md instead") {
		t.Errorf("warning: %q", w.String())
	}
	if _, err := os.Stat(fallback); err != nil {
		t.Errorf("fallback not written: %v", err)
	}

	// A good path: no warning. A bad fallback itself: the error.
	w.Reset()
	good := filepath.Join(repo, "p.md")
	if md, _, err := savePlan(&w, repo, good, fallback, p); err != nil || md != good || w.Len() != 0 {
		t.Errorf("good path: got %q, %v, warning %q", md, err, w.String())
	}
	bad := filepath.Join(blocker, "y.md")
	if _, _, err := savePlan(&w, repo, bad, bad, p); err == nil || !strings.Contains(err.Error(), "cannot make its directory") {
		t.Errorf("bad fallback: got %v", err)
	}
}

func TestClip(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{clip("  task \n", 4), "task"},
		{clip("abcdef", 3), "abc…"},
		{clip("aé", 2), "a…"}, // never inside a rune
	} {
		if tc.in != tc.want {
			t.Errorf("got %q, want %q", tc.in, tc.want)
		}
	}
}
