//go:build unix

package index

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

// tryLock takes f's exclusive flock(2) if it is free.
func tryLock(f *os.File) (bool, error) {
	err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

// waitLock polls for f's lock until ctx ends: a blocking flock(2) could
// not be given up on timeout without leaving a thread behind.
func waitLock(ctx context.Context, f *os.File) error {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		if ok, err := tryLock(f); ok || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
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
