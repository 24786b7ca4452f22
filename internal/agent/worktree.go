package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/edit"
	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/statedir"
)

// WorktreesDir is where solve runs keep their worktrees, inside the state
// directory.
const WorktreesDir = statedir.WorktreesDir

// BranchPrefix starts the branch of every solve run: cra/<task_id>.
const BranchPrefix = "cra/"

// Worktree is where a solve run edits (seed 001 §17): a git worktree of
// HEAD on its own branch under .clean_room/worktrees/, never the user's
// work tree.
type Worktree struct {
	Git *gitx.Worktree
	// Root is where edits go and validation runs: the worktree's copy of
	// the directory cra works on (the top level, or a subdirectory).
	Root string
	// UserTop is the top level of the user's work tree, where --apply
	// applies the diff.
	UserTop string
	// Prefix is Root's path below the top level ("" or ending in "/").
	Prefix string
	// Notes are what the user should know about the worktree: that
	// uncommitted changes are not in it, that the branch name was taken.
	Notes []string

	touched map[string]bool // relative to Root
}

// NewWorktree makes the worktree of task taskID for the repository at
// repo (the directory holding .clean_room): branch cra/<taskID> at HEAD,
// checked out in stateDir/worktrees/<taskID>. When the branch exists, a
// suffix -2, -3, … is added to both. It never falls back to editing in
// place: a worktree that cannot be made is an error with the
// diagnostics and the fix.
func NewWorktree(ctx context.Context, repo, stateDir, taskID string) (*Worktree, error) {
	ok, err := gitx.IsRepo(ctx, repo)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%s is not in a git repository: cra solve edits in a git worktree, never in place (seed 001 §17); run 'git init' and commit first", repo)
	}
	top, prefix, err := gitx.TopLevel(ctx, repo)
	if err != nil {
		return nil, err
	}
	w := &Worktree{UserTop: top, Prefix: prefix, touched: map[string]bool{}}
	sd := statedir.At(stateDir)
	base := sd.Worktrees()
	for n := 1; n <= 20; n++ {
		name := taskID
		if n > 1 {
			name = fmt.Sprintf("%s-%d", taskID, n)
		}
		dir := sd.Worktree(name)
		if _, err := os.Stat(dir); err == nil {
			continue // left by a run that ended badly; kept for inspection
		}
		g, err := gitx.AddWorktree(ctx, repo, dir, BranchPrefix+name)
		if errors.Is(err, gitx.ErrBranchExists) {
			continue
		}
		if errors.Is(err, gitx.ErrNoCommits) {
			return nil, fmt.Errorf("the repository has no commits: cra solve starts its worktree from HEAD; commit first (git add -A && git commit -m 'initial')")
		}
		if err != nil {
			return nil, fmt.Errorf("cannot make the worktree, and cra never edits in place instead (seed 001 §17): %w\n"+
				"  repository: %s\n  worktree:   %s\n  branch:     %s\n"+
				"  check 'git worktree list', the free space and permissions of %s, or remove what is in the way", err, top, dir, BranchPrefix+name, base)
		}
		if n > 1 {
			w.Notes = append(w.Notes, fmt.Sprintf("branch %s%s exists: using %s", BranchPrefix, taskID, g.Branch))
		}
		w.Git = g
		w.Root = filepath.Join(g.Path, filepath.FromSlash(prefix))
		w.Notes = append(w.Notes, gitx.Missing(ctx, top, g.Path, prefix)...)
		if st, err := gitx.Status(ctx, repo); err == nil && len(st) > 0 {
			w.Notes = append(w.Notes, fmt.Sprintf("the worktree starts from HEAD (%.12s): your %d uncommitted change(s) are not in it, nor in the context the model sees", g.Base, len(st)))
		}
		return w, nil
	}
	return nil, fmt.Errorf("cannot make the worktree: branches %s%s to %s%s-20 or their directories under %s exist; remove old ones (git worktree prune; git branch -D …)",
		BranchPrefix, taskID, BranchPrefix, taskID, base)
}

