package enrich

import (
	"context"

	"github.com/cra-dev/cra/internal/index"
	"github.com/cra-dev/cra/internal/workspace"
)

// PromoteIndex promotes into the index of ws (see Promote), opening the
// curated database read-write for the write alone: every other reader
// keeps its read-only handle (seed 001 §4.3).
func PromoteIndex(ctx context.Context, ws *workspace.Workspace, repoID int64) (PromoteResult, error) {
	raw, err := ws.Corpus(ctx)
	if err != nil {
		return PromoteResult{}, err
	}
	lk, err := index.Lock(ctx, ws.StateDir, 0, nil)
	if err != nil {
		return PromoteResult{}, err
	}
	defer lk.Close()
	curated, err := ws.OpenIndexWriter(ctx)
	if err != nil {
		return PromoteResult{}, err
	}
	defer curated.Close()
	return Promote(ctx, raw, curated, repoID)
}
