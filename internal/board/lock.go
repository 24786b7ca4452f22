package board

import (
	"context"
	"fmt"
	"os"

	"github.com/cra-dev/cra/internal/flock"
)

// lockFile takes the board's exclusive lock at path, waiting until ctx
// ends; closing the returned file releases it.
func lockFile(ctx context.Context, path string) (*os.File, error) {
	f, err := flock.Lock(ctx, path, true)
	if err != nil {
		return nil, fmt.Errorf("lock board: %w", err)
	}
	return f, nil
}
