package gitx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// ErrNoCommits is returned by AddWorktree in a repository whose HEAD has
// no commit yet: a worktree starts from a commit.
var ErrNoCommits = errors.New("the repository has no commits")

// ErrBranchExists is returned by AddWorktree when the branch it would
// create is already there; the caller picks another name.
var ErrBranchExists = errors.New("branch already exists")

// Worktree is a linked work tree on a branch of its own (seed 001 §17):
// the place where an agent edits, so the user's work tree is never
// touched.
type Worktree struct {
	// Repo is the directory the worktree was made from (any directory of
	// the main work tree).
	Repo string `json:"repo"`
	// Path is the worktree's top-level directory.
	Path string `json:"path"`
	// Branch is the branch checked out in it.
	Branch string `json:"branch"`
	// Base is the commit the branch started from.
	Base string `json:"base"`
}

// TopLevel returns the top-level directory of the work tree holding dir,
// and dir's path below it with forward slashes ("" at the top, else
// ending in "/").
func TopLevel(ctx context.Context, dir string) (top, prefix string, err error) {
	out, err := run(ctx, dir, "rev-parse", "--show-toplevel", "--show-prefix")
	if err != nil {
		return "", "", err
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	top = filepath.FromSlash(lines[0])
	if len(lines) > 1 {
		prefix = lines[1]
	}
	return top, prefix, nil
}

// BranchExists reports whether the local branch exists.
func BranchExists(ctx context.Context, dir, branch string) (bool, error) {
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "--verify", "-q", "refs/heads/"+branch)
	err := cmd.Run()
	if err == nil {
		return true, nil
	}
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		return false, nil
	}
	return false, fmt.Errorf("git rev-parse: %w", err)
}

// AddWorktree creates branch at HEAD and checks it out in a new worktree
// at path (git worktree add -b branch path HEAD). Uncommitted changes of
// the main work tree are not in it: it starts from HEAD. A repository
// without commits is ErrNoCommits; an existing branch is ErrBranchExists.
// Any other failure carries git's message and what was attempted.
func AddWorktree(ctx context.Context, repo, path, branch string) (*Worktree, error) {
	head, err := Head(ctx, repo)
	if err != nil {
		return nil, err
	}
	if head == "" {
		return nil, ErrNoCommits
	}
	exists, err := BranchExists(ctx, repo, branch)
	if err != nil {
		return nil, err
	}
	if exists {
		return nil, fmt.Errorf("%s: %w", branch, ErrBranchExists)
	}
	// Entries of worktrees whose directory was deleted by hand would
	// block the path; pruning them is what git itself advises.
	if _, err := run(ctx, repo, "worktree", "prune"); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("git worktree add: %w", err)
	}
	if _, err := run(ctx, repo, "worktree", "add", "-q", "-b", branch, path, head); err != nil {
		return nil, fmt.Errorf("%w (making branch %s at %.12s in %s)", err, branch, head, path)
	}
	return &Worktree{Repo: repo, Path: path, Branch: branch, Base: head}, nil
}

// Ignored reports whether git ignores path (relative to dir, in a work
// tree): a file not tracked that .gitignore, .git/info/exclude or the
// user's excludes file matches, which 'git add' refuses. A tracked file
// is never ignored.
func Ignored(ctx context.Context, dir, path string) (bool, error) {
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "check-ignore", "-q", "--", path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		return false, nil
	case ctx.Err() != nil:
		return false, ctx.Err()
	}
	return false, fmt.Errorf("git check-ignore %s: %s", path, strings.TrimSpace(stderr.String()+" "+err.Error()))
}

// dependencyDirs are the directories of installed dependencies that
// projects keep out of git and their tests need.
var dependencyDirs = []string{"node_modules", ".venv", "venv"}

