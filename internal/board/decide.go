package board

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/world"
)

// ErrChanged is a task that moved or ran again while a decision about it
// was being made (the recycler reviews outside the board's lock): the
// decision is dropped, and the next review starts from the task as it is.
var ErrChanged = errors.New("task changed while it was reviewed")

// Decision is the recycler's verdict on one finished run, to be carried
// out: the lifecycle entry first, then the file's update and move.
type Decision struct {
	ID string
	// From and Runs are where the task was and how many runs it had when
	// it was read for review; if either differs now, Decide returns
	// ErrChanged and writes nothing.
	From Folder
	Runs int
	// Status is retry (back to pending), verified (to
	// completed-finalized) or failed (to failed-blocked); Output and Need
	// are its entry's.
	Status       world.Status
	Output, Need string
	// Review is the review of the run the decision comes from, logged as
	// [event:review][id] review before the verdict: a verified stands
	// only after one (world.Next), so it is required for verified.
	Review string
	// Update changes the task's fields (notes, streaks, results) before
	// it is written; it may be nil.
	Update func(*Task)
}

// Decide carries out d under the board's lock: it checks that the task is
// still where it was reviewed, logs [event:review][id] review (when d has
// one) and [agent:STATUS][id] output | need: need, and then writes the
// updated task into the folder the entry maps to. A terminal folder sets
// processor_auto_requeue false (seed 004).
func (b *Board) Decide(ctx context.Context, d Decision) (*Task, Folder, error) {
	to, ok := FolderOf(d.Status, d.Output)
	if !ok || d.Status != world.StatusRetry && d.Status != world.StatusVerified && d.Status != world.StatusFailed {
		return nil, "", fmt.Errorf("decide task %s: %q is not a recycler's status (retry, verified or failed)", d.ID, d.Status)
	}
	if d.Status == world.StatusVerified && strings.TrimSpace(d.Review) == "" {
		return nil, "", fmt.Errorf("decide task %s: a verified needs the review it comes from", d.ID)
	}
	unlock, err := b.Store.Lock(ctx)
	if err != nil {
		return nil, "", err
	}
	defer unlock()
	var task *Task
	var folder Folder
	err = b.atomically(ctx, func(b *Board) error {
		var err error
		task, folder, err = b.decide(ctx, d, to)
		return err
	})
	return task, folder, err
}

// decide is Decide under the board's lock.
func (b *Board) decide(ctx context.Context, d Decision, to Folder) (*Task, Folder, error) {
	t, from, err := b.Store.Get(ctx, d.ID)
	if err != nil {
		return nil, "", err
	}
	if from != d.From || t.Runs != d.Runs {
		return nil, "", fmt.Errorf("task %s is in %s after %d runs, not in %s after %d: %w", d.ID, from, t.Runs, d.From, d.Runs, ErrChanged)
	}
	if d.Review != "" {
		if _, err := b.Log.Event(ctx, world.SourceReview, d.ID, d.Review); err != nil {
			return nil, "", fmt.Errorf("log the review of task %s: %w", d.ID, err)
		}
	}
	if _, err := b.Log.Agent(ctx, d.Status, d.ID, d.Output, d.Need); err != nil {
		return nil, "", fmt.Errorf("log %s of task %s: %w", d.Status, d.ID, err)
	}
	if d.Update != nil {
		d.Update(t)
	}
	if to.Terminal() {
		t.ProcessorAutoRequeue = false
	}
	t.UpdatedAt = b.Now().UTC().Truncate(time.Millisecond)
	if err := b.put(ctx, t, from, to); err != nil {
		return nil, "", err
	}
	return t, to, nil
}

// put writes t's new fields into its file where it is, in from, and then
// moves the file to to: a crash in between leaves the new fields in the
// old folder, which Rebuild, following the log, moves. (Moving first
// left a file in the log's folder with its old fields, which Rebuild
// takes as repaired: an answered task back in pending with
// processor_auto_requeue false, which no processor picks.)
func (b *Board) put(ctx context.Context, t *Task, from, to Folder) error {
	if err := b.Store.Put(ctx, t, from); err != nil {
		return fmt.Errorf("task %s: the world log has it in %s but its file was not updated (run 'cra task rebuild'): %w", t.ID, to, err)
	}
	if from != to {
		if err := b.Store.Move(ctx, t.ID, from, to); err != nil {
			return fmt.Errorf("task %s: the world log has it in %s but its file did not move (run 'cra task rebuild'): %w", t.ID, to, err)
		}
	}
	return nil
}

// AnswerError is an answer to a task that cannot take one.
type AnswerError struct {
	ID     string
	Status world.Status
}

