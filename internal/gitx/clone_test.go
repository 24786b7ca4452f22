package gitx

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// envOpenCloneHelper makes TestOpenCloneHelper, run by
// TestOpenCloneSurvivesKill as a child, make a working copy:
// "REPO\nPATH\nBRANCH".
const envOpenCloneHelper = "GITX_OPENCLONE_HELPER"

// TestOpenCloneHelper is the child of TestOpenCloneSurvivesKill; it does
// nothing in a test run of its own.
func TestOpenCloneHelper(t *testing.T) {
	args := os.Getenv(envOpenCloneHelper)
	if args == "" {
		return
	}
	f := strings.Split(args, "\n")
	os.Stdout.WriteString("ready\n") // the parent's clock starts
	if _, err := OpenClone(context.Background(), f[0], f[1], f[2], nil); err != nil {
		os.Exit(3)
	}
	os.Exit(0)
}

// TestOpenCloneSurvivesKill: a process killed with SIGKILL at any moment
// while it makes a task's working copy (a host lost mid-run) leaves
// nothing the next OpenClone refuses: it makes the copy, on the task's
// branch. A copy cloned at its place and killed before its checkout was
// on the repository's default branch, and one killed mid-clone not a
// repository at all; every later run of the task on that host failed.
func TestOpenCloneSurvivesKill(t *testing.T) {
	ctx := context.Background()
	repo := t.TempDir()
	git(t, repo, "init", "-q", "-b", "main")
	for i := range 20 {
		write(t, repo, filepath.Join("src", string(rune('a'+i%26))+strings.Repeat("x", i)+".txt"), strings.Repeat("line\n", 200))
	}
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-qm", "first")
	path := filepath.Join(repo, ".clean_room", "worktrees", "t-1")
	const branch = "cra/t-1"

	child := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestOpenCloneHelper$")
		cmd.Env = append(os.Environ(), envOpenCloneHelper+"="+repo+"\n"+path+"\n"+branch)
		return cmd
	}
	// How long a make takes here: the kills fall across it.
	start := time.Now()
	if _, err := OpenClone(ctx, repo, path, branch, nil); err != nil {
		t.Fatal(err)
	}
	whole := time.Since(start)
	const kills = 12
	for i := range kills {
		if err := os.RemoveAll(path); err != nil {
			t.Fatal(err)
		}
		cmd := child()
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
			t.Fatalf("the helper: %v", err)
		}
		at := whole * time.Duration(i) / kills
		time.Sleep(at)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()

		c, err := OpenClone(ctx, repo, path, branch, nil)
		if err != nil {
			t.Fatalf("killed %v into a make of about %v: the next OpenClone: %v", at, whole, err)
		}
		if got := strings.TrimSpace(c.mustGit(t, "rev-parse", "--abbrev-ref", "HEAD")); got != branch {
			t.Fatalf("killed %v into a make of about %v: the copy is on %q, want %s", at, whole, got, branch)
		}
	}
}

