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
	// forward is the commit the branch moved to ("" when it stayed): the
	// working copy, when there is one, follows it.
	forward string
	// note is the world log's event saying so, "" when there is nothing
	// to say.
	note string
	// foreign is the commit the remote's branch was at when it was not
	// the one the task's last run recorded ("" when it was, or there was
	// none): nothing is built on it, and the run's push replaces it.
	foreign string
	// remote is the commit the remote's branch was at, "" when it had
	// none.
	remote string
}

// validCommit reports whether s is a full commit id (SHA-1 or SHA-256).
func validCommit(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// pull brings the task's branch from the remote before a run or its
// review (issue 34 items 4 and 5), so that a run builds on the last one
// wherever it ran. The remote's branch is fetched into the
// remote-tracking ref, for a person to look at, but taken only at
// recorded, the commit the task's last run recorded when it ended
// (Results.Commit, in the task's row, which no agent writes): anything
// else there is no run's (an agent that can reach the remote itself may
// have pushed it, DESIGN.md "Trust"), and nothing builds on it. The
// commit taken, the remote's when it is the recorded one, or else the
// recorded one when this host has it (a forgery on top of it brings it
// along), then moves the branch:
//   - no branch here: the branch is made at it (the task ran on another
//     host; the run says it starts from the pushed branch);
//   - it descends from this host's: a newer run elsewhere, the branch
//     fast-forwards to it;
//   - this host's descends from it: an earlier push failed, the run's
//     push carries it;
//   - they diverged: nothing moves, the run builds on this host's, and
//     the event says where the other is and how to merge them; the
//     run's push is then refused as not a fast-forward, and says so too.
//
// With nothing to take (no commit recorded: a task that never finished
// a run, or ran before cra recorded them; or the recorded one is neither
// on the remote nor here), the run builds on this host's branch, or on a
// clean base when there is none, and the event names both commits.
//
// An error (the remote cannot be read) means the run does not start.
func (p *Processor) pull(ctx context.Context, sh *share, top, branch string, run int, haveCopy bool, recorded string) (pl *pulled, err error) {
	ctx, cancel := context.WithTimeout(ctx, RemoteTimeout)
	defer cancel()
	remote, err := gitx.RemoteBranch(ctx, top, sh.url, branch)
	defer func() {
		if pl != nil {
			pl.remote = remote
		}
	}()
	if err != nil {
		return nil, fmt.Errorf("[fleet] push is on and remote %s cannot be read (fix the network or the remote, or set [fleet] push = false to run without it): %w", sh.remote, err)
	}
	if remote != "" {
		if remote, err = gitx.FetchBranch(ctx, top, sh.url, branch, sh.tracking); err != nil {
			return nil, fmt.Errorf("[fleet] push is on and %s cannot be fetched from remote %s: %w", branch, sh.remote, err)
		}
	}
	if !validCommit(recorded) {
		recorded = ""
	}
	local, _ := gitx.RevParse(ctx, top, "refs/heads/"+branch)
	take, as, foreign := "", "as pushed to "+sh.remote, ""
	switch {
	case remote == "" && recorded == "":
		return &pulled{}, nil // no run of the task pushed yet
	case recorded != "" && remote == recorded:
		take = remote
	default:
		if remote != "" && remote != local {
			foreign = remote
		}
		if recorded != "" {
			if have, _ := gitx.RevParse(ctx, top, recorded); have == recorded {
				take, as = recorded, "at the commit its last run recorded"
			}
		}
	}
	// what the remote holds, when it is not taken
	refused := ""
	switch {
	case foreign != "" && recorded == "":
		refused = fmt.Sprintf("%s's %s (%.12s) is not taken: no run of the task recorded a commit (none finished, or it ran before cra recorded them), so nothing says it is a run's; it is kept as %s", sh.remote, branch, foreign, sh.tracking)
	case foreign != "":
		refused = fmt.Sprintf("%s's %s (%.12s) is not the commit the task's last run recorded (%.12s) and is not taken (an agent that can reach %s may have pushed it); it is kept as %s, and this run's push replaces it", sh.remote, branch, foreign, recorded, sh.remote, sh.tracking)
	case remote == "" && take == "":
		refused = fmt.Sprintf("%s has no %s, and the commit the task's last run recorded (%.12s) is not on this host either", sh.remote, branch, recorded)
	case remote == "":
		refused = fmt.Sprintf("%s has no %s (its last run's push failed?)", sh.remote, branch)
	case take == "" && recorded != "":
		refused = fmt.Sprintf("the commit the task's last run recorded (%.12s) is neither on %s, whose %s is this host's, nor here", recorded, sh.remote, branch)
	}
	if take == "" {
		if refused == "" {
			return &pulled{}, nil // the remote's is this host's, and no run recorded one
		}
		from := fmt.Sprintf("this host's %s (%.12s)", branch, local)
		if local == "" {
			from = "a clean base: this host has no " + branch
		}
		return &pulled{foreign: foreign, note: fmt.Sprintf("run %d: %s; this run builds on %s (host %s)", run, refused, from, sh.host)}, nil
	}
	if refused != "" {
		refused = "; " + refused
	}
	switch {
	case local == "":
		if err := gitx.CreateBranch(ctx, top, branch, take, "cra: "+branch+" from "+sh.remote); err != nil {
			return nil, fmt.Errorf("make %s at %s's: %w", branch, sh.remote, err)
		}
		where := "this host had no working copy of the task"
		if haveCopy {
			where = "this host had a working copy but no branch"
		}
		return &pulled{forward: take, foreign: foreign, note: fmt.Sprintf("run %d starts from %s %s (%.12s), its last run elsewhere: %s (host %s)%s",
			run, branch, as, take, where, sh.host, refused)}, nil
	case local == take:
		if refused == "" {
			return &pulled{}, nil
		}
		return &pulled{foreign: foreign, note: fmt.Sprintf("run %d builds on this host's %s (%.12s), the commit its last run recorded%s (host %s)", run, branch, local, refused, sh.host)}, nil
	case gitx.IsAncestor(ctx, top, local, take):
		if err := gitx.UpdateBranch(ctx, top, branch, take, local, "cra: "+branch+" from "+sh.remote); err != nil {
			return nil, fmt.Errorf("move %s to %s's: %w", branch, sh.remote, err)
		}
		where := "no working copy of the task here"
		if haveCopy {
			where = "the working copy here follows it"
		}
		return &pulled{forward: take, foreign: foreign, note: fmt.Sprintf("run %d starts from %s %s (%.12s, a later run elsewhere than this host's %.12s): %s (host %s)%s",
			run, branch, as, take, local, where, sh.host, refused)}, nil
	case gitx.IsAncestor(ctx, top, take, local):
		// this host's is ahead: the run's push carries it
		if refused == "" {
			return &pulled{}, nil
		}
		return &pulled{foreign: foreign, note: fmt.Sprintf("run %d builds on this host's %s (%.12s), ahead of the commit its last run recorded%s (host %s)", run, branch, local, refused, sh.host)}, nil
	}
	if take != remote {
		return &pulled{foreign: foreign, note: fmt.Sprintf("run %d: %s here (%.12s) and the commit its last run recorded (%.12s) have diverged: this run builds on this host's (%s); merge %.12s into %s here by hand, then requeue the task%s",
			run, branch, local, take, sh.host, take, branch, refused)}, nil
	}
	return &pulled{note: fmt.Sprintf("run %d: %s here (%.12s) and on %s (%.12s) have diverged: this run builds on this host's (%s), and its push will be refused; %s's is kept as %s: merge it into %s here by hand, then requeue the task so that a run here pushes the merge (a branch pushed by hand is not taken: only a run's recorded commit is)",
		run, branch, local, sh.remote, remote, sh.host, sh.remote, sh.tracking, branch)}, nil
}

// push sends the task's branch to the remote after a run (issue 34 item
// 4), as a fast-forward only, or, when the remote's branch was foreign
// (no run recorded it: see pull), in its place while it still holds that
// commit. It returns the commit the run left the branch at, which its
// finish records whether or not the push went through: another host
// takes the remote's branch only at it. A push that fails is logged with
// its fix and loses nothing: the run's work is on this host's branch,
// and its outcome is recorded as it ended.
func (p *Processor) push(ctx context.Context, sh *share, top, id, branch string, run int, foreign string) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RemoteTimeout)
	defer cancel()
	commit, err := gitx.RevParse(ctx, top, "refs/heads/"+branch)
	if err != nil {
		p.Logger.Warn("task branch not pushed", "task", id, "run", run, "remote", sh.remote, "err", err)
		p.event(ctx, id, fmt.Sprintf("run %d: %s was not pushed to %s (host %s): %v", run, branch, sh.remote, sh.host, err))
		return ""
	}
	if foreign != "" && foreign != commit && !gitx.IsAncestor(ctx, top, foreign, commit) {
		err = gitx.ReplaceCommit(ctx, top, sh.url, commit, branch, foreign)
		if err == nil {
			p.event(ctx, id, fmt.Sprintf("run %d: %s's %s (%.12s), which no run recorded, was replaced by this run's (%.12s) (host %s)", run, sh.remote, branch, foreign, commit, sh.host))
			return commit
		}
	} else {
		err = gitx.PushCommit(ctx, top, sh.url, commit, branch)
	}
	if err == nil {
		return commit
	}
	fix := fmt.Sprintf("fix the remote or the network, then: git push %s %s", sh.remote, branch)
	if errors.Is(err, gitx.ErrRejected) {
		fix = fmt.Sprintf("%s's %s has commits this host's lacks (a run elsewhere): git fetch %s %s, merge %s/%s into %s here, then requeue the task so that a run here pushes the merge",
			sh.remote, branch, sh.remote, branch, sh.remote, branch, branch)
	}
	p.Logger.Warn("task branch not pushed", "task", id, "run", run, "remote", sh.remote, "err", err)
	p.event(ctx, id, fmt.Sprintf("run %d: %s was not pushed to %s (host %s): %v; the run's work is on %s on this host (%.12s): %s",
		run, branch, sh.remote, sh.host, err, branch, commit, fix))
	return commit
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
