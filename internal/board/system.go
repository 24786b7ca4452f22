package board

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cra-dev/cra/internal/world"
)

// The board is what Level 1 restarts and fails tasks through
// (supervise.Board; the fleet checks that it is one).

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

// RestartRun is Level 1's restart of a run that is gone (see
// supervise.Board): the check that the log still has the task active in
// that run, the event, the retry entry and the move happen under the
// board's lock, the lock the processor's finish takes, so a run whose
// daemon is recording its end is never restarted.
func (b *Board) RestartRun(ctx context.Context, id string, run int, event, output string) error {
	return b.whileActive(ctx, id, run, func(b *Board) error {
		if _, err := b.Log.Event(ctx, world.SourceSystem, id, event); err != nil {
			return fmt.Errorf("log the restart of task %s: %w", id, err)
		}
		_, err := b.systemLocked(ctx, id, world.StatusRetry, output, "", Pending)
		return err
	})
}

// BlockRun is Level 1's failure of a run that is gone at the start
// limit, with RestartRun's condition.
func (b *Board) BlockRun(ctx context.Context, id string, run int, output, need string) error {
	return b.whileActive(ctx, id, run, func(b *Board) error {
		_, err := b.systemLocked(ctx, id, world.StatusFailed, output, need, FailedBlocked)
		return err
	})
}

// whileActive runs f under the board's lock if id is still active in run
// run (stillActive), else returns stillActive's error. f gets the board
// to change, whose log and store commit together where they can
// (atomically).
func (b *Board) whileActive(ctx context.Context, id string, run int, f func(b *Board) error) error {
	unlock, err := b.Store.Lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return b.atomically(ctx, func(b *Board) error {
		if err := b.stillActive(ctx, id, run); err != nil {
			return err
		}
		return f(b)
	})
}

// stillActive returns an error wrapping world.ErrMovedOn unless the
// log has id active in run run (any run when 0) and its file is in
// progress. The caller holds the board's lock.
func (b *Board) stillActive(ctx context.Context, id string, run int) error {
	_, from, err := b.Store.Get(ctx, id)
	if err != nil {
		return err
	}
	a, ok, err := b.Log.Lookup(ctx, id)
	if err != nil {
		return err
	}
	n, named := world.ParseRun(a.Output)
	if !ok || a.Status != world.StatusActive || from != InProgress || run != 0 && named && n != run {
		return fmt.Errorf("task %s is %s in the log (%q) and in %s, not active in run %d: %w",
			id, a.Status, a.Output, from, run, world.ErrMovedOn)
	}
	return nil
}

// system logs a lifecycle entry that cra itself decided, then moves the
// task's file to the folder it maps to.
func (b *Board) system(ctx context.Context, id string, status world.Status, output, need string, to Folder) (*Task, error) {
	unlock, err := b.Store.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var t *Task
	err = b.atomically(ctx, func(b *Board) error {
		var err error
		t, err = b.systemLocked(ctx, id, status, output, need, to)
		return err
	})
	return t, err
}

// systemLocked is system for a caller that holds the board's lock.
func (b *Board) systemLocked(ctx context.Context, id string, status world.Status, output, need string, to Folder) (*Task, error) {
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
