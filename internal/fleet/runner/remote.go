package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/world"
)

// RemoteTimeout bounds one fetch or push of a task's branch: a remote
// that does not answer fails the fetch (the run does not start) or the
// push (logged; the run's work stays on this host's branch).
const RemoteTimeout = 2 * time.Minute

// share is a run's link to the fleet's shared remote (issue 34 item 4):
// the remote's name and URL as the repository's own config held them
// when the run began. The URL is read before the agent starts and used
// explicitly, with an explicit refspec of the task's branch only, from
// the repository, never from the working copy: nothing the agent writes
// in its working copy (its .git/config, 'git remote set-url', other
// branches or tags) changes where the push goes or what it carries.
type share struct {
	remote, url, host string
	// tracking is the remote-tracking ref the task's branch is fetched
	// into, refs/remotes/REMOTE/cra/ID: a diverged branch stays there
	// for a person to merge.
	tracking string
}

// shareOf returns the run's share, nil when [fleet] push is off (one
// machine: no remote, no network).
func (p *Processor) shareOf(ctx context.Context, cfg *config.Config, top, branch string) (*share, error) {
	fs, err := cfg.FleetSettings()
	if err != nil {
		return nil, err
	}
	if !fs.Push {
		return nil, nil
	}
	url, err := gitx.ConfiguredURL(ctx, top, fs.Remote)
	if err != nil {
		return nil, fmt.Errorf("[fleet] push is on: %w", err)
	}
	return &share{remote: fs.Remote, url: url, host: fs.Host, tracking: "refs/remotes/" + fs.Remote + "/" + branch}, nil
}

// pulled is what pull did to the task's branch.
type pulled struct {
	// forward is the commit the branch moved to from the remote ("" when
	// it stayed): the working copy, when there is one, follows it.
	forward string
	// note is the world log's event saying so, "" when there is nothing
	// to say.
	note string
}

// pull brings the task's branch from the remote before a run (issue 34
// item 4), so that a run builds on the last one wherever it ran: the
// remote's branch is fetched into the remote-tracking ref, then
//   - no branch here: the branch is made at the remote's (the task ran on
//     another host; the run says it starts from the pushed branch);
//   - the remote's descends from this host's: a newer run elsewhere, the
//     branch fast-forwards to it;
//   - this host's descends from the remote's: an earlier push failed, the
//     run's push carries it;
//   - they diverged: nothing moves, the run builds on this host's, and
//     the event says where the remote's is and how to merge them; the
//     run's push is then refused as not a fast-forward, and says so too.
//
// An error (the remote cannot be read) means the run does not start.
func (p *Processor) pull(ctx context.Context, sh *share, top, branch string, run int, haveCopy bool) (*pulled, error) {
	ctx, cancel := context.WithTimeout(ctx, RemoteTimeout)
	defer cancel()
	remote, err := gitx.RemoteBranch(ctx, top, sh.url, branch)
	if err != nil {
		return nil, fmt.Errorf("[fleet] push is on and remote %s cannot be read (fix the network or the remote, or set [fleet] push = false to run without it): %w", sh.remote, err)
	}
	if remote == "" {
		return &pulled{}, nil // no run of the task pushed yet
	}
	if remote, err = gitx.FetchBranch(ctx, top, sh.url, branch, sh.tracking); err != nil {
		return nil, fmt.Errorf("[fleet] push is on and %s cannot be fetched from remote %s: %w", branch, sh.remote, err)
	}
	local, _ := gitx.RevParse(ctx, top, "refs/heads/"+branch)
	switch {
	case local == "":
		if err := gitx.CreateBranch(ctx, top, branch, remote, "cra: "+branch+" from "+sh.remote); err != nil {
			return nil, fmt.Errorf("make %s at %s's: %w", branch, sh.remote, err)
		}
		where := "this host had no working copy of the task"
		if haveCopy {
			where = "this host had a working copy but no branch"
		}
		return &pulled{forward: remote, note: fmt.Sprintf("run %d starts from %s as pushed to %s (%.12s), its last run elsewhere: %s (host %s)",
			run, branch, sh.remote, remote, where, sh.host)}, nil
	case local == remote:
		return &pulled{}, nil
	case gitx.IsAncestor(ctx, top, local, remote):
		if err := gitx.UpdateBranch(ctx, top, branch, remote, local, "cra: "+branch+" from "+sh.remote); err != nil {
			return nil, fmt.Errorf("move %s to %s's: %w", branch, sh.remote, err)
		}
		where := "no working copy of the task here"
		if haveCopy {
			where = "the working copy here follows it"
		}
		return &pulled{forward: remote, note: fmt.Sprintf("run %d starts from %s as pushed to %s (%.12s, a later run elsewhere than this host's %.12s): %s (host %s)",
			run, branch, sh.remote, remote, local, where, sh.host)}, nil
	case gitx.IsAncestor(ctx, top, remote, local):
		return &pulled{}, nil // this host's is ahead: the run's push carries it
	}
	return &pulled{note: fmt.Sprintf("run %d: %s here (%.12s) and on %s (%.12s) have diverged: this run builds on this host's (%s), and its push will be refused; %s's is kept as %s: merge it into %s by hand, then push it to %s",
		run, branch, local, sh.remote, remote, sh.host, sh.remote, sh.tracking, branch, sh.remote)}, nil
}

// push sends the task's branch to the remote after a run (issue 34 item
// 4), as a fast-forward only. A push that fails is logged with its fix
// and loses nothing: the run's work is on this host's branch, and its
// outcome is recorded as it ended.
func (p *Processor) push(ctx context.Context, sh *share, top, id, branch string, run int) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RemoteTimeout)
	defer cancel()
	commit, err := gitx.RevParse(ctx, top, "refs/heads/"+branch)
	if err == nil {
		err = gitx.PushCommit(ctx, top, sh.url, commit, branch)
	}
	if err == nil {
		return
	}
	fix := fmt.Sprintf("fix the remote or the network, then: git push %s %s", sh.remote, branch)
	if errors.Is(err, gitx.ErrRejected) {
		fix = fmt.Sprintf("%s's %s has commits this host's lacks (a run elsewhere): git fetch %s %s, merge %s/%s into %s, then git push %s %s",
			sh.remote, branch, sh.remote, branch, sh.remote, branch, branch, sh.remote, branch)
	}
	p.Logger.Warn("task branch not pushed", "task", id, "run", run, "remote", sh.remote, "err", err)
	p.event(ctx, id, fmt.Sprintf("run %d: %s was not pushed to %s (host %s): %v; the run's work is on %s on this host: %s",
		run, branch, sh.remote, sh.host, err, branch, fix))
}

// event writes a system event about task id's run; a failure to write it
// goes to the Logger (the run goes on).
func (p *Processor) event(ctx context.Context, id, text string) {
	if _, err := p.Board.Log.Event(ctx, world.SourceSystem, id, board.Clip(text, 600)); err != nil {
		p.Logger.Warn("event not logged", "task", id, "event", text, "err", err)
	}
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
