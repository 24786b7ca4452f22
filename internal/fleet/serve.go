package fleet

import (
	"context"
	"fmt"
	"time"
)

// DefaultPassEvery is how often the daemon runs a Level 1 pass, and
// DefaultTickEvery how often its processor looks for pending tasks.
const (
	DefaultPassEvery = 5 * time.Second
	DefaultTickEvery = 2 * time.Second
)

// Services returns the daemon's loops: Level 1 every PassEvery, and, as
// w allows, the processor, the recycler and the supervisors.
func (f *Fleet) Services(ctx context.Context, w Workers) ([]Service, error) {
	if err := f.runsHere(); err != nil {
		return nil, err
	}
	pass, tick := w.PassEvery, w.TickEvery
	if pass <= 0 {
		pass = DefaultPassEvery
	}
	if tick <= 0 {
		tick = DefaultTickEvery
	}
	var out []Service
	if w.Processor {
		p := f.Processor()
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
	if w.Recycler {
		r, err := f.Recycler(ctx)
		if err != nil {
			return nil, err
		}
		if w.Processor {
			// A finished run is reviewed at once, not at the next
			// interval's tick.
			f.Processor().OnFinish = func(string) { r.Wake() }
		}
		out = append(out, ServiceFunc(r.Loop))
	}
	if w.Supervisors {
		r, err := f.Supervisors(ctx, w.Out)
		if err != nil {
			return nil, err
		}
		out = append(out, ServiceFunc(r.Loop))
	}
	// The knowledge store syncs with the fleet's remote while [fleet]
	// push is on (issue 34 item 6).
	out = append(out, f.knowledgeService(w.Out))
	return out, nil
}

// Serve is the daemon's work once it listens: a first Level 1 pass that
// takes over from a daemon that died (kill -9), whose runs, still alive,
// have no one waiting for them (they are stopped and their tasks
// restarted), then the loops w names until ctx ends, stopped together.
func (f *Fleet) Serve(ctx context.Context, w Workers) error {
	services, err := f.Services(ctx, w)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while it started
		}
		return err
	}
	if _, err := f.Level1(w.Out, true).Run(ctx); err != nil && ctx.Err() == nil && w.Out != nil {
		fmt.Fprintf(w.Out, "warning: Level 1 pass: %v\n", err)
	}
	return RunGroup(ctx, services...)
}
