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

// TestOpenWorktreeKeepsOneBranch: a board task's worktree is made once,
// reused, and checked out again from its branch when its directory went;
// another run's commit fast-forwards it.
func TestOpenWorktreeKeepsOneBranch(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	write(t, dir, "a.txt", "a\n")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "first")
	head, err := Head(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, ".clean_room", "worktrees", "t-1")
	w, err := OpenWorktree(ctx, dir, path, "cra/t-1")
	if err != nil {
		t.Fatal(err)
	}
	write(t, path, "b.txt", "b\n")
	if ok, err := w.Commit(ctx, "run 1", []string{"."}); err != nil || !ok {
		t.Fatalf("commit: %v %v", ok, err)
	}
	again, err := OpenWorktree(ctx, dir, path, "cra/t-1")
	if err != nil {
		t.Fatal(err)
	}
	if again.Base != head || again.Path != path {
		t.Errorf("reused: base %s path %s, want %s %s", again.Base, again.Path, head, path)
	}
	stat, err := DiffStat(ctx, dir, again.Base, "cra/t-1")
	if err != nil || !strings.Contains(stat, "b.txt") {
		t.Errorf("diff stat %q, %v", stat, err)
	}
	if err := again.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	back, err := OpenWorktree(ctx, dir, path, "cra/t-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(back.Path, "b.txt")); err != nil {
		t.Errorf("the branch's commit is not checked out again: %v", err)
	}
	if b, err := CurrentBranch(ctx, path); err != nil || b != "cra/t-1" {
		t.Errorf("branch %q, %v", b, err)
	}
	// A run branched from the worktree's HEAD is fast-forwarded into it.
	run, err := AddWorktree(ctx, path, filepath.Join(dir, ".clean_room", "worktrees", "t-1.r2"), "cra/t-1.r2")
	if err != nil {
		t.Fatal(err)
	}
	write(t, run.Path, "c.txt", "c\n")
	if _, err := run.Commit(ctx, "run 2", []string{"."}); err != nil {
		t.Fatal(err)
	}
	if err := FastForward(ctx, path, "cra/t-1.r2"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(path, "c.txt")); err != nil {
		t.Errorf("not fast-forwarded: %v", err)
	}
	if _, err := OpenWorktree(ctx, dir, run.Path, "cra/t-1"); err == nil || !strings.Contains(err.Error(), "is not a worktree on branch cra/t-1") {
		t.Errorf("a worktree on another branch: got %v", err)
	}
}

// A patch that no longer applies because the file moved on merges in
// three ways when the changes do not touch; when they do, nothing
// changes.
func TestApplyThreeWay(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	write(t, dir, "f.txt", "a\nb\nc\nd\ne\n")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "first")
	git(t, dir, "checkout", "-qb", "cra/x")
	write(t, dir, "f.txt", "a\nB\nc\nd\ne\n")
	git(t, dir, "commit", "-qam", "the branch's change")
	patch := git(t, dir, "diff", "HEAD~1", "HEAD") + "\n"
	git(t, dir, "checkout", "-q", "-")

	// The user's file gained a first line since: a plain apply fails.
	write(t, dir, "f.txt", "x\na\nb\nc\nd\ne\n")
	git(t, dir, "commit", "-qam", "moved on")
	if err := ApplyCheck(ctx, dir, patch); err == nil {
		t.Fatal("the plain apply would apply; the test needs one that does not")
	}
	if err := ApplyThreeWay(ctx, dir, patch); err != nil {
		t.Fatal(err)
	}
	if got := read(t, dir, "f.txt"); got != "x\na\nB\nc\nd\ne\n" {
		t.Errorf("merged %q", got)
	}

	// The user changed the same line: conflicts, nothing written.
	git(t, dir, "reset", "-q", "--hard")
	write(t, dir, "f.txt", "x\na\nbb\nc\nd\ne\n")
	git(t, dir, "commit", "-qam", "same line")
	if err := ApplyThreeWay(ctx, dir, patch); !errors.Is(err, ErrConflicts) {
		t.Fatalf("got %v, want ErrConflicts", err)
	}
	if got := read(t, dir, "f.txt"); got != "x\na\nbb\nc\nd\ne\n" {
		t.Errorf("a refused merge changed the file: %q", got)
	}
	if st := git(t, dir, "status", "--porcelain"); st != "" {
		t.Errorf("a refused merge left %q", st)
	}
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestDetachedWorktree: a scratch worktree checks out one commit, moves
// to another with nothing left over, and TreeIs says whether its files,
// untracked ones too, are exactly a commit's.
func TestDetachedWorktree(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	write(t, dir, "a.txt", "one\n")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "first")
	first := strings.TrimSpace(git(t, dir, "rev-parse", "HEAD"))
	write(t, dir, "a.txt", "two\n")
	write(t, dir, "b.txt", "new\n")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "second")
	second := strings.TrimSpace(git(t, dir, "rev-parse", "HEAD"))

	wt := filepath.Join(t.TempDir(), "scratch", "wt")
	if err := AddDetachedWorktree(ctx, dir, wt, first); err != nil {
		t.Fatal(err)
	}
	if same, err := TreeIs(ctx, wt, first); err != nil || !same {
		t.Errorf("TreeIs(first) after the checkout: got %v, %v; want true", same, err)
	}
	// The second commit's files, written by hand, are its tree.
	write(t, wt, "a.txt", "two\n")
	write(t, wt, "b.txt", "new\n")
	if same, err := TreeIs(ctx, wt, second); err != nil || !same {
		t.Errorf("TreeIs(second) with its files: got %v, %v; want true", same, err)
	}
	write(t, wt, "c.txt", "stray\n")
	if same, err := TreeIs(ctx, wt, second); err != nil || same {
		t.Errorf("TreeIs(second) with an untracked file more: got %v, %v; want false", same, err)
	}
	if err := CheckoutDetached(ctx, wt, first); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(wt, "c.txt")); !os.IsNotExist(err) {
		t.Errorf("c.txt after the checkout: %v, want it gone", err)
	}
	if same, err := TreeIs(ctx, wt, first); err != nil || !same {
		t.Errorf("TreeIs(first) after moving back: got %v, %v; want true", same, err)
	}
	if _, err := TreeIs(ctx, wt, "no-such-commit"); err == nil {
		t.Error("TreeIs(no such commit): no error")
	}
	if err := RemoveDetachedWorktree(ctx, dir, wt); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Errorf("worktree after removal: %v, want it gone", err)
	}
	if got := git(t, dir, "worktree", "list", "--porcelain"); strings.Contains(got, wt) {
		t.Errorf("git still lists the worktree:\n%s", got)
	}
}

func TestShowFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	write(t, dir, "sub/a.txt", "one\n")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "first")
	got, err := ShowFile(ctx, dir, "HEAD", "sub/a.txt")
	if err != nil || string(got) != "one\n" {
		t.Errorf("ShowFile(sub/a.txt): got %q, %v; want \"one\\n\"", got, err)
	}
	if got, err := ShowFile(ctx, dir, "HEAD", "sub/none.txt"); err != nil || got != nil {
		t.Errorf("ShowFile(a missing file): got %q, %v; want nil, nil", got, err)
	}
}