// Apply applies edit blocks under Root and remembers the files changed.
// A block on a file git ignores and does not track (.env, build output,
// a log) fails with a message for the model: the edits end as a commit
// on the run's branch, and git adds no ignored file.
func (w *Worktree) Apply(ctx context.Context, blocks []edit.Block) ([]edit.Result, error) {
	refused := map[int]edit.Result{}
	var rest []edit.Block
	var at []int // rest's block numbers in blocks
	for i, b := range blocks {
		if edit.ValidPath(b.Path) == nil {
			// git's refusal of a path (beyond a symlink, outside the
			// tree) is edit.Apply's to report, per block.
			ignored, err := gitx.Ignored(ctx, w.Root, b.Path)
			if ctx.Err() != nil {
				return nil, fmt.Errorf("apply edits: %w", ctx.Err())
			}
			if err == nil && ignored {
				refused[i] = edit.Result{Block: i + 1, Path: b.Path, Status: edit.StatusFailed,
					Message: b.Path + " is ignored by git (.gitignore, .git/info/exclude): the run's work is a commit, which leaves it out; change the files git tracks instead"}
				continue
			}
		}
		rest = append(rest, b)
		at = append(at, i+1)
	}
	applied, changed, err := edit.Apply(w.Root, rest)
	for _, f := range changed {
		w.touched[f] = true
	}
	res := make([]edit.Result, 0, len(blocks))
	for i := range blocks {
		if r, ok := refused[i]; ok {
			res = append(res, r)
			continue
		}
		if len(applied) > 0 {
			r := applied[0]
			applied = applied[1:]
			r.Block = at[r.Block-1]
			res = append(res, r)
		}
	}
	return res, err
}

// Files returns the files the edits changed so far, relative to Root.
func (w *Worktree) Files() []string {
	out := make([]string, 0, len(w.touched))
	for f := range w.touched {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// topFiles are Files relative to the top level, as git names them.
func (w *Worktree) topFiles() []string {
	fs := w.Files()
	for i, f := range fs {
		fs[i] = path.Join(w.Prefix, f)
	}
	return fs
}

// Diff returns the unified diff of the edits from HEAD: only the files
// edits changed, whatever else validation left in the worktree.
func (w *Worktree) Diff(ctx context.Context) (string, error) {
	return w.Git.Diff(ctx, w.topFiles())
}

// Outcome is what Finish did with the worktree and its branch.
type Outcome struct {
	Branch string `json:"branch"`
	// Committed: the edits are a commit on Branch.
	Committed bool `json:"committed"`
	// Kept: the worktree is still at Path.
	Kept bool   `json:"worktree_kept"`
	Path string `json:"worktree"`
	// BranchDeleted: the run left nothing to review, so its branch went.
	BranchDeleted bool `json:"branch_deleted,omitempty"`
}

// Finish commits the edits on the branch (so they outlive the worktree)
// and keeps or removes the worktree as keep says (config.KeepAlways,
// KeepOnFailure — the default for "" — or KeepNever). A failure that
// edited nothing (the model never answered, a step before the first
// attempt failed) leaves nothing to inspect: its worktree goes even with
// KeepOnFailure. The branch stays for review unless the run edited
// nothing.
func (w *Worktree) Finish(ctx context.Context, success bool, keep, message string) (Outcome, error) {
	o := Outcome{Branch: w.Git.Branch, Path: w.Git.Path}
	committed, err := w.Git.Commit(ctx, message, w.topFiles())
	if err != nil {
		return o, fmt.Errorf("commit the edits on %s: %w", w.Git.Branch, err)
	}
	o.Committed = committed
	o.Kept = keep == config.KeepAlways || !success && keep != config.KeepNever && committed
	if o.Kept {
		return o, nil
	}
	if err := w.Git.Remove(ctx); err != nil {
		return o, fmt.Errorf("remove the worktree: %w", err)
	}
	if !committed {
		if err := gitx.DeleteBranch(ctx, w.Git.Repo, w.Git.Branch); err != nil {
			return o, err
		}
		o.BranchDeleted = true
	}
	return o, nil
}

// ApplyToUser applies diff to the user's work tree, only when it applies
// cleanly there (git apply --check first), or else merges without
// conflicts in three ways (the files moved on since the branch forked:
// git apply --3way, which stages the result); otherwise nothing changes
// and the error says why.
func (w *Worktree) ApplyToUser(ctx context.Context, diff string) error {
	if strings.TrimSpace(diff) == "" {
		return nil
	}
	if err := gitx.ApplyCheck(ctx, w.UserTop, diff); err != nil {
		if err3 := gitx.ApplyThreeWay(ctx, w.UserTop, diff); err3 == nil {
			return nil
		} else if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("the diff does not apply cleanly to your work tree, which is unchanged (%v), nor merges in three ways: merge branch %s yourself (git merge %s)",
			err, w.Git.Branch, w.Git.Branch)
	}
	if err := gitx.Apply(ctx, w.UserTop, diff); err != nil {
		return fmt.Errorf("apply the diff to your work tree: %w", err)
	}
	return nil
}
