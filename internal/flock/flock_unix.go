//go:build unix && !solaris && !aix

package flock

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

// Lock opens (creating) the file at path and takes a flock on it, shared
// or exclusive, waiting until ctx ends. The wait polls with LOCK_NB,
// sleeping a little longer each time (pollMin doubling up to pollMax): a
// blocking flock(2) cannot be interrupted, so a waiter whose ctx ended
// would leave a goroutine, and a descriptor, blocked until the holder let
// go.
func Lock(ctx context.Context, path string, exclusive bool) (*os.File, error) {
	f, ok, err := try(path, exclusive)
	if err != nil || ok {
		return f, err
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	t := time.NewTimer(pollMin)
	defer t.Stop()
	for wait := pollMin; ; wait = min(2*wait, pollMax) {
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-t.C:
		}
		switch err := flock(f, how|syscall.LOCK_NB); {
		case err == nil:
			return f, nil
		case !errors.Is(err, syscall.EWOULDBLOCK):
			f.Close()
			return nil, err
		}
		t.Reset(wait)
	}
}

// The bounds of Lock's sleeps between tries.
const (
	pollMin = 5 * time.Millisecond
	pollMax = 100 * time.Millisecond
)

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
