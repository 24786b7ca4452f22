package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/edit"
	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/workspace"
)

// The fixture: a Go module whose test fails until Add adds.
const (
	calcGo     = "package calc\n\n// Add returns the sum of a and b.\nfunc Add(a, b int) int {\n\treturn a - b\n}\n"
	calcTestGo = "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 3); got != 5 {\n\t\tt.Fatalf(\"Add(2, 3) = %d, want 5\", got)\n\t}\n}\n"
	// testSh stands in for go test where speed matters: it prints what go
	// test prints.
	testSh = "if grep -q 'return a + b' calc/calc.go; then echo ok; exit 0; fi\necho '--- FAIL: TestAdd (0.00s)'\necho '    calc_test.go:7: Add(2, 3) = -1, want 5'\necho FAIL\nexit 1\n"
)

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return gittest.Run(t, dir, args...)
}

// newRepo makes a committed fixture repository with its state directory.
func newRepo(t *testing.T) (repo, stateDir string) {
	t.Helper()
	repo = t.TempDir()
	git(t, repo, "init", "-q")
	writeFile(t, repo, "go.mod", "module calc\n\ngo 1.21\n")
	writeFile(t, repo, "calc/calc.go", calcGo)
	writeFile(t, repo, "calc/calc_test.go", calcTestGo)
	writeFile(t, repo, "test.sh", testSh)
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-qm", "calc")
	stateDir, err := workspace.EnsureStateDir(repo)
	if err != nil {
		t.Fatal(err)
	}
	return repo, stateDir
}

func TestNewWorktreeErrors(t *testing.T) {
	ctx := context.Background()
	plain := t.TempDir()
	if _, err := NewWorktree(ctx, plain, filepath.Join(plain, ".clean_room"), "t1"); err == nil || !strings.Contains(err.Error(), "run 'git init' and commit first") {
		t.Errorf("plain directory: got %v", err)
	}
	empty := t.TempDir()
	git(t, empty, "init", "-q")
	if _, err := NewWorktree(ctx, empty, filepath.Join(empty, ".clean_room"), "t1"); err == nil || !strings.Contains(err.Error(), "no commits: cra solve starts its worktree from HEAD; commit first") {
		t.Errorf("no commits: got %v", err)
	}
	repo, state := newRepo(t)
	// A file where the worktrees directory should be: git cannot make it.
	writeFile(t, state, WorktreesDir, "in the way\n")
	_, err := NewWorktree(ctx, repo, state, "t1")
	if err == nil || !strings.Contains(err.Error(), "never edits in place") || !strings.Contains(err.Error(), "branch:     cra/t1") {
		t.Errorf("blocked path: got %v", err)
	}
}

func TestWorktreeRun(t *testing.T) {
	ctx := context.Background()
	repo, state := newRepo(t)
	git(t, repo, "branch", "cra/t1") // taken by someone
	writeFile(t, repo, "notes.txt", "mine\n")

	w, err := NewWorktree(ctx, repo, state, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if w.Git.Branch != "cra/t1-2" || filepath.Base(w.Root) != "t1-2" {
		t.Errorf("got branch %s in %s, want cra/t1-2", w.Git.Branch, w.Root)
	}
	notes := strings.Join(w.Notes, "\n")
	if !strings.Contains(notes, "branch cra/t1 exists: using cra/t1-2") || !strings.Contains(notes, "1 uncommitted change(s) are not in it") {
		t.Errorf("notes: %s", notes)
	}
	res, err := w.Apply(context.Background(), []edit.Block{{Path: "calc/calc.go", Search: "\treturn a - b\n", Replace: "\treturn a + b\n"}})
	if err != nil || !res[0].OK() {
		t.Fatalf("%v %+v", err, res)
	}
	writeFile(t, w.Root, "calc/cache.out", "validation noise\n")
	diff, err := w.Diff(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(diff, "+\treturn a + b") || strings.Contains(diff, "cache.out") {
		t.Errorf("diff:\n%s", diff)
	}
	// The user's tree has not changed.
	if st, _ := gitx.Status(ctx, repo); len(st) != 1 || st[0] != "?? notes.txt" {
		t.Errorf("user's status: %q", st)
	}

	o, err := w.Finish(ctx, true, config.KeepOnFailure, "cra solve t1: fix Add")
	if err != nil {
		t.Fatal(err)
	}
	if !o.Committed || o.Kept || o.BranchDeleted {
		t.Errorf("outcome %+v", o)
	}
	if _, err := os.Stat(w.Git.Path); !errors.Is(err, os.ErrNotExist) {
		t.Error("the worktree of a success stays under on_failure")
	}
	if got := git(t, repo, "show", "cra/t1-2:calc/calc.go"); !strings.Contains(got, "return a + b") {
		t.Errorf("branch content: %s", got)
	}

	if err := w.ApplyToUser(ctx, diff); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(repo, "calc/calc.go")); !strings.Contains(string(data), "return a + b") {
		t.Error("--apply did not change the user's file")
	}
	err = w.ApplyToUser(ctx, diff)
	if err == nil || !strings.Contains(err.Error(), "does not apply cleanly to your work tree, which is unchanged") || !strings.Contains(err.Error(), "git merge cra/t1-2") {
		t.Errorf("second apply: got %v", err)
	}
}

func TestWorktreeFinishPolicies(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		keep          string
		success, edit bool
		kept, deleted bool
	}{
		{config.KeepOnFailure, false, true, true, false},
		{"", false, false, false, true}, // nothing to inspect
		{config.KeepAlways, false, false, true, false},
		{config.KeepNever, false, true, false, false},
		{config.KeepNever, false, false, false, true},
		{config.KeepAlways, true, true, true, false},
	}
	// Each case has its own repository: they run at once.
	for _, tc := range tests {
		t.Run(fmt.Sprintf("keep=%q,success=%v,edit=%v", tc.keep, tc.success, tc.edit), func(t *testing.T) {
			t.Parallel()
			repo, state := newRepo(t)
			w, err := NewWorktree(ctx, repo, state, "t")
			if err != nil {
				t.Fatal(err)
			}
			if tc.edit {
				w.Apply(context.Background(), []edit.Block{{Path: "new.txt", Replace: "x\n"}})
			}
			o, err := w.Finish(ctx, tc.success, tc.keep, "m")
			if err != nil {
				t.Fatal(err)
			}
			_, statErr := os.Stat(w.Git.Path)
			exists, _ := gitx.BranchExists(ctx, repo, w.Git.Branch)
			if o.Kept != tc.kept || (statErr == nil) != tc.kept || o.BranchDeleted != tc.deleted || exists == tc.deleted || o.Committed != tc.edit {
				t.Errorf("%+v: got %+v, dir exists %v, branch exists %v", tc, o, statErr == nil, exists)
			}
		})
	}
}

