//go:build !unix || solaris || aix

package board

import (
	"context"
	"errors"
	"os"
)

// lockFile is not implemented where syscall has no flock(2): the board
// refuses to change rather than let two writers race (as the world log
// does).
func lockFile(ctx context.Context, path string) (*os.File, error) {
	return nil, errors.New("the task board needs flock(2), which this system does not have")
}