// Missing says what a worktree at wt lacks that the user's checkout at
// userTop has and validation may need, one note each: git checks out
// neither ignored files (node_modules, a virtualenv; at the top level or
// in prefix, the directory cra works in) nor submodules. Nothing is
// copied or linked: an agent's commit must not take a link along, and the
// notes name the fix.
func Missing(ctx context.Context, userTop, wt, prefix string) []string {
	var notes []string
	dirs := []string{""}
	if prefix = strings.Trim(prefix, "/"); prefix != "" {
		dirs = append(dirs, prefix)
	}
	for _, d := range dirs {
		for _, name := range dependencyDirs {
			rel := path.Join(d, name)
			if fi, err := os.Stat(filepath.Join(userTop, filepath.FromSlash(rel))); err != nil || !fi.IsDir() {
				continue
			}
			if _, err := os.Lstat(filepath.Join(wt, filepath.FromSlash(rel))); err == nil {
				continue
			}
			example := `"npm ci && npm test"`
			if name != "node_modules" {
				example = `"python3 -m venv ` + name + ` && ` + name + `/bin/pip install -e . && ` + name + `/bin/python -m pytest"`
			}
			notes = append(notes, fmt.Sprintf("%s is in your checkout but not in the worktree (git leaves ignored files out): a validation command that needs it fails there; install it first in [validation] (e.g. test = %s)", rel, example))
		}
	}
	// Without a .gitmodules there is nothing 'git submodule status' would
	// name (a gitlink without one is an error to it), and the command,
	// a shell script, starts a score of processes on every run.
	if _, err := os.Lstat(filepath.Join(wt, ".gitmodules")); errors.Is(err, fs.ErrNotExist) {
		return notes
	}
	out, err := run(ctx, wt, "submodule", "status")
	if err != nil {
		return notes
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "-") {
			if f := strings.Fields(l[1:]); len(f) >= 2 {
				notes = append(notes, fmt.Sprintf("submodule %s is not checked out in the worktree: a validation command that needs it fails there; run 'git -C %s submodule update --init %s', or do so in [validation]", f[1], wt, f[1]))
			}
		}
	}
	return notes
}

// Stage adds the given paths (relative to the worktree's top level) to
// the worktree's index, new files included.
func (w *Worktree) Stage(ctx context.Context, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	_, err := run(ctx, w.Path, append([]string{"add", "-A", "--"}, paths...)...)
	return err
}

// diffArgs pin the patch format against user configuration (noprefix,
// external diff tools, colour): the output must be what git apply reads.
var diffArgs = []string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/", "--binary"}

// Diff stages paths and returns the unified diff from the base commit to
// them: what the agent changed, without what the validation commands may
// have left in the worktree (caches, build output).
func (w *Worktree) Diff(ctx context.Context, paths []string) (string, error) {
	if len(paths) == 0 {
		return "", nil
	}
	if err := w.Stage(ctx, paths); err != nil {
		return "", err
	}
	args := append(append([]string{}, diffArgs...), "--cached", w.Base, "--")
	out, err := run(ctx, w.Path, append(args, paths...)...)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// Commit stages paths and commits them on the worktree's branch, authored
// and committed by "cra <cra@localhost>" whatever the environment says
// (hooks and signing off: the commit is the agent's record, for review).
// It reports false when there was nothing to commit.
func (w *Worktree) Commit(ctx context.Context, message string, paths []string) (bool, error) {
	if err := w.Stage(ctx, paths); err != nil {
		return false, err
	}
	cmd := exec.CommandContext(ctx, "git", "-C", w.Path, "diff", "--cached", "--quiet")
	if err := cmd.Run(); err == nil {
		return false, nil
	} else if ctx.Err() != nil {
		return false, ctx.Err()
	}
	commit := exec.CommandContext(ctx, "git", "-C", w.Path, "-c", "commit.gpgsign=false", "commit", "-q", "--no-verify", "-F", "-")
	commit.Env = append(os.Environ(), "GIT_AUTHOR_NAME=cra", "GIT_AUTHOR_EMAIL=cra@localhost", "GIT_COMMITTER_NAME=cra", "GIT_COMMITTER_EMAIL=cra@localhost")
	commit.Stdin = strings.NewReader(message)
	if out, err := commit.CombinedOutput(); err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		return false, fmt.Errorf("git commit: %s", strings.TrimSpace(string(out)))
	}
	return true, nil
}

// Remove deletes the worktree's directory and git's record of it; the
// branch stays. Untracked files in it (build output) go too.
func (w *Worktree) Remove(ctx context.Context) error {
	_, err := run(ctx, w.Repo, "worktree", "remove", "--force", w.Path)
	return err
}

// DeleteBranch deletes a local branch, merged or not.
func DeleteBranch(ctx context.Context, repo, branch string) error {
	_, err := run(ctx, repo, "branch", "-q", "-D", branch)
	return err
}

// Status returns the lines of git status --porcelain for dir: one per
// changed or untracked path, none for a clean work tree.
func Status(ctx context.Context, dir string) ([]string, error) {
	out, err := run(ctx, dir, "status", "--porcelain", "--untracked-files=normal")
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines, nil
}

