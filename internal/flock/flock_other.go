//go:build !unix || solaris || aix

package flock

import (
	"context"
	"os"
)

// Lock is not available without flock(2): callers refuse to go on rather
// than risk two writers.
func Lock(ctx context.Context, path string, exclusive bool) (*os.File, error) {
	return nil, ErrUnsupported
}

// TryLock is not available without flock(2).
func TryLock(path string) (*os.File, bool, error) { return nil, false, ErrUnsupported }
