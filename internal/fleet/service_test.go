package fleet

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestRunGroupStopsTogether: when ctx ends every service stops, and
// RunGroup returns only once each has returned.
func TestRunGroupStopsTogether(t *testing.T) {
	var stopped atomic.Int32
	svc := ServiceFunc(func(ctx context.Context) error {
		<-ctx.Done()
		time.Sleep(10 * time.Millisecond) // a run's finish line being written
		stopped.Add(1)
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- RunGroup(ctx, svc, svc, svc) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("got %v, want nil", err)
	}
	if n := stopped.Load(); n != 3 {
		t.Errorf("got %d services stopped when RunGroup returned, want 3", n)
	}
}

// TestRunGroupFailureStopsTheRest: one service that fails stops the
// others, and its error is returned.
func TestRunGroupFailureStopsTheRest(t *testing.T) {
	boom := errors.New("boom")
	var stopped atomic.Int32
	waiter := ServiceFunc(func(ctx context.Context) error {
		<-ctx.Done()
		stopped.Add(1)
		return ctx.Err() // a canceled context is no failure
	})
	failer := ServiceFunc(func(ctx context.Context) error { return boom })
	err := RunGroup(context.Background(), waiter, failer, waiter)
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want %v", err, boom)
	}
	if n := stopped.Load(); n != 2 {
		t.Errorf("got %d other services stopped, want 2", n)
	}
}

// TestEvery: the first pass runs at once only when asked; a failed pass
// is a warning and the loop goes on; a bad interval is an error.
func TestEvery(t *testing.T) {
	var passes atomic.Int32
	var out bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	e := &Every{Name: "test loop", Interval: time.Millisecond, Now: true, Out: &out, Pass: func(ctx context.Context) error {
		if passes.Add(1) == 3 {
			cancel()
		}
		return errors.New("a locked file")
	}}
	if err := e.Run(ctx); err != nil {
		t.Fatalf("got %v, want nil when ctx ends", err)
	}
	if n := passes.Load(); n != 3 {
		t.Errorf("got %d passes, want 3 (the loop goes on after a failed pass)", n)
	}
	if !strings.Contains(out.String(), "warning: test loop: a locked file") {
		t.Errorf("got %q, want the failed passes as warnings", out.String())
	}
	if err := (&Every{Name: "x", Pass: e.Pass}).Run(context.Background()); err == nil || !strings.Contains(err.Error(), "interval") {
		t.Errorf("a zero interval: got %v, want an error naming it", err)
	}
	// Without Now the first pass waits an interval: a context ended
	// before then runs none.
	passes.Store(0)
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if err := (&Every{Name: "y", Interval: time.Hour, Pass: e.Pass}).Run(ctx); err != nil || passes.Load() != 0 {
		t.Errorf("got %v and %d passes, want nil and 0", err, passes.Load())
	}
}