// ApplyCheck reports whether patch applies cleanly to the work tree of
// dir (git apply --check); the error carries git's reasons.
func ApplyCheck(ctx context.Context, dir, patch string) error {
	_, err := runInput(ctx, dir, patch, "apply", "--check", "-")
	return err
}

// ErrConflicts is a patch whose three-way merge would leave conflicts.
var ErrConflicts = errors.New("the three-way merge has conflicts")

// ApplyThreeWay applies patch to dir with a three-way merge (git apply
// --3way): the patch's base blobs, kept in the repository, merged with
// what the files hold now. It applies only a merge without conflicts;
// otherwise nothing changes and the error says why (ErrConflicts, or
// git's reason). Git stages what it merged.
func ApplyThreeWay(ctx context.Context, dir, patch string) error {
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "-c", "core.quotePath=false", "apply", "--3way", "--check", "-")
	cmd.Stdin = strings.NewReader(patch)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("git apply --3way: %s", strings.TrimSpace(string(out)))
	}
	if strings.Contains(string(out), "with conflicts") {
		return ErrConflicts
	}
	_, err = runInput(ctx, dir, patch, "apply", "--3way", "-")
	return err
}

// Apply applies patch to the work tree of dir (git apply), all or
// nothing.
func Apply(ctx context.Context, dir, patch string) error {
	_, err := runInput(ctx, dir, patch, "apply", "-")
	return err
}

// OpenWorktree returns the worktree at path on branch, making it when
// needed: a directory that is already a work tree on branch is reused as
// it is (a board task keeps one worktree across its runs, issue 13 item
// 4); an existing branch without its directory is checked out there
// again; a missing branch is created at HEAD (AddWorktree). A directory on
// another branch is an error that names both. Base is the commit the
// branch forked from HEAD (git merge-base), so that a diff from it is the
// branch's whole work.
func OpenWorktree(ctx context.Context, repo, path, branch string) (*Worktree, error) {
	if _, err := os.Stat(path); err == nil {
		out, err := run(ctx, path, "rev-parse", "--show-toplevel", "--abbrev-ref", "HEAD")
		if err != nil {
			return nil, fmt.Errorf("worktree %s is not usable (remove it, then 'git worktree prune'): %w", path, err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != 2 || !samePath(lines[0], path) || lines[1] != branch {
			return nil, fmt.Errorf("%s is not a worktree on branch %s (git says %q): remove it, then 'git worktree prune'", path, branch, strings.Join(lines, " on "))
		}
		base, err := MergeBase(ctx, repo, "HEAD", branch)
		if err != nil {
			return nil, err
		}
		return &Worktree{Repo: repo, Path: path, Branch: branch, Base: base}, nil
	}
	exists, err := BranchExists(ctx, repo, branch)
	if err != nil {
		return nil, err
	}
	if !exists {
		return AddWorktree(ctx, repo, path, branch)
	}
	if _, err := run(ctx, repo, "worktree", "prune"); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("git worktree add: %w", err)
	}
	if _, err := run(ctx, repo, "worktree", "add", "-q", path, branch); err != nil {
		return nil, fmt.Errorf("%w (checking out branch %s in %s)", err, branch, path)
	}
	base, err := MergeBase(ctx, repo, "HEAD", branch)
	if err != nil {
		return nil, err
	}
	return &Worktree{Repo: repo, Path: path, Branch: branch, Base: base}, nil
}

// samePath reports whether a and b name the same directory, symbolic
// links resolved (git prints the resolved path).
func samePath(a, b string) bool {
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}

// MergeBase returns the best common ancestor of commits a and b.
func MergeBase(ctx context.Context, dir, a, b string) (string, error) {
	out, err := run(ctx, dir, "merge-base", a, b)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// DiffStat returns git diff --stat from commit base to rev: the files a
// branch changed and how much, for a person's glance.
func DiffStat(ctx context.Context, dir, base, rev string) (string, error) {
	out, err := run(ctx, dir, "diff", "--no-color", "--no-ext-diff", "--stat", base, rev, "--")
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(out), "\n"), nil
}

// FastForward moves the branch checked out in the work tree at dir to
// rev, updating its files, only when that is a fast-forward (git merge
// --ff-only); otherwise nothing changes and the error carries git's
// reason.
func FastForward(ctx context.Context, dir, rev string) error {
	_, err := run(ctx, dir, "merge", "--ff-only", "-q", rev)
	return err
}

// CurrentBranch returns the branch checked out in the work tree of dir.
func CurrentBranch(ctx context.Context, dir string) (string, error) {
	out, err := run(ctx, dir, "symbolic-ref", "--short", "HEAD")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}
