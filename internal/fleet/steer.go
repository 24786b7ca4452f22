package fleet

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/fleetapi"
	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/supervise"
	"github.com/cra-dev/cra/internal/world"
)

// A person steers any task and finishes its work (issue 30): stop, close,
// reopen, merge, pull request. The CLI and the web board call these
// through Ops.

// Stop stops task id's running run: the log first (board.StopRun: a
// person's retry, the task held in pending), then the run's process
// group, as Level 2 ends a stale run. No failure is counted.
func (f *Fleet) Stop(ctx context.Context, id, why string) (*fleetapi.Stopped, error) {
	a, known, err := f.Board.Log.Lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	if _, _, err := f.Board.Store.Get(ctx, id); err != nil {
		return nil, err
	}
	if !known || a.Status != world.StatusActive {
		state := "has no entry in the world log"
		if known {
			state = fmt.Sprintf("is not running (the log has it %s)", a.Status)
		}
		return nil, &board.SteerError{ID: id, Op: "stop", State: state,
			Fix: "to keep it from running, close it with 'cra task close " + id + " --why …'"}
	}
	active := supervise.ActiveAgents([]world.Agent{a})
	run := active[0].Run
	obs, err := supervise.Observe(ctx, statedir.At(f.ws.StateDir).Runs(), active)
	if err != nil {
		return nil, err
	}
	var kill *supervise.Kill
	if p := obs.Proc(id, run); p != nil {
		kill = &supervise.Kill{PID: p.PID, StartTime: p.StartTime, PGID: p.PGID, TaskID: id, Run: run,
			Reason: "a person", Detail: strings.TrimSpace(why)}
	}
	t, err := f.Board.StopRun(ctx, id, run, why)
	if err != nil {
		return nil, err
	}
	out := &fleetapi.Stopped{Task: t, Run: run}
	if kill != nil {
		if out.Killed, err = supervise.Stop(ctx, *kill, 0); err != nil {
			return out, fmt.Errorf("task %s: run %d is logged as stopped, but its processes: %w", id, run, err)
		}
	}
	return out, nil
}

// CloseTask closes task id as won't-do (board.Close).
func (f *Fleet) CloseTask(ctx context.Context, id, why string) (*board.Task, error) {
	return f.Board.Close(ctx, id, why)
}

// Reopen undoes a close or a stop (board.Reopen).
func (f *Fleet) Reopen(ctx context.Context, id string) (*board.Task, error) {
	return f.Board.Reopen(ctx, id)
}

