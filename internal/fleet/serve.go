package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/cra-dev/cra/internal/fleet/runner"
	"github.com/cra-dev/cra/internal/pgstore"
)

// DefaultPassEvery is how often the daemon runs a Level 1 pass, and
// DefaultTickEvery how often its processor looks for pending tasks.
const (
	DefaultPassEvery = 5 * time.Second
	DefaultTickEvery = 2 * time.Second
)

// Services returns the daemon's loops: Level 1 every PassEvery, and, as
// w allows, the processor, the recycler and the supervisors. On a board
// in PostgreSQL the host is a worker of the fleet (issue 34 items 3 and
// 5): its processor runs only the tasks it claims, a keeper renews their
// leases and sends its heartbeat, its Level 1 acts on its own runs only,
// and the recycler and the supervisors run on the one host that leads,
// beside the sweep of the leases of hosts that died.
func (f *Fleet) Services(ctx context.Context, w Workers) ([]Service, error) {
	pass, tick := w.PassEvery, w.TickEvery
	if pass <= 0 {
		pass = DefaultPassEvery
	}
	if tick <= 0 {
		tick = DefaultTickEvery
	}
	var wk *worker
	if f.closeDB != nil {
		var err error
		if wk, err = f.openWorker(ctx); err != nil {
			return nil, err
		}
	}
	var out []Service
	if w.Processor {
		p := f.Processor()
		if wk != nil {
			wk.runFor(p)
		}
		// Processor.Loop stops the runs it started when ctx ends, and
		// waits for their finish lines.
		out = append(out, ServiceFunc(func(ctx context.Context) error { return p.Loop(ctx, tick) }))
	}
	// Level 1 is made after the processor, so that the runs it holds are
	// its own (Level1).
	l1 := f.Level1(w.Out, false)
	out = append(out, &Every{Name: "Level 1 pass", Interval: pass, Out: w.Out, Pass: func(ctx context.Context) error {
		_, err := l1.Run(ctx)
		return err
	}})
	var shared []Service
	if w.Recycler {
		r, err := f.Recycler(ctx)
		if err != nil {
			return nil, err
		}
		if wk != nil {
			// The leader's Level 2 judges the other hosts' runs by the
			// last output their renewals report.
			r.Remote = newRemoteRuns(wk.db, wk.host)
		}
		if w.Processor {
			// A finished run is reviewed at once, not at the next
			// interval's tick.
			f.Processor().OnFinish = func(string) { r.Wake() }
		}
		shared = append(shared, ServiceFunc(r.Loop))
	}
	if w.Supervisors {
		r, err := f.Supervisors(ctx, w.Out)
		if err != nil {
			return nil, err
		}
		shared = append(shared, ServiceFunc(r.Loop))
	}
	// The knowledge store syncs with the fleet's remote while [fleet]
	// push is on (issue 34 item 6), on every host: each host's prompts
	// read it.
	out = append(out, f.knowledgeService(w.Out))
	if wk == nil {
		return append(out, shared...), nil
	}
	slots, grace := 0, runner.DefaultGrace
	if w.Processor {
		slots, grace = f.Processor().MaxParallel(), f.Processor().Grace
	}
	out = append(out, ServiceFunc(wk.keeper(slots, grace, f.logger).Run))
	// The shared duties run on one host at a time: the sweep of expired
	// leases, then the recycler and the supervisors.
	sweep := &Every{Name: "lease sweep", Interval: wk.lease / 3, Now: true, Out: w.Out, Pass: func(ctx context.Context) error {
		return wk.sweep(ctx, l1.Policy)
	}}
	duties := append([]Service{sweep}, shared...)
	out = append(out, ServiceFunc((&pgstore.Elector{Fleet: wk.db, Host: wk.host, Lease: wk.lease, Logger: f.logger, Now: f.now,
		Duties: func(ctx context.Context) error { return RunGroup(ctx, duties...) }}).Run))
	return out, nil
}

// Serve is the daemon's work once it listens: a first Level 1 pass that
// takes over from a daemon that died (kill -9), whose runs, still alive,
// have no one waiting for them (they are stopped and their tasks
// restarted), then the loops w names until ctx ends, stopped together.
// On a fleet the first pass takes over only the runs whose leases the
// database still gives this host (its former daemon's), and lets those
// leases go once their tasks are restarted.
func (f *Fleet) Serve(ctx context.Context, w Workers) error {
	services, err := f.Services(ctx, w)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while it started
		}
		return err
	}
	if err := f.takeOver(ctx, w.Out); err != nil && ctx.Err() == nil && w.Out != nil {
		fmt.Fprintf(w.Out, "warning: Level 1 pass: %v\n", err)
	}
	return RunGroup(ctx, services...)
}

// takeOver is the daemon's first Level 1 pass (Serve).
func (f *Fleet) takeOver(ctx context.Context, out io.Writer) error {
	f.mu.Lock()
	wk := f.worker
	f.mu.Unlock()
	pass := f.Level1(out, true)
	if wk == nil {
		_, err := pass.Run(ctx)
		return err
	}
	former, err := wk.mine(ctx)
	if err != nil {
		return err
	}
	ids := map[string]bool{}
	for _, l := range former {
		ids[l.TaskID] = true
	}
	pass.Owned = func(context.Context) (func(string) bool, error) {
		return func(id string) bool { return ids[id] }, nil
	}
	_, err = pass.Run(ctx)
	for _, l := range former {
		if _, rerr := wk.db.Release(ctx, wk.host, l.RunID); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	return err
}
