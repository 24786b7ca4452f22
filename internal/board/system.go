package board

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cra-dev/cra/internal/supervise"
	"github.com/cra-dev/cra/internal/world"
)

// The board is what Level 1 restarts and fails tasks through.
var _ supervise.Board = (*Board)(nil)

// Has reports whether id is a task on the board (a world-log agent that
// is not one, such as a standalone 'cra solve', cannot be restarted).
func (b *Board) Has(ctx context.Context, id string) (bool, error) {
	_, _, err := b.Store.Get(ctx, id)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNotFound):
		return false, nil
	}
	return false, err
}

// Requeue puts a task whose run died back in pending/ for the processor:
// [agent:retry][id] output first, then the file's move (seed 002 Phase 3,
// Level 1's restart). The task must be active in the log.
func (b *Board) Requeue(ctx context.Context, id, output string) error {
	_, err := b.system(ctx, id, world.StatusRetry, output, "", Pending)
	return err
}

// Block fails a task a person must look at: [agent:failed][id] output |
// need: need first, then the move to failed-blocked/, where it stays
// until a person answers (Level 1's start limit, the recycler's failure
// streak).
func (b *Board) Block(ctx context.Context, id, output, need string) error {
	_, err := b.system(ctx, id, world.StatusFailed, output, need, FailedBlocked)
	return err
}

// system logs a lifecycle entry that cra itself decided, then moves the
// task's file to the folder it maps to.
func (b *Board) system(ctx context.Context, id string, status world.Status, output, need string, to Folder) (*Task, error) {
	unlock, err := b.Store.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	t, from, err := b.Store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if _, err := b.Log.Agent(ctx, status, id, output, need); err != nil {
		return nil, fmt.Errorf("log %s of task %s: %w", status, id, err)
	}
	if to.Terminal() {
		t.ProcessorAutoRequeue = false
	}
	t.UpdatedAt = b.Now().UTC().Truncate(time.Millisecond)
	if err := b.put(ctx, t, from, to); err != nil {
		return nil, err
	}
	return t, nil
}
