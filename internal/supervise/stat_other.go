//go:build !unix

package supervise

import (
	"context"
	"errors"
	"fmt"
)

// stat is not supported on this system.
func stat(_ context.Context, pid int) (procStat, error) {
	return procStat{}, fmt.Errorf("read process %d: %w", pid, errors.ErrUnsupported)
}
