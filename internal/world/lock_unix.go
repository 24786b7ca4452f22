//go:build unix && !solaris && !aix

package world

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile opens the lock file at path and takes a flock(2) on it: shared
// for small event appends, exclusive for long entries, agent entries and
// compaction. Each call opens its own descriptor, so goroutines of one
// process exclude each other exactly as processes do. Closing the returned
// file releases the lock.
func lockFile(ctx context.Context, path string, exclusive bool) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open world log lock: %w", err)
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	err = flock(f, how|syscall.LOCK_NB)
	if err == nil {
		return f, nil
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return nil, fmt.Errorf("lock world log: %w", err)
	}
	// Contended: wait in the kernel, but let ctx end the wait. A goroutine
	// that gets the lock after ctx ended releases it by closing f.
	done := make(chan error, 1)
	go func() { done <- flock(f, how) }()
	select {
	case err := <-done:
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock world log: %w", err)
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

// fileID returns the device and inode of fi, which tell a log replaced by
// compaction (or by an editor) from the one an index or marker describes.
func fileID(fi os.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino)
	}
	return 0, 0
}
