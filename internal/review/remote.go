package review

import (
	"context"
	"fmt"
	"time"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/supervise"
)

// RemoteRuns is what Level 2 on the fleet's leader knows of the runs the
// other hosts hold (issue 34 item 5): their hosts' heartbeats, which
// carry each run's last output, and a way to stop a run there (revoking
// its lease, which its host's lease keeper obeys by stopping its copy).
type RemoteRuns interface {
	// Runs returns, by task ID, the runs hosts other than this one hold
	// now.
	Runs(ctx context.Context) (map[string]RemoteRun, error)
	// Stop takes run runID of task taskID from its host, for why. It
	// reports whether the run still held its task: false when it ended,
	// or was stopped or taken over meanwhile.
	Stop(ctx context.Context, taskID, runID, why string) (bool, error)
}

// RemoteRun is a run another host holds, as its heartbeats tell it. The
// times are by this host's clock.
type RemoteRun struct {
	// Host holds the run; RunID names it (its lease's).
	Host, RunID string
	// LastOutput is when the run last moved (output, files written, CPU
	// time: what its host stamps its liveness file with); zero when its
	// host never said.
	LastOutput time.Time
	// Renewed is when its host last renewed its lease.
	Renewed time.Time
	// Revoked is why its lease was taken from it already (a Stop whose
	// restart did not follow: the log says the task is still active);
	// "" when it was not.
	Revoked string
}

// level2Remote judges one active run another host holds, from the later
// of its last log line, its active entry and its host's last report of
// its output, with the clamping of times after now that this host's runs
// get, and stops it (Stop) when stale_after passed, then restarts it as
// a run of this host's. Loop signs are not read: the run's output is on
// its host, and only its time comes through the heartbeats.
func (r *Recycler) level2Remote(ctx context.Context, set config.RecyclerSettings, rep *Report, a supervise.Active, rr RemoteRun, seen, now time.Time) {
	if a.Run == 0 {
		return // no run named in the entry: none counts as stale
	}
	if on, err := r.Board.Has(ctx, a.ID); err != nil || !on {
		return
	}
	var reason string
	stop := func(ctx context.Context) (bool, error) { return r.Remote.Stop(ctx, a.ID, rr.RunID, reason) }
	if rr.Revoked != "" {
		// Stopped by an earlier tick whose restart failed: restart it.
		reason = rr.Revoked
		stop = func(context.Context) (bool, error) { return true, nil }
	} else {
		r.mu.Lock()
		last := r.future.At("seen "+a.ID, seen, now)
		for what, t := range map[string]time.Time{"active": a.Since, "remote output": rr.LastOutput} {
			if t = r.future.At(what+" "+a.ID, t, now); t.After(last) {
				last = t
			}
		}
		r.mu.Unlock()
		idle := now.Sub(last)
		if idle < set.StaleAfter {
			return
		}
		reason = fmt.Sprintf("stale: no output and no log line for %s, nor any file written or CPU time used (on host %s)",
			idle.Round(time.Second), rr.Host)
	}
	rs, acted, err := r.restart(ctx, a, reason, set.StaleAfter, now, rr.Host, stop)
	if err != nil {
		r.warn(rep, "Level 2: restart %s on host %s: %v", a.ID, rr.Host, err)
		return
	}
	if acted {
		rep.Restarted = append(rep.Restarted, rs)
	}
}
