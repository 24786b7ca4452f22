package runner

import (
	"context"
	"fmt"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/statedir"
)

// FetchBranch brings task id's branch from the fleet's remote ([fleet]
// push) before its run is reviewed, as a run brings it before it starts
// (pull): the leader reviews runs other hosts ran (issue 34 item 5). The
// task's working copy here is made on the branch, or moved forward to
// it, since validation runs again in it. Nothing happens while push is
// off. A working copy that cannot follow (it holds work of its own) is
// an error, and the evidence says the worktree is not the branch's.
func (p *Processor) FetchBranch(ctx context.Context, id string) error {
	top, _, err := gitx.TopLevel(ctx, p.Root)
	if err != nil {
		return err
	}
	branch := board.BranchPrefix + id
	sh, err := p.shareOf(ctx, p.CurrentConfig(), top, branch)
	if err != nil || sh == nil {
		return err
	}
	path := statedir.At(p.StateDir).Worktree(id)
	haveCopy := exists(path)
	pl, err := p.pull(ctx, sh, top, branch, 0, haveCopy)
	if err != nil {
		return err
	}
	if ok, err := gitx.BranchExists(ctx, top, branch); err != nil || !ok {
		return err // no run pushed it: the evidence says the branch is missing
	}
	wt, err := gitx.OpenClone(ctx, top, path, branch, nil)
	if err != nil {
		return fmt.Errorf("make the working copy of %s for its review: %w", id, err)
	}
	if pl.forward != "" && haveCopy {
		if err := wt.FastForward(ctx, pl.forward); err != nil {
			return fmt.Errorf("the working copy of %s does not follow %s as pushed: %w", id, branch, err)
		}
	}
	return nil
}