// Merge merges task id's branch cra/ID into a branch. The merge is made
// whole before anything moves (git merge-tree, git commit-tree): a
// conflict changes nothing and names the files. A branch checked out in
// the repository's work tree moves by a fast-forward to the merge, which
// needs that work tree clean of tracked changes; any other branch moves
// only if no one moved it meanwhile. The merge is logged ([event:user])
// and kept on the task (merged).
func (f *Fleet) Merge(ctx context.Context, id string, o MergeOptions) (*board.Task, error) {
	t, folder, err := f.Board.Store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if folder != board.CompletedFinalized && !o.Force {
		return nil, &board.SteerError{ID: id, Op: "merge", State: fmt.Sprintf("is not verified (it is in %s)", folder),
			Fix: "wait for its review, or merge it anyway with --force"}
	}
	if t.Merged != nil && !o.Force {
		return nil, &board.SteerError{ID: id, Op: "merge", State: fmt.Sprintf("was merged into %s already (%.12s)", t.Merged.Into, t.Merged.Commit),
			Fix: "merge it again with --force if its branch moved since"}
	}
	repo := f.ws.Root
	branch := board.BranchPrefix + id
	if ok, err := gitx.BranchExists(ctx, repo, branch); err != nil {
		return nil, err
	} else if !ok {
		return nil, &board.SteerError{ID: id, Op: "merge", State: "has no branch " + branch, Fix: "run it first: its runs commit to " + branch}
	}
	into := o.Into
	if into == "" {
		if into, err = gitx.CurrentBranch(ctx, repo); err != nil {
			return nil, &board.SteerError{ID: id, Op: "merge", State: "has no target: the repository's HEAD is not on a branch", Fix: "name one with --into BRANCH"}
		}
	}
	if ok, err := gitx.BranchExists(ctx, repo, into); err != nil {
		return nil, err
	} else if !ok {
		return nil, &board.SteerError{ID: id, Op: "merge", State: "cannot go into " + into + ": no such branch", Fix: "name an existing branch with --into"}
	}
	old, err := gitx.RevParse(ctx, repo, "refs/heads/"+into)
	if err != nil {
		return nil, err
	}
	if gitx.IsAncestor(ctx, repo, "refs/heads/"+branch, old) {
		return nil, &board.SteerError{ID: id, Op: "merge", State: "has nothing to merge: " + into + " holds all of " + branch, Fix: "nothing to do"}
	}
	wt, err := gitx.CheckedOut(ctx, repo, into)
	if err != nil {
		return nil, err
	}
	if wt != "" && wt != repo {
		return nil, &board.SteerError{ID: id, Op: "merge", State: "cannot go into " + into + ": it is checked out at " + wt, Fix: "merge there, or name another branch with --into"}
	}
	if wt != "" {
		dirty, err := gitx.Status(ctx, wt)
		if err != nil {
			return nil, err
		}
		var tracked []string
		for _, l := range dirty {
			if !strings.HasPrefix(l, "??") {
				tracked = append(tracked, strings.TrimSpace(l[2:]))
			}
		}
		if len(tracked) > 0 {
			return nil, &board.SteerError{ID: id, Op: "merge", State: "cannot go into " + into + ": its work tree at " + wt + " has uncommitted changes (" + clipList(tracked, 5) + ")",
				Fix: "commit or stash them, then merge again; nothing was changed"}
		}
	}
	msg := fmt.Sprintf("Merge %s: %s\n\ncra task %s", branch, t.Title, id)
	if o.Squash {
		msg = fmt.Sprintf("%s\n\ncra task %s, squashed from %s", t.Title, id, branch)
	}
	commit, err := gitx.MergeCommit(ctx, repo, into, branch, msg, o.Squash)
	var ce *gitx.ConflictError
	if errors.As(err, &ce) {
		return nil, &board.SteerError{ID: id, Op: "merge", State: fmt.Sprintf("conflicts with %s in %s", into, clipList(ce.Paths, 10)),
			Fix: fmt.Sprintf("rebase the branch (git rebase %s %s), resolve, then merge again; nothing was changed", into, branch)}
	}
	if err != nil {
		return nil, err
	}
	if wt != "" {
		// A fast-forward either moves the branch and its files or changes
		// nothing (an untracked file in the way stops it).
		if err := gitx.FastForward(ctx, wt, commit); err != nil {
			return nil, &board.SteerError{ID: id, Op: "merge", State: "cannot move the work tree at " + wt + " to the merge: " + err.Error(),
				Fix: "move the files git names out of the way, then merge again; nothing was changed"}
		}
	} else if err := gitx.UpdateBranch(ctx, repo, into, commit, old, "cra task merge "+id); err != nil {
		return nil, &board.SteerError{ID: id, Op: "merge", State: "cannot move " + into + ": " + err.Error(), Fix: "merge again"}
	}
	how := ""
	if o.Squash {
		how = " (squashed)"
	}
	ctx = context.WithoutCancel(ctx)
	if _, err := f.Board.Log.Event(ctx, world.SourceUser, id, fmt.Sprintf("merged %s into %s at %.12s%s", branch, into, commit, how)); err != nil {
		return nil, fmt.Errorf("task %s: merged into %s at %s, but the log: %w", id, into, commit, err)
	}
	merged := &board.Merge{Into: into, Commit: commit, Squash: o.Squash, At: f.Board.Now().UTC().Truncate(time.Second)}
	return f.Board.SetMerged(ctx, id, merged)
}

