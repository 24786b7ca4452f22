package gitx

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRestoreAndRemovePaths: in a scratch checkout of a branch, files the
// branch changed, deleted or replaced by a link out of the tree are put
// back as the base holds them, and files it added are removed; nothing
// outside the checkout is written.
func TestRestoreAndRemovePaths(t *testing.T) {
	ctx := context.Background()
	repo, outside := t.TempDir(), t.TempDir()
	write(t, repo, "check.sh", "exit 1\n")
	write(t, repo, "tests/test_a.py", "assert False\n")
	write(t, repo, "odd [name]*.py", "x = 1\n")
	git(t, repo, "init", "-q")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-qm", "base")
	base := git(t, repo, "rev-parse", "HEAD")
	git(t, repo, "checkout", "-qb", "cra/t")
	write(t, repo, "check.sh", "exit 0\n")
	write(t, repo, "odd [name]*.py", "x = 2\n")
	if err := os.RemoveAll(filepath.Join(repo, "tests")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(repo, "tests")); err != nil {
		t.Fatal(err)
	}
	write(t, repo, "conftest.py", "# passes everything\n")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-qm", "game it")
	git(t, repo, "checkout", "-q", base)

	branch, err := RevParse(ctx, repo, "refs/heads/cra/t")
	if err != nil {
		t.Fatal(err)
	}
	co := filepath.Join(t.TempDir(), "co")
	if err := AddDetachedWorktree(ctx, repo, co, branch); err != nil {
		t.Fatal(err)
	}
	defer RemoveDetachedWorktree(ctx, repo, co)
	if err := RestorePaths(ctx, co, base, []string{"check.sh", "tests/test_a.py", "odd [name]*.py"}); err != nil {
		t.Fatal(err)
	}
	if err := RemovePaths(ctx, co, []string{"conftest.py", "not/there.py"}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"check.sh": "exit 1\n", "tests/test_a.py": "assert False\n", "odd [name]*.py": "x = 1\n"} {
		got, err := os.ReadFile(filepath.Join(co, name))
		if err != nil || string(got) != want {
			t.Errorf("%s: got %q %v, want %q", name, got, err, want)
		}
	}
	if fi, err := os.Lstat(filepath.Join(co, "tests")); err != nil || !fi.IsDir() {
		t.Errorf("tests is not a directory again: %v %v", fi, err)
	}
	if _, err := os.Lstat(filepath.Join(co, "conftest.py")); !os.IsNotExist(err) {
		t.Errorf("conftest.py is still there: %v", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("the restore wrote through the link: %v", entries)
	}

	blobs, err := TreeFiles(ctx, repo, branch)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range blobs {
		got = append(got, b.Mode+" "+b.Path)
	}
	if want := "100644 check.sh\n100644 conftest.py\n100644 odd [name]*.py\n120000 tests"; strings.Join(got, "\n") != want {
		t.Errorf("TreeFiles:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
	}
	if _, err := RevParse(ctx, repo, "refs/heads/cra/none"); err == nil {
		t.Error("RevParse of a missing branch: no error")
	}
}
