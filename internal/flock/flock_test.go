package flock

import (
	"context"
	"errors"
	"path/filepath"
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
