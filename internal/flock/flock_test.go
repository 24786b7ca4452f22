package flock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestExclusion: an exclusive lock keeps out another, shared ones share,
// a wait ends with its context, and closing releases.
func TestExclusion(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "x.lock")
	a, err := Lock(ctx, path, true)
	if err != nil {
		t.Fatal(err)
	}
	if f, ok, err := TryLock(path); ok || err != nil || f != nil {
		t.Fatalf("TryLock while held: %v %v %v", f, ok, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := Lock(wctx, path, false); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a shared lock while held exclusively: got %v, want the wait to end with its context", err)
	}
	got := make(chan error, 1)
	go func() {
		b, err := Lock(ctx, path, true)
		if err == nil {
			b.Close()
		}
		got <- err
	}()
	a.Close()
	if err := <-got; err != nil {
		t.Fatalf("after the release: %v", err)
	}
	s1, err := Lock(ctx, path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	s2, err := Lock(ctx, path, false)
	if err != nil {
		t.Fatalf("two shared locks: %v", err)
	}
	s2.Close()
	if f, ok, _ := TryLock(path); ok {
		f.Close()
		t.Fatal("an exclusive lock beside a shared one")
	}
}

// TestLockLeavesNothingWhenCtxEnds: a wait that ends with its context
// returns the context's error at once and leaves no goroutine and no open
// descriptor behind, and the lock is free to take once its holder lets go.
func TestLockLeavesNothingWhenCtxEnds(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "x.lock")
	held, err := Lock(ctx, path, true)
	if err != nil {
		t.Fatal(err)
	}
	goroutines, fds := runtime.NumGoroutine(), openFDs(t)
	for _, exclusive := range []bool{true, false} {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
		start := time.Now()
		f, err := Lock(wctx, path, exclusive)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || f != nil {
			t.Fatalf("Lock(exclusive %v) while held: got %v, %v; want the context's error", exclusive, f, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("Lock returned %v after its context ended", d)
		}
	}
	// Goroutines of the runtime and the test framework may come and go:
	// wait, bounded, for the count to settle back.
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > goroutines {
		buf := make([]byte, 1<<16)
		t.Errorf("goroutines: got %d, want %d\n%s", n, goroutines, buf[:runtime.Stack(buf, true)])
	}
	if n := openFDs(t); n > fds {
		t.Errorf("open descriptors: got %d, want %d", n, fds)
	}
	held.Close()
	f, ok, err := TryLock(path)
	if !ok || err != nil {
		t.Fatalf("TryLock after the holder let go: got %v, %v; want the lock", ok, err)
	}
	f.Close()
}

// openFDs counts this process's open descriptors where /proc tells, else
// returns 0.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return len(ents)
}
