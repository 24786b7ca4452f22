package board

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/world"
)

// A person steers any task (issue 30): stops its run, closes it as
// won't-do, reopens it. Each is logged first, as a person's move is.

// Closed starts the output of the failed entry that closes a task: a
// closed task waits for no one (WaitsForNoOne), is never resumed by an
// answer, and leaves "needs you".
const Closed = "closed: "

// StoppedByPerson starts the output of the retry entry that stops a run.
const StoppedByPerson = "stopped by a person"

// IsClosed reports whether an agent's latest entry closed it, and why.
func IsClosed(a world.Agent) (why string, ok bool) {
	if a.Status != world.StatusFailed || !strings.HasPrefix(a.Output, Closed) {
		return "", false
	}
	return strings.TrimPrefix(a.Output, Closed), true
}

// SteerError is a stop, close or reopen the task's state does not allow;
// it names the state and what a person can do instead. Nothing was
// written.
type SteerError struct {
	ID, Op, State, Fix string
}

func (e *SteerError) Error() string {
	return fmt.Sprintf("cannot %s task %s: it %s: %s", e.Op, e.ID, e.State, e.Fix)
}

// StopRun is a person's stop of run run of task id (the caller then ends
// its process group): under the board's lock, and only while the log has
// the task active in that run, it logs [event:user][id] stopped run N:
// WHY and [agent:retry][id] stopped by a person: WHY, and moves the file
// to pending with processor_auto_requeue false, so that the processor
// leaves it there until a person reopens or runs it. No failure is
// counted: the streaks are the recycler's, and a retry moves none. The
// run's starter, seeing the log moved on, records its end and leaves the
// file where the log has it.
func (b *Board) StopRun(ctx context.Context, id string, run int, why string) (*Task, error) {
	why = strings.TrimSpace(why)
	var out *Task
	err := b.whileActive(ctx, id, run, func(b *Board) error {
		ctx := context.WithoutCancel(ctx) // made whole once begun
		text := fmt.Sprintf("stopped run %d", run)
		output := StoppedByPerson
		if why != "" {
			text += ": " + why
			output += ": " + why
		}
		if _, err := b.Log.Event(ctx, world.SourceUser, id, text); err != nil {
			return fmt.Errorf("log the stop: %w", err)
		}
		t, from, err := b.Store.Get(ctx, id)
		if err != nil {
			return err
		}
		if _, err := b.Log.Agent(ctx, world.StatusRetry, id, output, ""); err != nil {
			return fmt.Errorf("log the stop: %w", err)
		}
		t.ProcessorAutoRequeue = false
		t.UpdatedAt = b.Now().UTC().Truncate(time.Millisecond)
		out = t
		return b.put(ctx, t, from, Pending)
	})
	if errors.Is(err, world.ErrMovedOn) {
		return nil, &SteerError{ID: id, Op: "stop", State: "is no longer running run " + fmt.Sprint(run),
			Fix: "see where it is with 'cra task show " + id + "'"}
	}
	return out, err
}

// Close is a person's closing of task id as won't-do: it logs
// [event:user][id] closed: WHY and [agent:failed][id] closed: WHY (a
// failed task is first sent back with [agent:retry], which the event
// allows, since the lifecycle goes from failed only to retry), and moves
// the file to failed-blocked with processor_auto_requeue false. A closed
// task leaves "needs you", takes no answer and never runs again until a
// person reopens it (Reopen). A running task is stopped first; a
// verified one has nothing to close.
func (b *Board) Close(ctx context.Context, id, why string) (*Task, error) {
	why = strings.TrimSpace(why)
	if why == "" {
		why = "won't do"
	}
	unlock, err := b.Store.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var t *Task
	err = b.atomically(ctx, func(b *Board) error {
		var err error
		t, err = b.close(ctx, id, why)
		return err
	})
	return t, err
}

