package fleet

import (
	"context"
	"fmt"
	"time"

	"github.com/cra-dev/cra/internal/pgstore"
	"github.com/cra-dev/cra/internal/review"
)

// remoteRuns is Level 2's view of the runs the fleet's other hosts hold
// (review.RemoteRuns, issue 34 item 5): their leases, each with its run's
// last output as its host's renewals report it, and a stop that revokes
// a lease, which its host's keeper obeys by stopping its copy.
type remoteRuns struct {
	fleet *pgstore.Fleet
	host  string           // this host: its runs are Level 2's local ones
	now   func() time.Time // this host's clock
}

// newRemoteRuns returns the runs of f's hosts other than host, for the
// recycler of the leader that host is.
func newRemoteRuns(f *pgstore.Fleet, host string) review.RemoteRuns {
	return &remoteRuns{fleet: f, host: host, now: time.Now}
}

// Runs returns the leases of the other hosts, live and expired (a sweep
// or Level 2, whichever comes first, restarts an expired one: the other
// finds it gone), by task. Their times, which the database's clock
// stamped, are put on this host's clock by the age they had when read,
// so that a skew between the two does not age a run or keep it young.
func (r *remoteRuns) Runs(ctx context.Context) (map[string]review.RemoteRun, error) {
	st, err := r.fleet.Status(ctx)
	if err != nil {
		return nil, err
	}
	now := r.now()
	local := func(t time.Time) time.Time {
		if t.IsZero() {
			return t
		}
		return now.Add(t.Sub(st.Now))
	}
	out := map[string]review.RemoteRun{}
	add := func(ls []pgstore.Lease) {
		for _, l := range ls {
			if l.Host == r.host {
				continue
			}
			out[l.TaskID] = review.RemoteRun{Host: l.Host, RunID: l.RunID,
				LastOutput: local(l.LastOutput), Renewed: local(l.Renewed), Revoked: l.Revoked}
		}
	}
	for _, h := range st.Hosts {
		add(h.Runs)
	}
	add(st.Orphans)
	return out, nil
}

// Stop revokes run runID's lease on task taskID (pgstore.Fleet.Revoke).
func (r *remoteRuns) Stop(ctx context.Context, taskID, runID, why string) (bool, error) {
	ok, err := r.fleet.Revoke(ctx, taskID, runID, why)
	if err != nil {
		return false, fmt.Errorf("level 2: %w", err)
	}
	return ok, nil
}
