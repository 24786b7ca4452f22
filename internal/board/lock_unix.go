//go:build unix && !solaris && !aix

package board

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock(2) on the file at path, waiting until
// ctx ends. Each call opens its own descriptor, so goroutines of one
// process exclude each other exactly as processes do; closing the returned
// file releases the lock.
func lockFile(ctx context.Context, path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open board lock: %w", err)
	}
	err = flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		return f, nil
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return nil, fmt.Errorf("lock board: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- flock(f, syscall.LOCK_EX) }()
	select {
	case err := <-done:
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock board: %w", err)
		}
		return f, nil
	case <-ctx.Done():
		go func() {
			<-done
			f.Close()
		}()
		return nil, ctx.Err()
	}
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