func (c *Clone) mustGit(t *testing.T, args ...string) string {
	t.Helper()
	out, err := c.git(context.Background(), "", nil, args...)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestOpenCloneClearsStaleLocks: a git killed while it committed in a
// working copy (its host lost) leaves index.lock and its kin behind; the
// next run's OpenClone removes them, and its commit works.
func TestOpenCloneClearsStaleLocks(t *testing.T) {
	ctx := context.Background()
	repo := repoWith(t, "a.txt")
	path := filepath.Join(repo, ".clean_room", "worktrees", "t-1")
	if _, err := OpenClone(ctx, repo, path, "cra/t-1", nil); err != nil {
		t.Fatal(err)
	}
	for _, lock := range []string{"index.lock", "HEAD.lock", "refs/heads/cra/t-1.lock"} {
		write(t, filepath.Join(path, ".git"), lock, "")
	}
	c, err := OpenClone(ctx, repo, path, "cra/t-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	write(t, path, "b.txt", "b\n")
	if ok, err := c.CommitAll(ctx, "run 2\n"); err != nil || !ok {
		t.Fatalf("commit after stale locks: %v, %v; want a commit", ok, err)
	}
}

// TestCommitAll: nothing changed is no commit; a change, an untracked
// file and a deletion are one commit by cra with the message, made in
// one confined launch; a step that fails is named with git's stderr.
func TestCommitAll(t *testing.T) {
	ctx := context.Background()
	repo := repoWith(t, "a.txt", "gone.txt")
	c, launches := countedClone(t, repo)
	if ok, err := c.CommitAll(ctx, "nothing\n"); err != nil || ok {
		t.Fatalf("a clean copy: %v, %v; want no commit", ok, err)
	}
	if *launches != 1 {
		t.Errorf("a clean copy's commit was %d confined launches, want 1", *launches)
	}
	write(t, c.Path, "a.txt", "a changed\n")
	write(t, c.Path, "new/b.txt", "b\n")
	if err := os.Remove(filepath.Join(c.Path, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	*launches = 0
	if ok, err := c.CommitAll(ctx, "run 1\n\nwhat it did\n"); err != nil || !ok {
		t.Fatalf("a changed copy: %v, %v; want a commit", ok, err)
	}
	if *launches != 1 {
		t.Errorf("a commit was %d confined launches, want 1", *launches)
	}
	if got := c.mustGit(t, "log", "-1", "--format=%an <%ae>|%cn|%B"); got != "cra <cra@localhost>|cra|run 1\n\nwhat it did\n\n" {
		t.Errorf("the commit: got %q", got)
	}
	if got := c.mustGit(t, "show", "--name-status", "--format=", "HEAD"); got != "M\ta.txt\nD\tgone.txt\nA\tnew/b.txt\n" {
		t.Errorf("the commit's files: got %q", got)
	}
	if got := c.mustGit(t, "status", "--porcelain"); got != "" {
		t.Errorf("left uncommitted: %q", got)
	}
	if ok, err := c.CommitAll(ctx, "again\n"); err != nil || ok {
		t.Errorf("nothing new: %v, %v; want no commit", ok, err)
	}

	// A git that holds the index: the add fails, named, with git's words.
	write(t, c.Path, "c.txt", "c\n")
	write(t, filepath.Join(c.Path, ".git"), "index.lock", "")
	if _, err := c.CommitAll(ctx, "locked\n"); err == nil || !strings.Contains(err.Error(), "git add in "+c.Path+": ") || !strings.Contains(err.Error(), "index.lock") {
		t.Errorf("a locked index: got %v, want git add's error naming index.lock", err)
	}
	os.Remove(filepath.Join(c.Path, ".git", "index.lock"))
	// An empty message: git commit refuses it, and the error says so.
	if _, err := c.CommitAll(ctx, "\n"); err == nil || !strings.Contains(err.Error(), "git commit in "+c.Path+": ") || !strings.Contains(err.Error(), "empty commit message") {
		t.Errorf("an empty message: got %v, want git commit's error", err)
	}
	// A confinement that refuses is the error, and nothing runs.
	refuse := errors.New("no sandbox here")
	c.Confine = func(*exec.Cmd) error { return refuse }
	if _, err := c.CommitAll(ctx, "refused\n"); !errors.Is(err, refuse) {
		t.Errorf("a refused confinement: got %v", err)
	}
}

// TestFetchBack: the branch comes back into the repository at the
// clone's commit; after CommitAll, whose confined shell read that commit,
// with no confined launch of its own, and without CommitAll, with one. A
// clone whose branch is gone (the agent deleted it and committed
// elsewhere) moves nothing and says so, CommitAll before or not.
func TestFetchBack(t *testing.T) {
	ctx := context.Background()
	repo := repoWith(t, "a.txt")
	c, launches := countedClone(t, repo)
	branch := func() string {
		t.Helper()
		out, err := exec.Command("git", "-C", repo, "rev-parse", "refs/heads/cra/t-1").Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}

	write(t, c.Path, "b.txt", "b\n")
	if ok, err := c.CommitAll(ctx, "run 1\n"); err != nil || !ok {
		t.Fatalf("commit: %v, %v", ok, err)
	}
	*launches = 0
	if err := c.FetchBack(ctx); err != nil {
		t.Fatal(err)
	}
	if *launches != 0 {
		t.Errorf("FetchBack after CommitAll: %d confined launches, want 0", *launches)
	}
	if got, want := branch(), strings.TrimSpace(c.mustGit(t, "rev-parse", "HEAD")); got != want {
		t.Errorf("after a commit: the repository's branch is at %s, want the clone's %s", got, want)
	}

	// Without CommitAll (cra's own solve commits itself), and with the
	// commit CommitAll read already used: FetchBack reads it, confined.
	write(t, c.Path, "c.txt", "c\n")
	c.mustGit(t, "add", "-A")
	c.mustGit(t, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "by the agent")
	*launches = 0
	if err := c.FetchBack(ctx); err != nil {
		t.Fatal(err)
	}
	if *launches != 1 {
		t.Errorf("FetchBack alone: %d confined launches, want 1", *launches)
	}
	if got, want := branch(), strings.TrimSpace(c.mustGit(t, "rev-parse", "HEAD")); got != want {
		t.Errorf("without CommitAll: the repository's branch is at %s, want the clone's %s", got, want)
	}

	// The agent leaves the branch for another and deletes it.
	before := branch()
	c.mustGit(t, "checkout", "-q", "-b", "elsewhere")
	c.mustGit(t, "branch", "-D", "cra/t-1")
	write(t, c.Path, "d.txt", "d\n")
	for _, commit := range []bool{true, false} {
		if commit {
			if ok, err := c.CommitAll(ctx, "run 2\n"); err != nil || !ok {
				t.Fatalf("commit on another branch: %v, %v", ok, err)
			}
		}
		if err := c.FetchBack(ctx); err == nil || !strings.Contains(err.Error(), "the working copy has no branch cra/t-1") {
			t.Errorf("a deleted branch (CommitAll before: %v): got %v, want the error naming it", commit, err)
		}
		if got := branch(); got != before {
			t.Errorf("a deleted branch (CommitAll before: %v): the repository's branch moved to %s", commit, got)
		}
	}
}

// repoWith is a new repository on main whose one commit adds files,
// each holding its own name's first letter and a newline ("a.txt": "a\n").
func repoWith(t *testing.T, files ...string) string {
	t.Helper()
	repo := t.TempDir()
	git(t, repo, "init", "-q", "-b", "main")
	for _, f := range files {
		write(t, repo, f, strings.TrimSuffix(f, filepath.Ext(f))+"\n")
	}
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-qm", "first")
	return repo
}

// countedClone opens task t-1's clone of repo with a confinement that
// only counts its launches.
func countedClone(t *testing.T, repo string) (*Clone, *int) {
	t.Helper()
	launches := new(int)
	c, err := OpenClone(context.Background(), repo, filepath.Join(t.TempDir(), "t-1"), "cra/t-1", func(*exec.Cmd) error { *launches++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	return c, launches
}