func (e *AnswerError) Error() string {
	return fmt.Sprintf("task %s is %s: its lifecycle is over, so no run would read the answer: add a new task (cra task add)", e.ID, e.Status)
}

// Answer is a person's answer to task id (seed 002 Phase 5): it logs
// [event:user][id] text, which the task's next run reads in its prompt.
// A task that waits for a person (failed-blocked, failed in the log) is
// resumed at once: see Resume. It returns the task, the folder it is in
// and whether it was resumed. A verified task takes no answer
// (*AnswerError).
func (b *Board) Answer(ctx context.Context, id, text string) (*Task, Folder, bool, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, "", false, &FieldError{Field: "answer", Err: "is empty", Fix: "say what the agent needs to know or do"}
	}
	unlock, err := b.Store.Lock(ctx)
	if err != nil {
		return nil, "", false, err
	}
	defer unlock()
	var task *Task
	var folder Folder
	var resumed bool
	err = b.atomically(ctx, func(b *Board) error {
		var err error
		task, folder, resumed, err = b.answer(ctx, id, text)
		return err
	})
	return task, folder, resumed, err
}

// answer is Answer under the board's lock.
func (b *Board) answer(ctx context.Context, id, text string) (*Task, Folder, bool, error) {
	t, from, err := b.Store.Get(ctx, id)
	if err != nil {
		return nil, "", false, err
	}
	a, known, err := b.Log.Lookup(ctx, id)
	if err != nil {
		return nil, "", false, err
	}
	if !known {
		return nil, "", false, fmt.Errorf("task %s has no entry in the world log: run 'cra task rebuild' first", id)
	}
	if a.Status == world.StatusVerified {
		return nil, "", false, &AnswerError{ID: id, Status: a.Status}
	}
	if why, ok := IsClosed(a); ok {
		return nil, "", false, &SteerError{ID: id, Op: "answer", State: "is closed (" + why + ")",
			Fix: "reopen it first with 'cra task reopen " + id + "', then answer"}
	}
	// From its first line on, an answer is made whole: a caller that gives
	// up (a client that hangs up, Ctrl-C) while the log's lock is busy must
	// not leave the answer logged without its retry.
	ctx = context.WithoutCancel(ctx)
	if _, err := b.Log.Event(ctx, world.SourceUser, id, text); err != nil {
		return nil, "", false, fmt.Errorf("log the answer: %w", err)
	}
	if a.Status != world.StatusFailed {
		return t, from, false, nil
	}
	if t, err = b.resume(ctx, t, from, text); err != nil {
		return nil, "", false, err
	}
	return t, Pending, true, nil
}

// Resume sends task id back to pending after a person answered its
// failure: [agent:retry][id] a person answered: TEXT, both streaks reset,
// processor_auto_requeue true (seed 002 Phase 5, seed 004). The task must
// be failed in the log with an [event:user] after the failure; the answer
// itself reaches the next run through its prompt (Prompt.FromLog).
func (b *Board) Resume(ctx context.Context, id string) (*Task, error) {
	unlock, err := b.Store.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var task *Task
	err = b.atomically(ctx, func(b *Board) error {
		var err error
		task, err = b.resumeLocked(ctx, id)
		return err
	})
	return task, err
}

// resumeLocked is Resume under the board's lock.
func (b *Board) resumeLocked(ctx context.Context, id string) (*Task, error) {
	a, known, err := b.Log.Lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	if _, closed := IsClosed(a); !known || a.Status != world.StatusFailed || !a.UserAnswered || closed {
		return nil, fmt.Errorf("task %s does not wait for a person's answer: %w", id, ErrChanged)
	}
	history, err := b.History(ctx, id)
	if err != nil {
		return nil, err
	}
	var p Prompt
	p.FromLog(history)
	answer := ""
	if n := len(p.Answers); n > 0 {
		answer = p.Answers[n-1]
	}
	t, from, err := b.Store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return b.resume(ctx, t, from, answer)
}

// resume is Resume's write of task t, read from folder from under the
// lock the caller holds.
func (b *Board) resume(ctx context.Context, t *Task, from Folder, answer string) (*Task, error) {
	id := t.ID
	out := "a person answered"
	if answer != "" {
		out += ": " + Clip(strings.Join(strings.Fields(answer), " "), 200)
	}
	if _, err := b.Log.Agent(ctx, world.StatusRetry, id, out, ""); err != nil {
		return nil, fmt.Errorf("log the retry of task %s: %w", id, err)
	}
	t.ProcessorAutoRequeue = true
	t.ConsecutiveCompletionClaims, t.ConsecutiveFailures = 0, 0
	t.UpdatedAt = b.Now().UTC().Truncate(time.Millisecond)
	if err := b.put(ctx, t, from, Pending); err != nil {
		return nil, err
	}
	return t, nil
}
