package review

import (
	"context"

	"github.com/cra-dev/cra/internal/verdict"
)

// history is where the recycler keeps its reviews: History, or the
// state directory's files.
func (r *Recycler) history() verdict.HistoryStore {
	if r.History != nil {
		return r.History
	}
	return verdict.Files{StateDir: r.StateDir}
}

// appendHistory appends rv to its task's review history, durably.
func (r *Recycler) appendHistory(ctx context.Context, rv *Review) error {
	return verdict.AppendHistory(ctx, r.history(), rv)
}
