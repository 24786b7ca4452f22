package run

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/lazyre"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/workspace"
	"github.com/cra-dev/cra/internal/world"
)

// CleanOptions say what Clean may remove.
type CleanOptions struct {
	// DryRun says what would go and removes nothing.
	DryRun bool
	// OlderThan keeps runs whose last world-log entry (or, for a branch
	// the log does not know, whose last commit) is newer; 0 keeps none
	// for age.
	OlderThan time.Duration
	// Force also removes branches with commits HEAD does not have and
	// worktrees with uncommitted changes. Runs still going are never
	// removed.
	Force bool
	// Board says whether id is a task on the board and, if so, whether it
	// reached a terminal folder: a board task keeps its worktree and
	// branch across runs until then. Nil: no board.
	Board func(ctx context.Context, id string) (onBoard, terminal bool, err error)
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Cleaned is one worktree or branch Clean removed, or would remove, or
// kept, and why.
type Cleaned struct {
	ID       string `json:"id"`
	Worktree string `json:"worktree,omitempty"`
	Branch   string `json:"branch,omitempty"`
	Removed  bool   `json:"removed"`
	Why      string `json:"why"`
}

// runSuffix is the ".rN" of a board run's own branch (cra/<id>.rN).
var runSuffix = lazyre.New(`\.r[0-9]+$`)

// Clean removes the worktrees (.clean_room/worktrees/) and cra/ branches of
// runs that are over: the world log ends them (finish, verified, failed),
// or knows nothing of them; a board task only once it is in a terminal
// folder. A branch with commits HEAD lacks, or a worktree with uncommitted
// changes, holds work nobody merged and stays unless opts.Force. A run
// still going always stays. Nothing is lost silently: each decision is
// in the report.
func Clean(ctx context.Context, ws *workspace.Workspace, opts CleanOptions) ([]Cleaned, error) {
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	l, err := ws.Log()
	if err != nil {
		return nil, err
	}
	gitx.PruneWorktrees(ctx, ws.Root)
	branches, err := gitx.Branches(ctx, ws.Root, "cra/")
	if err != nil {
		return nil, fmt.Errorf("list cra branches: %w", err)
	}
	trees, err := gitx.Worktrees(ctx, ws.Root)
	if err != nil {
		return nil, fmt.Errorf("list worktrees: %w", err)
	}
	// The runs: every cra/ branch, and every worktree under
	// .clean_room/worktrees/ (a detached one is known by its directory).
	sep := string(filepath.Separator)
	under := evalPath(statedir.At(ws.StateDir).Worktrees()) + sep
	var runs []Cleaned
	seen := map[string]bool{}
	for path, branch := range trees {
		if !strings.HasPrefix(evalPath(path)+sep, under) {
			continue
		}
		c := Cleaned{Worktree: path, ID: filepath.Base(path)}
		if slices.Contains(branches, branch) {
			c.Branch, seen[branch] = branch, true
			c.ID = strings.TrimPrefix(branch, "cra/")
		}
		runs = append(runs, c)
	}
	for _, b := range branches {
		if !seen[b] {
			runs = append(runs, Cleaned{Branch: b, ID: strings.TrimPrefix(b, "cra/")})
		}
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].ID < runs[j].ID })
	var out []Cleaned
	for _, c := range runs {
		c.ID = runSuffix().ReplaceAllString(c.ID, "")
		keep, why, err := cleanVerdict(ctx, ws, l, opts, c, now())
		if err != nil {
			return out, err
		}
		c.Why = why
		if !keep && !opts.DryRun {
			if c.Worktree != "" {
				if err := gitx.RemoveWorktree(ctx, ws.Root, c.Worktree); err != nil {
					return out, fmt.Errorf("remove worktree %s: %w", c.Worktree, err)
				}
			}
			if c.Branch != "" {
				if err := gitx.DeleteBranch(ctx, ws.Root, c.Branch); err != nil {
					return out, fmt.Errorf("delete branch %s: %w", c.Branch, err)
				}
			}
		}
		c.Removed = !keep && !opts.DryRun
		if c.Worktree != "" {
			c.Worktree = RelPath(ws.Root, c.Worktree)
		}
		out = append(out, c)
	}
	return out, nil
}

// cleanVerdict decides whether a run's worktree and branch stay, and why.
func cleanVerdict(ctx context.Context, ws *workspace.Workspace, l *world.Log, opts CleanOptions, c Cleaned, now time.Time) (bool, string, error) {
	a, known, err := l.Lookup(ctx, c.ID)
	if err != nil {
		return true, "", err
	}
	switch {
	case known && (a.Status == world.StatusStart || a.Status == world.StatusActive || a.Status == world.StatusRetry):
		return true, "kept: the run is not over (" + string(a.Status) + ")", nil
	}
	if opts.Board != nil {
		onBoard, terminal, err := opts.Board(ctx, c.ID)
		if err != nil {
			return true, "", err
		}
		if onBoard && !terminal {
			return true, "kept: its board task is not finalized or blocked yet", nil
		}
	}
	if opts.OlderThan > 0 {
		last := a.Since
		if !known && c.Branch != "" {
			if last, err = gitx.CommitTime(ctx, ws.Root, c.Branch); err != nil {
				return true, "", err
			}
		}
		if age := now.Sub(last); age < opts.OlderThan {
			return true, fmt.Sprintf("kept: newer than %s", opts.OlderThan), nil
		}
	}
	var unmerged []string
	rev := c.Branch
	if rev == "" && c.Worktree != "" {
		// A detached worktree: its HEAD may hold commits no branch has.
		if rev, err = gitx.Head(ctx, c.Worktree); err != nil || rev == "" {
			return true, fmt.Sprintf("kept: cannot read its HEAD (%v)", err), nil
		}
	}
	if rev != "" {
		n, err := gitx.Unmerged(ctx, ws.Root, rev)
		if err != nil {
			return true, "", err
		}
		if n > 0 {
			unmerged = append(unmerged, fmt.Sprintf("%d commit(s) not merged into HEAD", n))
		}
	}
	if c.Worktree != "" {
		st, err := gitx.Status(ctx, c.Worktree)
		if err != nil {
			return true, fmt.Sprintf("kept: cannot read its worktree's status (%v)", err), nil
		}
		if len(st) > 0 {
			unmerged = append(unmerged, fmt.Sprintf("%d uncommitted change(s) in its worktree", len(st)))
		}
	}
	verb := "removed"
	if opts.DryRun {
		verb = "would remove"
	}
	if len(unmerged) > 0 {
		if !opts.Force {
			return true, "kept: " + strings.Join(unmerged, ", ") + " (review it, merge it, or pass --force)", nil
		}
		return false, verb + " with --force: " + strings.Join(unmerged, ", "), nil
	}
	if !known {
		return false, verb + ": the world log knows no such run, and its work is in HEAD", nil
	}
	return false, fmt.Sprintf("%s: the run is over (%s), its work is in HEAD", verb, a.Status), nil
}

// evalPath resolves symlinks in p where it can (git reports real paths).
func evalPath(p string) string {
	if r, err := filepath.EvalSymlinks(strings.TrimSuffix(p, string(filepath.Separator))); err == nil {
		if strings.HasSuffix(p, string(filepath.Separator)) {
			return r + string(filepath.Separator)
		}
		return r
	}
	return p
}
