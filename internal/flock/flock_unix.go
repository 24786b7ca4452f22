//go:build unix && !solaris && !aix

package flock

import (
	"context"
	"errors"
	"os"
	"syscall"
)

// Lock opens (creating) the file at path and takes a flock on it, shared
// or exclusive, waiting until ctx ends. A goroutine that gets the lock
// after ctx ended releases it by closing the file.
func Lock(ctx context.Context, path string, exclusive bool) (*os.File, error) {
	f, ok, err := try(path, exclusive)
	if err != nil || ok {
		return f, err
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	done := make(chan error, 1)
	go func() { done <- flock(f, how) }()
	select {
	case err := <-done:
		if err != nil {
			f.Close()
			return nil, err
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

// TryLock takes an exclusive flock on the file at path if it is free: ok
// is false, and f nil, when another holds it.
func TryLock(path string) (f *os.File, ok bool, err error) {
	f, ok, err = try(path, true)
	if err == nil && !ok {
		f.Close()
		f = nil
	}
	return f, ok, err
}

// try opens path and tries the lock once; f stays open either way unless
// err is set.
func try(path string, exclusive bool) (*os.File, bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, false, err
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	err = flock(f, how|syscall.LOCK_NB)
	switch {
	case err == nil:
		return f, true, nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		return f, false, nil
	}
	f.Close()
	return nil, false, err
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
