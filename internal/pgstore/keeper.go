package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// Keeper is a host's side of its leases: every Lease/3 it sends the
// host's heartbeat and renews the leases of the runs it holds, and hands
// each run whose lease another host took over (or a sweep freed, or the
// leader revoked) to Lost, which stops this host's copy rather than let
// it finish twice. A host cut off from the database for longer than its
// lease finds, on its first pass back, which of its runs were restarted
// elsewhere.
//
// It also fences itself: a run whose lease it could not renew for Lease
// (counted by this host's clock from when it asked for the last renewal
// that succeeded, which is before the database stamped it, so the lease
// in the database outlives the count) is handed to Lost at that deadline,
// on a timer of its own, whatever the database is doing: a host cut off
// stops its copies before another host may take them over. Each run goes
// to Lost once.
type Keeper struct {
	// Fleet is the database; required.
	Fleet *Fleet
	// Host is this host as its heartbeat gives it (name, slots,
	// version, start); required.
	Host Host
	// Lease is [fleet] lease; required.
	Lease time.Duration
	// Held returns the leases of this host's live runs, each with its
	// run's LastOutput (Renew stores it for Level 2); required. A run
	// new since the last pass counts its lease from its Renewed (the
	// claim's time, by the database's clock, put on this host's by the
	// skew the heartbeats measure).
	Held func() []Lease
	// Lost is called with each run this host must stop, once per run,
	// one call at a time; required.
	Lost func(Lost)
	// Logger gets the passes' errors; nil discards.
	Logger *slog.Logger
	// Now is this host's clock; nil is time.Now.
	Now func() time.Time
	// Margin is how long before a run's lease runs out, unrenewed, the
	// run is handed to Lost: the time stopping it takes (SIGTERM, the
	// grace, SIGKILL), so that its copy has ended before another host may
	// take the task over. It is at most half the lease; zero hands it at
	// the lease's end.
	Margin time.Duration

	mu   sync.Mutex
	runs map[string]*keptRun // by run ID: the runs Held gave at the last pass
	// skew bounds the database's clock minus this host's from above
	// (the heartbeat's time minus when it was asked); known once one
	// heartbeat went through.
	skew      time.Duration
	skewKnown bool
	lostMu    sync.Mutex // one Lost call at a time
}

// keptRun is what the Keeper knows of one held run.
type keptRun struct {
	lease Lease
	// since is when this host asked for the last renewal that went
	// through (or the claim), by its clock; deadline is since + Lease.
	since, deadline time.Time
	handed          bool // given to Lost
}

func (k *Keeper) now() time.Time {
	if k.Now != nil {
		return k.Now()
	}
	return time.Now()
}

