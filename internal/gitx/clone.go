package gitx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Clone is a task's working copy: a clone of the repository that shares
// its objects (git clone --shared), on the task's branch. Unlike a git
// worktree, whose git directory lies inside the repository's .git, a
// clone's git writes stay inside it, so a sandboxed agent can commit
// there while the repository itself stays out of its reach; FetchBack
// brings the branch into the repository afterwards (DESIGN.md, "Trust").
type Clone struct {
	// Repo is the repository's top-level directory.
	Repo string
	// Path is the clone's directory.
	Path string
	// Branch is the branch checked out in it, and the one FetchBack
	// updates in Repo.
	Branch string
	// Base is the commit the branch started from.
	Base string
	// Confine, when set, wraps every git command cra runs in the clone:
	// an agent may have written anything there (hooks, config, a .git
	// that is a symbolic link to the repository's), so those commands
	// run with its confinement.
	Confine func(cmd *exec.Cmd) error

	// head is the branch's commit as CommitAll's confined shell read it
	// last, for FetchBack, which then needs no launch of its own; ""
	// when CommitAll has not run or found no branch.
	head string
}

// cloneGit is the environment-independent part of every git command in a
// clone: no hooks, no fsmonitor, no pager, whatever the clone's config
// says.
var cloneGit = []string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.quotePath=false", "-c", "commit.gpgsign=false"}

func (c *Clone) git(ctx context.Context, stdin string, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append(append([]string{"-C", c.Path}, cloneGit...), args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if c.Confine != nil {
		if err := c.Confine(cmd); err != nil {
			return nil, err
		}
	}
	out, err := cmd.Output()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("git %s in %s: %s", args[0], c.Path, msg)
	}
	return out, nil
}

// OpenClone returns the working copy of branch at path, made when it is
// missing: a shared clone of repo checked out on branch, started from
// repo's branch when it exists, else from repo's HEAD. A git worktree
// left at path by an older cra is removed first (its work is on the
// branch: every run commits). confine wraps the git commands run in the
// clone once it exists (see Clone.Confine); nil runs them as they are.
func OpenClone(ctx context.Context, repo, path, branch string, confine func(*exec.Cmd) error) (*Clone, error) {
	c := &Clone{Repo: repo, Path: path, Branch: branch, Confine: confine}
	if fi, err := os.Lstat(filepath.Join(path, ".git")); err == nil && fi.Mode().IsRegular() {
		// An older cra's worktree: its git directory is inside repo's.
		if _, err := run(ctx, repo, "worktree", "remove", "--force", path); err != nil {
			return nil, fmt.Errorf("replace the worktree %s with a clone: %w", path, err)
		}
	}
	exists, err := BranchExists(ctx, repo, branch)
	if err != nil {
		return nil, err
	}
	head, err := run(ctx, repo, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return nil, fmt.Errorf("the repository has no commit to start the task's branch from: %w", err)
	}
	c.Base = strings.TrimSpace(string(head))
	if exists {
		if c.Base, err = MergeBase(ctx, repo, "HEAD", branch); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(path); err == nil {
		out, err := c.git(ctx, "", nil, "rev-parse", "--abbrev-ref", "HEAD")
		if err != nil {
			return nil, fmt.Errorf("working copy %s is not usable (remove it; its branch %s keeps the committed work): %w", path, branch, err)
		}
		if got := strings.TrimSpace(string(out)); got != branch {
			return nil, fmt.Errorf("working copy %s is on %q, not %s: remove it (its branch keeps the committed work)", path, got, branch)
		}
		// Only cra writes in its working copies' git directory, one run of
		// the task at a time, and none runs while the copy is opened for
		// the next: a lock file there is a killed git's (a host lost while
		// it committed), which would fail every later commit.
		for _, lock := range []string{"index.lock", "HEAD.lock", filepath.Join("refs", "heads", filepath.FromSlash(branch)+".lock")} {
			if err := os.Remove(filepath.Join(path, ".git", lock)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("working copy %s: remove the stale %s: %w", path, lock, err)
			}
		}
		return c, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("make the working copy's parent: %w", err)
	}
	// The copy is made beside path and moved there once checked out: a
	// process killed while it clones or checks out (a lost host, kill -9)
	// leaves no half-made copy at path, which every later run of the task
	// would refuse as not usable or on the wrong branch. What it leaves
	// is a hidden .NAME.partial-* directory, used by nothing.
	tmp, err := os.MkdirTemp(filepath.Dir(path), "."+filepath.Base(path)+".partial-")
	if err != nil {
		return nil, fmt.Errorf("make the working copy %s: %w", path, err)
	}
	defer os.RemoveAll(tmp) // gone by the rename, unless it failed
	if _, err := run(ctx, repo, "clone", "-q", "--shared", "--no-checkout", repo, tmp); err != nil {
		return nil, fmt.Errorf("make the working copy %s: %w", path, err)
	}
	start := c.Base
	if exists {
		start = "origin/" + branch
	}
	// Unconfined: nothing but cra has written in the new clone yet.
	fresh := &Clone{Path: tmp}
	if _, err := fresh.git(ctx, "", nil, "checkout", "-q", "-B", branch, start); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("make the working copy %s: %w", path, err)
	}
	return c, nil
}

