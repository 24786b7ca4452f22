//go:build unix && !solaris && !aix

package world

import (
	"context"
	"fmt"
	"os"
	"syscall"

	"github.com/cra-dev/cra/internal/flock"
)

// lockFile takes the world log's flock at path: shared for small event
// appends, exclusive for long entries, agent entries and compaction.
// Closing the returned file releases the lock.
func lockFile(ctx context.Context, path string, exclusive bool) (*os.File, error) {
	f, err := flock.Lock(ctx, path, exclusive)
	if err != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("lock world log: %w", err)
	}
	return f, err
}

// fileID returns the device and inode of fi, which tell a log replaced by
// compaction (or by an editor) from the one an index or marker describes.
func fileID(fi os.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino)
	}
	return 0, 0
}