// Run makes a pass every Lease/3 until ctx ends, and hands each held run
// to Lost at its deadline even while a pass hangs.
func (k *Keeper) Run(ctx context.Context) error {
	if k.Fleet == nil || k.Held == nil || k.Lost == nil || k.Lease <= 0 {
		return errors.New("lease keeper: give Fleet, Held, Lost and a positive Lease")
	}
	t := time.NewTicker(k.Lease / 3)
	defer t.Stop()
	done := make(chan error, 1)
	passing := false
	pass := func() {
		passing = true
		go func() { done <- k.Pass(ctx) }()
	}
	pass()
	for {
		var fence <-chan time.Time
		var timer *time.Timer
		if d, ok := k.nextDeadline(); ok {
			timer = time.NewTimer(max(d.Sub(k.now()), 0))
			fence = timer.C
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			if passing {
				<-done
			}
			return nil
		case err := <-done:
			passing = false
			if err != nil && ctx.Err() == nil && k.Logger != nil {
				// The database is out of reach: the next pass tries
				// again, and learns what was lost meanwhile.
				k.Logger.Warn("lease keeper: pass failed", "host", k.Host.Name, "err", err)
			}
		case <-t.C:
			if !passing {
				pass()
			}
		case <-fence:
			k.Fence()
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// Pass sends the heartbeat, renews the held leases, calls Lost for each
// run lost, then fences (Fence). The heartbeat and the renewal each give
// up after Lease/3: a connection that hangs does not hold the pass.
func (k *Keeper) Pass(ctx context.Context) error {
	every := k.Lease / 3
	asked := k.now()
	bctx, cancel := context.WithTimeout(ctx, every)
	at, err := k.Fleet.beat(bctx, k.Host)
	cancel()
	held := k.track(k.Held(), k.now(), at.Sub(asked), err == nil)
	if err == nil {
		var lost []Lost
		asked = k.now()
		rctx, cancel := context.WithTimeout(ctx, every)
		lost, err = k.Fleet.Renew(rctx, k.Host.Name, held, k.Lease)
		cancel()
		if err == nil {
			k.renewed(held, lost, asked)
			k.hand(lost)
		} else {
			err = fmt.Errorf("lease keeper: %w", err)
		}
	}
	k.Fence()
	return err
}

// track records the runs of held (new ones with the deadline of their
// claim, ended ones forgotten) and returns those to renew: the held runs
// not handed to Lost yet.
func (k *Keeper) track(held []Lease, now time.Time, skew time.Duration, measured bool) []Lease {
	k.mu.Lock()
	defer k.mu.Unlock()
	if measured {
		k.skew, k.skewKnown = skew, true
	}
	if k.runs == nil {
		k.runs = map[string]*keptRun{}
	}
	live := make(map[string]bool, len(held))
	var renew []Lease
	for _, l := range held {
		live[l.RunID] = true
		r, ok := k.runs[l.RunID]
		if !ok {
			r = &keptRun{since: k.claimed(l, now)}
			r.deadline = r.since.Add(k.fenceAfter())
			k.runs[l.RunID] = r
		}
		r.lease = l
		if !r.handed {
			renew = append(renew, l)
		}
	}
	for run := range k.runs {
		if !live[run] {
			delete(k.runs, run)
		}
	}
	return renew
}

// claimed returns when, by this host's clock, lease l's last renewal
// (its claim, for a run new to the Keeper) was at the latest: its
// Renewed, stamped by the database, less the skew's bound; with no skew
// measured yet (no heartbeat went through), the earlier of Renewed and
// now. The caller holds k.mu.
func (k *Keeper) claimed(l Lease, now time.Time) time.Time {
	switch {
	case l.Renewed.IsZero():
		return now
	case k.skewKnown:
		return l.Renewed.Add(-k.skew)
	case l.Renewed.Before(now):
		return l.Renewed
	}
	return now
}

// renewed moves the deadline of each run of held that lost does not
// name to Lease after asked.
func (k *Keeper) renewed(held []Lease, lost []Lost, asked time.Time) {
	gone := make(map[string]bool, len(lost))
	for _, l := range lost {
		gone[l.RunID] = true
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, l := range held {
		if r := k.runs[l.RunID]; r != nil && !gone[l.RunID] {
			r.since, r.deadline = asked, asked.Add(k.fenceAfter())
		}
	}
}

// hand calls Lost for each of lost not handed to it before.
func (k *Keeper) hand(lost []Lost) {
	k.lostMu.Lock()
	defer k.lostMu.Unlock()
	for _, l := range lost {
		k.mu.Lock()
		r := k.runs[l.RunID]
		if r == nil {
			r = &keptRun{lease: Lease{TaskID: l.TaskID, RunID: l.RunID}}
			k.runs[l.RunID] = r
		}
		first := !r.handed
		r.handed = true
		k.mu.Unlock()
		if first {
			k.Lost(l)
		}
	}
}

// Fence hands to Lost each held run whose deadline passed: its lease may
// have run out in the database, and another host may take it over.
func (k *Keeper) Fence() {
	now := k.now()
	var lost []Lost
	k.mu.Lock()
	for run, r := range k.runs {
		if r.handed || now.Before(r.deadline) {
			continue
		}
		lost = append(lost, Lost{TaskID: r.lease.TaskID, RunID: run,
			Reason: fmt.Sprintf("host %s could not renew its lease on run %s of %s since %s: it may have run out (another host may restart the task): stop this copy",
				k.Host.Name, run, r.lease.TaskID, r.since.UTC().Format(time.RFC3339))})
	}
	k.mu.Unlock()
	slices.SortFunc(lost, func(a, b Lost) int { return strings.Compare(a.TaskID, b.TaskID) })
	k.hand(lost)
}

// nextDeadline returns the earliest deadline of the runs not handed to
// Lost.
func (k *Keeper) nextDeadline() (time.Time, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var next time.Time
	for _, r := range k.runs {
		if !r.handed && (next.IsZero() || r.deadline.Before(next)) {
			next = r.deadline
		}
	}
	return next, !next.IsZero()
}

// fenceAfter is how long after its last renewal was asked for a run is
// handed to Lost: the lease less Margin (at most half of it).
func (k *Keeper) fenceAfter() time.Duration {
	return k.Lease - min(max(k.Margin, 0), k.Lease/2)
}
