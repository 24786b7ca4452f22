//go:build !unix || solaris || aix

package world

import (
	"context"
	"errors"
	"os"
)

// lockFile is not implemented where syscall has no flock(2): appends without a lock could tear
// lines, so the log refuses to write rather than risk it.
func lockFile(ctx context.Context, path string, exclusive bool) (*os.File, error) {
	return nil, errors.New("the world log needs flock(2), which this system does not have")
}

func fileID(fi os.FileInfo) (dev, ino uint64) { return 0, 0 }
