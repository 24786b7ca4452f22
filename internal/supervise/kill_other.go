//go:build !unix

package supervise

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultGrace is how long Stop waits after SIGTERM before SIGKILL.
const DefaultGrace = 5 * time.Second

// ErrRefused is a kill Level 1 never performs: pid 0 or 1, the caller
// itself or the caller's own process group.
var ErrRefused = errors.New("refused to signal")

// Stop is not supported on this system: Level 1 needs process groups and
// signals.
func Stop(ctx context.Context, k Kill, grace time.Duration) (bool, error) {
	return false, fmt.Errorf("kill process %d: %w", k.PID, errors.ErrUnsupported)
}
