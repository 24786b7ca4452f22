package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Service is a background loop of the daemon: it works until ctx ends,
// then returns nil; an error is a loop that cannot go on. The work of one
// pass sits in a method of its own (Processor.Tick, Recycler.Tick,
// Runner.Check, Pass.Run), which the commands that run once call.
type Service interface {
	Run(ctx context.Context) error
}

// ServiceFunc makes a function a Service.
type ServiceFunc func(ctx context.Context) error

// Run calls f.
func (f ServiceFunc) Run(ctx context.Context) error { return f(ctx) }

// Every is a Service that calls Pass every Interval until ctx ends. A
// pass's error is written to Out and the loop goes on: one failed pass
// (a locked file, a model down) must not stop a daemon.
type Every struct {
	// Name names the loop in its warnings.
	Name string
	// Interval is the time between passes; required.
	Interval time.Duration
	// Now runs the first pass at once; unset, the first pass waits an
	// Interval.
	Now bool
	// Pass is one pass; required.
	Pass func(ctx context.Context) error
	// Out gets a warning per failed pass; nil discards.
	Out io.Writer
}

// Run runs the passes until ctx ends.
func (e *Every) Run(ctx context.Context) error {
	if e.Interval <= 0 {
		return fmt.Errorf("%s: interval %v: must be > 0", e.Name, e.Interval)
	}
	t := time.NewTicker(e.Interval)
	defer t.Stop()
	first := e.Now
	for {
		if !first {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
		}
		first = false
		if err := e.Pass(ctx); err != nil && ctx.Err() == nil && e.Out != nil {
			fmt.Fprintf(e.Out, "warning: %s: %v\n", e.Name, err)
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// RunGroup runs services until ctx ends or one of them fails, then stops
// them all together and waits for each to return. It returns the first
// failure, nil when ctx ended them.
func RunGroup(ctx context.Context, services ...Service) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for _, s := range services {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Run(ctx)
			if err != nil && !errors.Is(err, context.Canceled) {
				once.Do(func() { first = err })
			}
			cancel() // one returns: the group stops
		}()
	}
	wg.Wait()
	return first
}