// PR pushes task id's branch to a remote and opens a pull request with gh
// when it is installed and signed in; otherwise it says the exact
// commands. The pushed branch is logged ([event:user]).
func (f *Fleet) PR(ctx context.Context, id string, o PROptions) (*fleetapi.PullRequest, error) {
	t, _, err := f.Board.Store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	repo := f.ws.Root
	branch := board.BranchPrefix + id
	if ok, err := gitx.BranchExists(ctx, repo, branch); err != nil {
		return nil, err
	} else if !ok {
		return nil, &board.SteerError{ID: id, Op: "open a pull request for", State: "has no branch " + branch, Fix: "run it first: its runs commit to " + branch}
	}
	remote := o.Remote
	if remote == "" {
		remotes, err := gitx.Remotes(ctx, repo)
		if err != nil {
			return nil, err
		}
		switch {
		case len(remotes) == 0:
			return nil, &board.SteerError{ID: id, Op: "open a pull request for", State: "has nowhere to go: the repository has no remote",
				Fix: "add one (git remote add origin URL), then run 'cra task pr " + id + "' again"}
		case len(remotes) == 1:
			remote = remotes[0]
		default:
			remote = "origin"
		}
	}
	base := o.Base
	if base == "" {
		if base, err = gitx.CurrentBranch(ctx, repo); err != nil {
			return nil, &board.SteerError{ID: id, Op: "open a pull request for", State: "has no base: the repository's HEAD is not on a branch", Fix: "name one with --base BRANCH"}
		}
	}
	pr := &fleetapi.PullRequest{Branch: branch, Remote: remote, Base: base}
	title := t.Title
	body := fmt.Sprintf("%s\n\nDone when: %s\n\ncra task %s", t.Description, t.Need, id)
	ghArgs := []string{"pr", "create", "--head", branch, "--base", base, "--title", title, "--body", strings.TrimSpace(body)}
	pr.Commands = []string{
		fmt.Sprintf("git push %s %s", remote, branch),
		"gh " + shellJoin(ghArgs),
	}
	if err := gitx.Push(ctx, repo, remote, branch); err != nil {
		return pr, &board.SteerError{ID: id, Op: "open a pull request for", State: "could not be pushed to " + remote + ": " + err.Error(),
			Fix: "fix the remote or your credentials, then run: " + strings.Join(pr.Commands, " && ")}
	}
	pr.Pushed = true
	ctx = context.WithoutCancel(ctx)
	if _, err := f.Board.Log.Event(ctx, world.SourceUser, id, fmt.Sprintf("pushed %s to %s", branch, remote)); err != nil {
		return pr, err
	}
	gh, err := exec.LookPath("gh")
	if err != nil {
		pr.Why = "gh is not installed (https://cli.github.com)"
		pr.Commands = pr.Commands[1:]
		return pr, nil
	}
	cmd := exec.CommandContext(ctx, gh, "auth", "status")
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		pr.Why = "gh is not signed in (gh auth login): " + firstLine(string(out))
		pr.Commands = pr.Commands[1:]
		return pr, nil
	}
	cmd = exec.CommandContext(ctx, gh, ghArgs...)
	cmd.Dir = repo
	out, err := cmd.CombinedOutput()
	if err != nil {
		pr.Why = "gh pr create failed: " + firstLine(string(out))
		pr.Commands = pr.Commands[1:]
		return pr, nil
	}
	pr.Commands = nil
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://") {
			pr.URL = l
		}
	}
	text := "opened a pull request for " + branch + " into " + base
	if pr.URL != "" {
		text += ": " + pr.URL
	}
	if _, err := f.Board.Log.Event(ctx, world.SourceUser, id, text); err != nil {
		return pr, err
	}
	return pr, nil
}

func clipList(s []string, n int) string {
	if len(s) <= n {
		return strings.Join(s, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(s[:n], ", "), len(s)-n)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// shellJoin quotes args for a POSIX shell.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@", r))
		}) < 0 {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