// CommitAll commits every change in the clone, untracked files included,
// as cra; false when there was nothing to commit. Its git commands (add,
// the check that something is staged, commit, and the read of the
// branch's commit FetchBack needs) run in one shell (commitScript), so
// that a confined clone pays for one launch of the confinement, not
// four; each still runs with the clone's settings (cloneGit), and an
// error names the one that failed and its stderr.
func (c *Clone) CommitAll(ctx context.Context, message string) (bool, error) {
	c.head = ""
	gitPath, err := exec.LookPath("git")
	if err != nil {
		return false, fmt.Errorf("commit in %s: %w", c.Path, err)
	}
	args := append([]string{"-c", commitScript, "sh", gitPath, "refs/heads/" + c.Branch + "^{commit}", "-C", c.Path}, cloneGit...)
	cmd := exec.CommandContext(ctx, "sh", args...)
	cmd.Stdin = strings.NewReader(message)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=cra", "GIT_AUTHOR_EMAIL=cra@localhost", "GIT_COMMITTER_NAME=cra", "GIT_COMMITTER_EMAIL=cra@localhost")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if c.Confine != nil {
		if err := c.Confine(cmd); err != nil {
			return false, err
		}
	}
	err = cmd.Run()
	var exit *exec.ExitError
	nothing := errors.As(err, &exit) && exit.ExitCode() == commitNothing
	if head := strings.TrimSpace(stdout.String()); (err == nil || nothing) && isHash(head) {
		c.head = head
	}
	if nothing {
		return false, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		step := "commit"
		if errors.As(err, &exit) {
			switch exit.ExitCode() {
			case commitAddFailed:
				step = "add"
			case commitDiffFailed:
				step = "diff"
			}
		}
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return false, fmt.Errorf("git %s in %s: %s", step, c.Path, msg)
	}
	return true, nil
}

// commitScript is CommitAll's shell: $1 is git's path, $2 the branch's
// commit to print (refs/heads/BRANCH^{commit}), the rest git's leading
// arguments (-C and the clone's settings). It stages everything, runs
// git commit with the message on its standard input when something is
// staged (its exit status, when it fails, is the script's), prints the
// branch's commit (nothing when the branch is gone) and exits
// commitNothing when nothing was staged.
const commitScript = `git=$1 head=$2; shift 2
"$git" "$@" add -A . </dev/null >/dev/null || exit 10
"$git" "$@" diff --cached --quiet </dev/null >/dev/null
case $? in
0) s=3 ;;
1) "$git" "$@" commit -q --no-verify -F - >/dev/null || exit; s=0 ;;
*) exit 11 ;;
esac
"$git" "$@" rev-parse -q --verify "$head" </dev/null 2>/dev/null
exit $s`

// commitScript's exit statuses of its own (git's are 1 and 128).
const (
	commitNothing    = 3
	commitAddFailed  = 10
	commitDiffFailed = 11
)

// FetchBack sets the repository's branch to the clone's, the only ref a
// run can move. A clone whose branch is gone (the agent deleted it, or
// checked out another) is an error and moves nothing. The clone's
// commit is the one CommitAll read just before, when it did, else read
// now (confined, as every git command in the clone).
func (c *Clone) FetchBack(ctx context.Context) error {
	sha := c.head
	c.head = ""
	if sha == "" {
		out, err := c.git(ctx, "", nil, "rev-parse", "--verify", "refs/heads/"+c.Branch+"^{commit}")
		if err != nil {
			return fmt.Errorf("the working copy has no branch %s: %w", c.Branch, err)
		}
		sha = strings.TrimSpace(string(out))
	}
	if _, err := run(ctx, c.Repo, "-c", "core.hooksPath=/dev/null", "fetch", "-q", "--no-tags", "--no-write-fetch-head", c.Path,
		"+refs/heads/"+c.Branch+":refs/heads/"+c.Branch); err != nil {
		return fmt.Errorf("bring %s back from the working copy: %w", c.Branch, err)
	}
	got, err := run(ctx, c.Repo, "rev-parse", "refs/heads/"+c.Branch)
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(got)) != sha {
		return errors.New("the branch fetched back is not the working copy's")
	}
	return nil
}

// isHash reports whether s is a full commit hash (SHA-1 or SHA-256).
func isHash(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return true
}
