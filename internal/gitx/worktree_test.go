package gitx

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAddWorktreeNoCommits(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	_, err := AddWorktree(ctx, dir, filepath.Join(dir, "wt"), "cra/x")
	if !errors.Is(err, ErrNoCommits) {
		t.Fatalf("got %v, want ErrNoCommits", err)
	}
}

func TestWorktreeLifecycle(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	write(t, dir, "sub/a.txt", "one\ntwo\n")
	write(t, dir, "b.txt", "b\n")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "first")
	// An uncommitted change stays in the main tree only; the state
	// directory ignores itself, as config.EnsureStateDir makes it.
	write(t, dir, "b.txt", "b changed\n")
	write(t, dir, ".clean_room/.gitignore", "*\n")

	top, prefix, err := TopLevel(ctx, filepath.Join(dir, "sub"))
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := filepath.EvalSymlinks(dir); top != want && top != dir || prefix != "sub/" {
		t.Errorf("TopLevel: got %q %q, want %q sub/", top, prefix, dir)
	}

	path := filepath.Join(dir, ".clean_room", "worktrees", "t1")
	w, err := AddWorktree(ctx, dir, path, "cra/t1")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(path, "b.txt")); string(got) != "b\n" {
		t.Errorf("worktree b.txt: got %q, want the committed content", got)
	}
	if _, err := AddWorktree(ctx, dir, path+"-2", "cra/t1"); !errors.Is(err, ErrBranchExists) {
		t.Errorf("second add on the branch: got %v, want ErrBranchExists", err)
	}

	write(t, path, "sub/a.txt", "one\n2\n")
	write(t, path, "sub/new.txt", "new\n")
	write(t, path, "cache.out", "noise\n") // not one of the agent's paths
	diff, err := w.Diff(ctx, []string{"sub/a.txt", "sub/new.txt"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"diff --git a/sub/a.txt b/sub/a.txt", "-two\n+2\n", "new file mode", "+++ b/sub/new.txt"} {
		if !strings.Contains(diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, diff)
		}
	}
	if strings.Contains(diff, "cache.out") {
		t.Errorf("diff has a path the agent did not edit:\n%s", diff)
	}

	// The user's tree is untouched by the worktree, and the patch applies
	// there once checked; a second application does not.
	st, err := Status(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{" M b.txt"}, st); diff != "" {
		t.Errorf("main tree status (-want +got):\n%s", diff)
	}
	if err := ApplyCheck(ctx, dir, diff); err != nil {
		t.Fatal(err)
	}
	if err := Apply(ctx, dir, diff); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "sub/a.txt")); string(got) != "one\n2\n" {
		t.Errorf("applied a.txt: got %q", got)
	}
	if err := ApplyCheck(ctx, dir, diff); err == nil || !strings.Contains(err.Error(), "git apply") {
		t.Errorf("re-applying: got %v, want git's refusal", err)
	}

	ok, err := w.Commit(ctx, "cra: the change", []string{"sub/a.txt", "sub/new.txt"})
	if err != nil || !ok {
		t.Fatalf("Commit: got %v, %v", ok, err)
	}
	if ok, err := w.Commit(ctx, "again", []string{"sub/a.txt"}); err != nil || ok {
		t.Errorf("Commit with nothing new: got %v, %v, want false", ok, err)
	}
	if got := git(t, dir, "log", "-1", "--format=%an %s", "cra/t1"); got != "cra cra: the change" {
		t.Errorf("branch head: got %q", got)
	}
	if err := w.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("worktree directory still there: %v", err)
	}
	if ok, _ := BranchExists(ctx, dir, "cra/t1"); !ok {
		t.Error("the branch went with the worktree")
	}
	if err := DeleteBranch(ctx, dir, "cra/t1"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := BranchExists(ctx, dir, "cra/t1"); ok {
		t.Error("DeleteBranch left the branch")
	}
}