// TestWorktreeApplyIgnored: a block creating a file git ignores fails
// with a message for the model, the other blocks apply, and the diff and
// the commit go on with them.
func TestWorktreeApplyIgnored(t *testing.T) {
	ctx := context.Background()
	repo, state := newRepo(t)
	writeFile(t, repo, ".gitignore", "*.local\n")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-qm", "ignore")
	w, err := NewWorktree(ctx, repo, state, "ign")
	if err != nil {
		t.Fatal(err)
	}
	res, err := w.Apply(ctx, []edit.Block{
		{Path: "settings.local", Replace: "x = 1\n"},
		{Path: "calc/calc.go", Search: "\treturn a - b\n", Replace: "\treturn a + b\n"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Block != 1 || res[0].Status != edit.StatusFailed || !strings.Contains(res[0].Message, "settings.local is ignored by git") ||
		res[1].Block != 2 || !res[1].OK() {
		t.Fatalf("results: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(w.Root, "settings.local")); !os.IsNotExist(err) {
		t.Errorf("the ignored file was written: %v", err)
	}
	diff, err := w.Diff(ctx)
	if err != nil || !strings.Contains(diff, "+\treturn a + b") {
		t.Fatalf("diff: %v\n%s", err, diff)
	}
	if o, err := w.Finish(ctx, true, "never", "fix Add"); err != nil || !o.Committed {
		t.Errorf("finish: %+v, %v", o, err)
	}
}

// TestWorktreeNotesWhatItLacks: a worktree has neither the checkout's
// ignored dependencies nor its submodules, and says so: a validation
// command that needs them fails there, whatever the edits.
func TestWorktreeNotesWhatItLacks(t *testing.T) {
	ctx := context.Background()
	lib := t.TempDir()
	git(t, lib, "init", "-q")
	writeFile(t, lib, "lib.sh", "echo lib\n")
	git(t, lib, "add", "-A")
	git(t, lib, "commit", "-qm", "lib")
	repo, state := newRepo(t)
	writeFile(t, repo, ".gitignore", "node_modules/\n")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-qm", "ignore deps")
	git(t, repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "vendor/lib")
	git(t, repo, "commit", "-qm", "submodule")
	writeFile(t, repo, "node_modules/.bin/jest", "#!/bin/sh\necho PASS\n")
	writeFile(t, repo, ".venv/bin/python", "")
	w, err := NewWorktree(ctx, repo, state, "deps")
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(w.Notes, "\n")
	for _, want := range []string{"node_modules is in your checkout but not in the worktree", `(e.g. test = "npm ci && npm test")`,
		".venv is in your checkout but not in the worktree", `(e.g. test = "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/python -m pytest")`,
		"submodule vendor/lib is not checked out in the worktree"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
}
