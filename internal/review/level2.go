package review

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/evidence"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/supervise"
	"github.com/cra-dev/cra/internal/world"
)

// loopTail is how much of a live run's log Level 2 reads for loop signs.
const loopTail = 64 << 10

// level2 stops each live board run that is stale (no log line for it and
// no output for stale_after) or shows loop signs, and sends its task
// back to pending with "continue". The restart is logged as Level 1
// logs its own ("restarted | reason: …"), so it counts towards Level 1's
// start limit; at the limit the task is blocked instead.
func (r *Recycler) level2(ctx context.Context, set config.RecyclerSettings, rep *Report) error {
	agents, err := r.Board.Log.CurrentIn(ctx, world.StatusActive)
	if err != nil {
		return err
	}
	active := supervise.ActiveAgents(agents)
	if len(active) == 0 {
		return nil
	}
	seen := map[string]time.Time{}
	for _, a := range agents {
		seen[a.ID] = a.LastSeen
	}
	var remote map[string]RemoteRun
	if r.Remote != nil {
		// Unreadable, the other hosts' runs wait for the next tick; this
		// host's are judged all the same.
		if remote, err = r.Remote.Runs(ctx); err != nil {
			r.warn(rep, "Level 2: read the runs of the fleet's other hosts: %v", err)
			remote = nil
		}
	}
	obs, err := supervise.Observe(ctx, statedir.At(r.StateDir).Runs(), active)
	if err != nil {
		return err
	}
	now := r.now()
	defer func() {
		r.mu.Lock()
		r.future.Prune()
		r.mu.Unlock()
	}()
	for _, a := range active {
		if rr, ok := remote[a.ID]; ok {
			// Another host holds the run: whatever of it this host
			// has (a run record of an earlier run here) is not it.
			r.level2Remote(ctx, set, rep, a, rr, seen[a.ID], now)
			continue
		}
		if id, ok := obs.Runs[a.ID]; a.Run == 0 || !ok || id.Run != a.Run {
			continue // no recorded run of this one: Level 1's business
		}
		proc := obs.Proc(a.ID, a.Run)
		if proc == nil {
			continue // gone: Level 1 restarts it
		}
		if on, err := r.Board.Has(ctx, a.ID); err != nil || !on {
			continue
		}
		rd := statedir.At(r.StateDir).Run(a.ID)
		logPath, alivePath := rd.Log(a.Run), rd.Alive(a.Run)
		// Times stamped after now (a clock stepped back) count from when
		// they were first seen: they never keep a run from going stale.
		r.mu.Lock()
		last, since := r.future.At("seen "+a.ID, seen[a.ID], now), r.future.At("active "+a.ID, a.Since, now)
		r.mu.Unlock()
		reason := staleReason(logPath, alivePath, last, since, now, set.StaleAfter, func(what string, t time.Time) time.Time {
			r.mu.Lock()
			defer r.mu.Unlock()
			return r.future.At(what+" "+a.ID, t, now)
		})
		if reason == "" {
			continue
		}
		k := supervise.Kill{PID: proc.PID, StartTime: proc.StartTime, PGID: proc.PGID, TaskID: a.ID, Run: a.Run, Reason: "Level 2", Detail: reason}
		rs, acted, err := r.restart(ctx, a, reason, set.StaleAfter, now, "", func(ctx context.Context) (bool, error) {
			stop := r.Stop
			if stop == nil {
				stop = supervise.Stop
			}
			return stop(ctx, k, 0)
		})
		if err != nil {
			r.warn(rep, "Level 2: restart %s: %v", a.ID, err)
			continue
		}
		if acted {
			rep.Restarted = append(rep.Restarted, rs)
		}
	}
	return nil
}

// staleReason says why a live run should be stopped, or "" when it
// should not: nothing moved for staleAfter (no output, no log line, and
// none of the signs the processor stamps the run's alive file with:
// parsed events, files written in its working copy, the CPU time of its
// process group; issue 29 item 4), or loop signs in its output's tail.
// clamp maps the files' times, which a clock stepped back may put after
// now, as the log's times were.
func staleReason(logPath, alivePath string, lastSeen, since, now time.Time, staleAfter time.Duration, clamp func(what string, t time.Time) time.Time) string {
	last := lastSeen
	if since.After(last) {
		last = since
	}
	if fi, err := os.Stat(alivePath); err == nil {
		if mod := clamp("alive", fi.ModTime()); mod.After(last) {
			last = mod
		}
	}
	fi, err := os.Stat(logPath)
	if err == nil {
		if mod := clamp("output", fi.ModTime()); mod.After(last) {
			last = mod
		}
	}
	if idle := now.Sub(last); idle >= staleAfter {
		return fmt.Sprintf("stale: no output and no log line for %s, nor any file written or CPU time used", idle.Round(time.Second))
	}
	if err != nil {
		return ""
	}
	if loops := evidence.DetectLoops(readTail(logPath, fi.Size(), loopTail)); len(loops) > 0 {
		l := loops[0]
		return fmt.Sprintf("looping: %q came %d times in a row", l.Line, l.Count)
	}
	return ""
}

