package gitx

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Branches lists the local branches whose names start with prefix (e.g.
// "cra/"), sorted by name.
func Branches(ctx context.Context, repo, prefix string) ([]string, error) {
	out, err := run(ctx, repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/"+prefix)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" {
			names = append(names, l)
		}
	}
	return names, nil
}

// Worktrees lists the linked worktrees of repo by path, with the branch
// each has checked out ("" when detached); the main work tree is left out.
func Worktrees(ctx context.Context, repo string) (map[string]string, error) {
	out, err := run(ctx, repo, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, err
	}
	trees := map[string]string{}
	first := true
	var path string
	for _, l := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(l, "worktree "):
			path = strings.TrimPrefix(l, "worktree ")
			if first {
				first, path = false, "" // the main work tree
				continue
			}
			trees[path] = ""
		case strings.HasPrefix(l, "branch refs/heads/") && path != "":
			trees[path] = strings.TrimPrefix(l, "branch refs/heads/")
		}
	}
	return trees, nil
}

// Unmerged counts the commits of rev that HEAD of repo does not contain.
func Unmerged(ctx context.Context, repo, rev string) (int, error) {
	out, err := run(ctx, repo, "rev-list", "--count", "HEAD.."+rev)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(out)))
}

// CommitTime is the committer time of rev.
func CommitTime(ctx context.Context, repo, rev string) (time.Time, error) {
	out, err := run(ctx, repo, "log", "-1", "--format=%ct", rev)
	if err != nil {
		return time.Time{}, err
	}
	s, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(s, 0), nil
}

// RemoveWorktree removes the worktree at path and git's record of it,
// with what is in it; the branch stays.
func RemoveWorktree(ctx context.Context, repo, path string) error {
	_, err := run(ctx, repo, "worktree", "remove", "--force", path)
	return err
}

// PruneWorktrees forgets worktrees whose directories are gone.
func PruneWorktrees(ctx context.Context, repo string) error {
	_, err := run(ctx, repo, "worktree", "prune")
	return err
}

// noHooks, given with -c, keeps the repository's hooks from running on a
// scratch checkout: bootstrapping checks out hundreds of commits.
const noHooks = "core.hooksPath=/dev/null"

// AddDetachedWorktree checks commit out, detached, in a new worktree at
// path: a scratch copy of the repository at that commit, which leaves the
// main work tree, its index and its branches alone. A leftover worktree
// at path (an interrupted run) is removed first.
func AddDetachedWorktree(ctx context.Context, repo, path, commit string) error {
	if err := RemoveDetachedWorktree(ctx, repo, path); err != nil {
		return fmt.Errorf("remove leftover worktree: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("git worktree add: %w", err)
	}
	_, err := run(ctx, repo, "-c", noHooks, "worktree", "add", "-q", "-f", "--detach", path, commit)
	return err
}

// RemoveDetachedWorktree removes a scratch worktree AddDetachedWorktree
// made at path, its directory and git's record of it, whatever state it
// is in: one a killed git left locked "initializing" (git worktree add
// locks the worktree until its checkout ends) or whose directory is gone
// is removed too. Nothing at path is not an error. The repository's
// other worktrees are left alone: no prune, which would drop the record
// of one whose directory is away (on a drive not mounted).
func RemoveDetachedWorktree(ctx context.Context, repo, path string) error {
	// Twice forced, remove takes a locked worktree, and one whose
	// directory is gone; it fails when path is no worktree, which leaves
	// the directory alone to remove.
	run(ctx, repo, "worktree", "remove", "--force", "--force", path)
	return os.RemoveAll(path)
}

// CheckoutDetached moves the worktree at dir to commit, detached, and
// drops whatever is not in it (untracked files too): the tree becomes
// exactly the commit's. Submodules are left alone whatever the user's
// submodule.recurse says: their git directories are shared with the main
// work tree, which a scratch checkout must not move (and git fails to
// check them out in a worktree that never initialised them).
func CheckoutDetached(ctx context.Context, dir, commit string) error {
	if _, err := run(ctx, dir, "-c", noHooks, "checkout", "-q", "--force", "--no-recurse-submodules", "--detach", commit); err != nil {
		return err
	}
	_, err := run(ctx, dir, "clean", "-fdqx")
	return err
}

// TreeIs stages everything in the worktree at dir, untracked files too,
// and reports whether its index then holds exactly commit's tree.
func TreeIs(ctx context.Context, dir, commit string) (bool, error) {
	if _, err := run(ctx, dir, "add", "-A"); err != nil {
		return false, err
	}
	err := exec.CommandContext(ctx, "git", "-C", dir, "diff", "--cached", "--quiet", commit, "--").Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &ee) && ee.ExitCode() == 1 && ctx.Err() == nil:
		return false, nil
	}
	return false, fmt.Errorf("git diff: %w", err)
}

// ShowFile returns the content of path (relative to the top level) at
// commit, nil when the commit has no such file.
func ShowFile(ctx context.Context, dir, commit, path string) ([]byte, error) {
	out, err := run(ctx, dir, "cat-file", "blob", commit+":"+path)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if _, lerr := run(ctx, dir, "cat-file", "-e", commit+":"+path); lerr != nil {
			return nil, nil
		}
		return nil, err
	}
	return out, nil
}
