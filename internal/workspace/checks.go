package workspace

import (
	"context"
	"time"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/preflight"
)

// Check is one of 'cra doctor”s checks (preflight.Check); StatusFail and
// StatusWarn are a required and an optional one that failed.
type Check = preflight.Check

// The statuses of a failed check, and the note of a missing enrichment.
const (
	StatusFail        = preflight.StatusFail
	StatusWarn        = preflight.StatusWarn
	EnrichmentMissing = preflight.EnrichmentMissing
)

// Doctor runs every check of the repository at root, each bounded by
// timeout (preflight.Doctor).
func Doctor(ctx context.Context, root string, timeout time.Duration) []Check {
	return preflight.Doctor(ctx, root, timeout)
}

// CheckModels says what the config lacks for a command that calls a
// model (preflight.CheckModels).
func CheckModels(cfg *config.Config) error { return preflight.CheckModels(cfg) }

// TopLevel returns the top of the git repository dir is in, and dir's
// path under it (gitx.TopLevel).
func TopLevel(ctx context.Context, dir string) (top, prefix string, err error) {
	return gitx.TopLevel(ctx, dir)
}