func readTail(path string, size, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	off := max(size-n, 0)
	buf := make([]byte, size-off)
	m, _ := f.ReadAt(buf, off)
	s := string(buf[:m])
	if off > 0 {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:] // a whole first line
		}
	}
	return strings.ToValidUTF8(s, "")
}

// restart stops one live run (stop; on host, or on this host when host
// is "") and requeues its task with "continue", or blocks it at the
// start limit. A run that ended on its own before the signal (stop
// reports false) is left alone: its finish is the processor's to record,
// and its review the recycler's. It reports whether it acted.
func (r *Recycler) restart(ctx context.Context, a supervise.Active, reason string, staleAfter time.Duration, now time.Time, host string, stop func(context.Context) (bool, error)) (Restart, bool, error) {
	rs := Restart{ID: a.ID, Run: a.Run, Reason: reason}
	policy := levelTwoPolicy(r.Policy, staleAfter)
	starts, err := supervise.RecentRestarts(ctx, r.Board.Log, now.Add(-policy.Window))
	if err != nil {
		return rs, false, err
	}
	atLimit := policy.Next(starts[a.ID], now).Verdict == supervise.LimitReached
	stopped, err := stop(ctx)
	if err != nil {
		return rs, false, fmt.Errorf("stop run %d: %w", a.Run, err)
	}
	if !stopped {
		return rs, false, nil
	}
	where, output := "", fmt.Sprintf(".clean_room/runs/%s/", a.ID)
	if host != "" {
		where, output = " on host "+host, output+" on host "+host
	}
	blockWhy := "stopped by Level 2: " + reason + "; start limit reached"
	need := fmt.Sprintf("find why its agent stalls (its output is in %s), then tell it how to go on: cra answer %s '…'", output, a.ID)
	event, retry := "restarted | reason: "+reason+" (Level 2)", "continue: the run was stopped, "+reason
	if host != "" {
		// The same lines, on the condition that the log still has the
		// run active: its host may have logged its finish after this
		// tick read the log and before the revocation, which cannot tell
		// a run that ended from one that runs until its host releases
		// its lease.
		if atLimit {
			err = r.Board.BlockRun(ctx, a.ID, a.Run, blockWhy, need)
		} else {
			err = r.Board.RestartRun(ctx, a.ID, a.Run, event, retry)
		}
		if errors.Is(err, world.ErrMovedOn) {
			return rs, false, nil
		}
		rs.Blocked = atLimit
		switch {
		case err != nil:
		case atLimit:
			r.say("Level 2: stopped %s run %d%s (%s); start limit reached: blocked", a.ID, a.Run, where, reason)
		default:
			r.say("Level 2: stopped %s run %d%s (%s): continue", a.ID, a.Run, where, reason)
		}
		return rs, true, err
	}
	if atLimit {
		rs.Blocked = true
		r.say("Level 2: stopped %s run %d (%s); start limit reached: blocked", a.ID, a.Run, reason)
		return rs, true, r.Board.Block(ctx, a.ID, blockWhy, need)
	}
	if _, err := r.Board.Log.Event(ctx, world.SourceSystem, a.ID, event); err != nil {
		return rs, true, err
	}
	r.say("Level 2: stopped %s run %d (%s): continue", a.ID, a.Run, reason)
	return rs, true, r.Board.Requeue(ctx, a.ID, retry)
}

// levelTwoPolicy is Level 1's policy with a window long enough to hold
// its start limit of Level 2's restarts, which come stale_after apart at
// the soonest: with Level 1's 10 minutes and a 15-minute stale_after no
// two would ever share a window, and a run that always stalls would be
// restarted for ever.
func levelTwoPolicy(p supervise.Policy, staleAfter time.Duration) supervise.Policy {
	if p.Window <= 0 {
		p.Window = supervise.DefaultWindow
	}
	limit := p.Limit
	if limit <= 0 {
		limit = supervise.DefaultLimit
	}
	if w := time.Duration(limit+1) * staleAfter; w > p.Window {
		p.Window = w
	}
	return p
}