// close is Close under the board's lock.
func (b *Board) close(ctx context.Context, id, why string) (*Task, error) {
	t, from, a, err := b.read(ctx, id)
	if err != nil {
		return nil, err
	}
	if w, ok := IsClosed(a); ok {
		return nil, &SteerError{ID: id, Op: "close", State: "is closed already (" + w + ")", Fix: "reopen it with 'cra task reopen " + id + "'"}
	}
	switch a.Status {
	case world.StatusActive:
		return nil, &SteerError{ID: id, Op: "close", State: "is running", Fix: "stop it first with 'cra task stop " + id + "', then close it"}
	case world.StatusVerified:
		return nil, &SteerError{ID: id, Op: "close", State: "is verified: its lifecycle is over", Fix: "merge it (cra task merge " + id + ") or leave it"}
	}
	ctx = context.WithoutCancel(ctx) // made whole once begun
	if _, err := b.Log.Event(ctx, world.SourceUser, id, Closed+why); err != nil {
		return nil, fmt.Errorf("log the close: %w", err)
	}
	if a.Status == world.StatusFailed {
		if _, err := b.Log.Agent(ctx, world.StatusRetry, id, "a person closes it", ""); err != nil {
			return nil, fmt.Errorf("log the close: %w", err)
		}
	}
	if _, err := b.Log.Agent(ctx, world.StatusFailed, id, Closed+why, "none: a person closed it; reopen it with 'cra task reopen "+id+"'"); err != nil {
		return nil, fmt.Errorf("log the close: %w", err)
	}
	t.ProcessorAutoRequeue = false
	t.UpdatedAt = b.Now().UTC().Truncate(time.Millisecond)
	if err := b.put(ctx, t, from, FailedBlocked); err != nil {
		return nil, err
	}
	return t, nil
}

// Reopen undoes a person's close or stop. A closed task goes back to
// pending as a person's move does ([event:user] then [agent:retry], the
// streaks afresh, processor_auto_requeue true). A stopped task, held in
// pending, is given back to the processor: [event:user][id] reopened and
// processor_auto_requeue true. Any other task is a *SteerError.
func (b *Board) Reopen(ctx context.Context, id string) (*Task, error) {
	a, known, err := b.Log.Lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	if !known {
		return nil, fmt.Errorf("task %s has no entry in the world log: run 'cra task rebuild' first", id)
	}
	if _, ok := IsClosed(a); ok {
		return b.Move(ctx, id, Pending, "reopened")
	}
	unlock, err := b.Store.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var t *Task
	err = b.atomically(ctx, func(b *Board) error {
		var err error
		t, err = b.reopen(ctx, id)
		return err
	})
	return t, err
}

// reopen is Reopen under the board's lock.
func (b *Board) reopen(ctx context.Context, id string) (*Task, error) {
	t, from, err := b.Store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if from != Pending || t.ProcessorAutoRequeue {
		return nil, &SteerError{ID: id, Op: "reopen", State: fmt.Sprintf("is neither closed nor stopped (it is in %s)", from),
			Fix: "move it with 'cra task move " + id + " FOLDER' or run it with 'cra task run " + id + "'"}
	}
	ctx = context.WithoutCancel(ctx)
	if _, err := b.Log.Event(ctx, world.SourceUser, id, "reopened: the processor may run it again"); err != nil {
		return nil, fmt.Errorf("log the reopen: %w", err)
	}
	t.ProcessorAutoRequeue = true
	t.UpdatedAt = b.Now().UTC().Truncate(time.Millisecond)
	if err := b.Store.Put(ctx, t, from); err != nil {
		return nil, err
	}
	return t, nil
}

// SetMerged records on task id that its branch was merged (the caller
// logged it).
func (b *Board) SetMerged(ctx context.Context, id string, m *Merge) (*Task, error) {
	unlock, err := b.Store.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	t, folder, err := b.Store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	t.Merged = m
	t.UpdatedAt = b.Now().UTC().Truncate(time.Millisecond)
	if err := b.Store.Put(ctx, t, folder); err != nil {
		return nil, err
	}
	return t, nil
}
