package index

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSecondIndexWaits: an index run that finds another writer waits for
// it, naming its pid, and runs when the lock is free; a wait that runs out
// names the holder and what to do.
func TestSecondIndexWaits(t *testing.T) {
	ctx := context.Background()
	repo := t.TempDir()
	if err := os.WriteFile(filepath.Join(repo, "a.py"), []byte("def a():\n    return 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stateDir := filepath.Join(repo, ".clean_room")
	os.MkdirAll(stateDir, 0o755)
	held, err := Lock(ctx, stateDir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}

	b := NewBuilderIn(stateDir)
	b.LockWait = 300 * time.Millisecond
	if _, err := b.Run(ctx, repo); !errors.As(err, new(*BusyError)) || !strings.Contains(err.Error(), "pid "+itoa(os.Getpid())) {
		t.Fatalf("got %v, want a *BusyError naming pid %d", err, os.Getpid())
	}

	b.LockWait = time.Minute
	waited := make(chan int, 1)
	b.Waiting = func(pid int) { waited <- pid }
	done := make(chan error, 1)
	go func() {
		_, err := b.Run(ctx, repo)
		done <- err
	}()
	if pid := <-waited; pid != os.Getpid() {
		t.Errorf("waiting for pid %d, want %d", pid, os.Getpid())
	}
	select {
	case err := <-done:
		t.Fatalf("ran while the lock was held: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	held.Close()
	if err := <-done; err != nil {
		t.Fatalf("after the lock was freed: %v", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
