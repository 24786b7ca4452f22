package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSymlinkedRepoPath: a repository reached through a symbolic link (a
// linked home or workspace directory, macOS's /tmp) is the same index:
// a query through the link finds it, and an index through it changes
// nothing.
func TestSymlinkedRepoPath(t *testing.T) {
	ctx := context.Background()
	real := t.TempDir()
	if err := os.WriteFile(filepath.Join(real, "a.py"), []byte("def alpha():\n    return 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	d, _, _ := testDeps()
	if err := indexRun(ctx, d, &indexOptions{repo: real}); err != nil {
		t.Fatal(err)
	}
	d, out, _ := testDeps()
	if err := queryFilesRun(ctx, d, &queryFilesOptions{queryOptions: queryOptions{repo: link}}); err != nil || !strings.Contains(out.String(), "a.py") {
		t.Errorf("query through the link: %v\n%s", err, out)
	}
	d, out, _ = testDeps()
	if err := indexRun(ctx, d, &indexOptions{repo: link}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "0 added") || !strings.Contains(out.String(), "1 unchanged") {
		t.Errorf("index through the link: %s; want nothing added", out)
	}
}
