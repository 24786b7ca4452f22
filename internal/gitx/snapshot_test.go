package gitx

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/gitx/gittest"
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

// TestReadFilesLeavesLargeBlobsUnread: a file over the limit is never
// read into memory (a branch anyone can push to may hold a blob of
// gigabytes): it comes back as a large blob with its size, the others as
// their content, and CommitFiles keeps the large one as it is.
func TestReadFilesLeavesLargeBlobsUnread(t *testing.T) {
	ctx := context.Background()
	repo := gittest.Init(t)
	gittest.Commit(t, repo, "docs", map[string]string{"docs/k/a.md": "# A\n", "docs/k/run.sh": "echo\n", "other.md": "out of the prefix\n"})
	const size = 64 << 20
	big := gittest.ZeroBlob(t, repo, size)
	git(t, repo, "update-index", "--add", "--cacheinfo", "100644,"+big+",docs/k/sub/big.md")
	git(t, repo, "commit", "-qm", "a large blob")
	head := git(t, repo, "rev-parse", "HEAD")

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	files, large, err := ReadFiles(ctx, repo, head, "docs/k", 1<<20)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > size/4 {
		t.Errorf("ReadFiles allocated %d bytes: the %d-byte blob over the limit was read", got, size)
	}
	if len(files) != 2 || string(files["a.md"]) != "# A\n" || string(files["run.sh"]) != "echo\n" {
		t.Errorf("files = %q, want a.md and run.sh", slices.Sorted(maps.Keys(files)))
	}
	want := []Blob{{Path: "sub/big.md", Mode: "100644", Object: big, Size: size}}
	if diff := cmp.Diff(want, large); diff != "" {
		t.Errorf("large (-want +got):\n%s", diff)
	}

	_, tree, err := CommitFiles(ctx, repo, map[string][]byte{"a.md": []byte("# A, again\n")}, large, "docs/k", nil, "kept\n")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := git(t, repo, "ls-tree", "-r", tree), "100644 blob "; !strings.Contains(got, want+big+"\tdocs/k/sub/big.md") || strings.Count(got, "\n") != 1 {
		t.Errorf("the commit's tree:\n%s\nwant a.md and the large blob kept", got)
	}
	if _, _, err := CommitFiles(ctx, repo, map[string][]byte{"sub/big.md": nil}, large, "docs/k", nil, "both\n"); err == nil {
		t.Error("CommitFiles took a kept blob and a file at one path")
	}
}
