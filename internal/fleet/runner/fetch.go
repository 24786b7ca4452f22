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
// branch is taken only at the commit the run recorded when it ended
// (Results.Commit): a branch that ends anywhere else here (the remote
// holds another commit, and this host lacks the recorded one) is an
// error wrapping board.ErrForeignBranch that names both, and the review
// does not pass (DESIGN.md, "Trust"). A run that recorded none (it ran
// before cra recorded them) is reviewed only on the host it ran on. A
// remote that cannot be read leaves a branch here to review only when it
// is the run's; else the error wraps board.ErrBranchAway, and the review
// waits for the remote. The task's working copy here is made on the branch,
// or moved forward to it, since validation runs again in it. Nothing happens while push is
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
	t, _, err := p.Board.Store.Get(ctx, id)
	if err != nil {
		return err
	}
	recorded, ranOn := recordedCommit(t), ""
	if t.Results != nil {
		ranOn = t.Results.Host
	}
	path := statedir.At(p.StateDir).Worktree(id)
	haveCopy := exists(path)
	pl, err := p.pull(ctx, sh, top, branch, t.Runs, haveCopy, recorded)
	local, _ := gitx.RevParse(ctx, top, "refs/heads/"+branch)
	if err != nil {
		if recorded != "" && local == recorded || recorded == "" && ranOn == p.Host {
			return err // this host has the run's branch: the review goes on with it
		}
		return fmt.Errorf("%w; and this host's %s (%s) is not the commit run %d of task %s recorded on host %s (%s): the review waits until the remote can be read: %w",
			err, branch, short(local), t.Runs, id, ranOn, short(recorded), board.ErrBranchAway)
	}
	switch {
	case recorded == "" && ranOn != p.Host && (local != "" || pl.foreign != ""):
		return fmt.Errorf("run %d of task %s (host %q) recorded no commit of %s (it ran before cra recorded them), so neither %s's (%s) nor this host's (%s) is known to be its: not reviewed; requeue the task to run it again: %w",
			t.Runs, id, ranOn, branch, sh.remote, short(pl.remote), short(local), board.ErrForeignBranch)
	case recorded != "" && local != recorded:
		return fmt.Errorf("%s on %s (%s) and here (%s) is not the commit run %d of task %s recorded on host %s (%.12s): the run's work is not reviewed: %w",
			branch, sh.remote, short(pl.remote), short(local), t.Runs, id, ranOn, recorded, board.ErrForeignBranch)
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

// short is commit's first 12 characters, or "none".
func short(commit string) string {
	if commit == "" {
		return "none"
	}
	return commit[:min(len(commit), 12)]
}
