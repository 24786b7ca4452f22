package gitx

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// ConflictError is a merge git could not make without a person: the paths
// that conflict. Nothing was written.
type ConflictError struct {
	Paths []string
}

func (e *ConflictError) Error() string {
	return "the merge conflicts in " + strings.Join(e.Paths, ", ")
}

// MergeCommit makes, without touching any work tree or ref, the commit
// that merges branch into into (git merge-tree --write-tree, then git
// commit-tree): with squash, one parent (into) and branch's changes; else
// a merge commit with both parents. A conflict is a *ConflictError. It
// returns the new commit's hash.
func MergeCommit(ctx context.Context, repo, into, branch, message string, squash bool) (string, error) {
	intoHash, err := RevParse(ctx, repo, "refs/heads/"+into)
	if err != nil {
		return "", fmt.Errorf("branch %s: %w", into, err)
	}
	branchHash, err := RevParse(ctx, repo, "refs/heads/"+branch)
	if err != nil {
		return "", fmt.Errorf("branch %s: %w", branch, err)
	}
	cmd := exec.CommandContext(ctx, "git", "-C", repo, "-c", "core.quotePath=false",
		"merge-tree", "--write-tree", "--name-only", "--no-messages", intoHash, branchHash)
	out, err := cmd.Output()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		return "", &ConflictError{Paths: lines[1:]} // the first line is the tree
	default:
		return "", fmt.Errorf("git merge-tree: %v: %s", err, strings.TrimSpace(string(stderrOf(err))))
	}
	tree := strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
	args := []string{"commit-tree", tree, "-p", intoHash}
	if !squash {
		args = append(args, "-p", branchHash)
	}
	commit, err := runInput(ctx, repo, message, append(args, "-F", "-")...)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(commit)), nil
}

func stderrOf(err error) []byte {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.Stderr
	}
	return nil
}

// UpdateBranch moves branch to commit only if it is still at old (git
// update-ref with the old value): a branch another process moved
// meanwhile is left alone and the error says so.
func UpdateBranch(ctx context.Context, repo, branch, commit, old, reason string) error {
	_, err := run(ctx, repo, "update-ref", "-m", reason, "refs/heads/"+branch, commit, old)
	return err
}

// CheckedOut returns the work tree (the main one included) that has
// branch checked out, or "" when none has.
func CheckedOut(ctx context.Context, repo, branch string) (string, error) {
	out, err := run(ctx, repo, "worktree", "list", "--porcelain")
	if err != nil {
		return "", err
	}
	var path string
	for _, l := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(l, "worktree "):
			path = strings.TrimPrefix(l, "worktree ")
		case l == "branch refs/heads/"+branch:
			return path, nil
		}
	}
	return "", nil
}

// Push pushes branch to remote under the same name.
func Push(ctx context.Context, repo, remote, branch string) error {
	_, err := run(ctx, repo, "-c", "core.hooksPath=/dev/null", "push", "-q", remote, "refs/heads/"+branch+":refs/heads/"+branch)
	return err
}

// Remotes lists repo's remotes.
func Remotes(ctx context.Context, repo string) ([]string, error) {
	out, err := run(ctx, repo, "remote")
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}
