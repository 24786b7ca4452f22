package fleet

import (
	"context"
	"fmt"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/fleetapi"
	"github.com/cra-dev/cra/internal/gitx"
)

// MaxDiff bounds the patch a BranchDiff carries: a drawer is for a
// glance; the whole diff is one git diff away.
const MaxDiff = 256 << 10

// Diff returns task id's branch diff. A task whose branch does not exist
// (it has not run) has an empty patch and Missing says why.
func (f *Fleet) Diff(ctx context.Context, id string) (*fleetapi.BranchDiff, error) {
	t, _, err := f.Board.Store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	repo := f.ws.Root
	d := &fleetapi.BranchDiff{Branch: board.BranchPrefix + id}
	if t.Merged != nil && t.Merged.Commit != "" {
		d.Base, d.Rev, d.Merged = t.Merged.Commit+"^1", t.Merged.Commit, true
	} else {
		ok, err := gitx.BranchExists(ctx, repo, d.Branch)
		if err != nil {
			return nil, fmt.Errorf("diff of task %s: %w", id, err)
		}
		if !ok {
			d.Missing = "no branch " + d.Branch + " yet: a run commits to it"
			return d, nil
		}
		d.Rev = "refs/heads/" + d.Branch
		if d.Base, err = gitx.MergeBase(ctx, repo, "HEAD", d.Rev); err != nil {
			d.Missing = fmt.Sprintf("%s has no base on HEAD: %v", d.Branch, err)
			return d, nil
		}
	}
	if d.Patch, d.Cut, err = gitx.DiffPatch(ctx, repo, d.Base, d.Rev, nil, MaxDiff); err != nil {
		return nil, fmt.Errorf("diff of task %s: %w", id, err)
	}
	return d, nil
}
