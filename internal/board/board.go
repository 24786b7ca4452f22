package board

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/world"
)

// Board is the task board of one repository: tasks in a Store, their
// lifecycle in the world log. Every change is logged before the store
// changes (DESIGN.md principles 1 and 5), so Rebuild can always put the
// store back in agreement with the log.
type Board struct {
	Store Store
	Log   world.Store
	// Now stamps updated_at on edits and moves (a new task takes the time
	// of its start entry); New sets time.Now.
	Now func() time.Time
	// TempAge is how old a temp file must be before Rebuild takes it for
	// the remains of a crashed write and removes it. New sets 0: every
	// task file is written under the board's lock, which Rebuild holds,
	// so no temp file it sees belongs to a write in flight, and the daemon
	// that starts right after a kill -9 must remove the one that write
	// left (a minute's grace kept it, and 'rebuild --check' then found it).
	TempAge time.Duration

	// repaired is the stamp of the board after RepairFolders' last pass
	// that left nothing to a run still going (repairMemo); New makes it.
	repaired *repairMemo
}

// New returns the board over store and log.
func New(store Store, log world.Store) *Board {
	return &Board{Store: store, Log: log, Now: time.Now, repaired: &repairMemo{}}
}

// ErrExists is a task id already on the board or in the world log.
var ErrExists = errors.New("task id already in use")

// ErrForeignBranch is wrapped by a host's fetch of a task's branch from
// the fleet's shared remote when the remote holds another commit than
// the one the task's last run recorded (Results.Commit), or the run
// recorded none: an agent that can push to the remote itself may have
// put it there. Such a branch is neither reviewed nor built on, and its
// review does not pass.
var ErrForeignBranch = errors.New("not the commit the task's last run recorded")

// ErrBranchAway is wrapped by a host's fetch of a task's branch when the
// fleet's shared remote cannot be read and this host does not hold the
// commit the task's last run recorded: the run's work is elsewhere, and
// nothing says it failed, so its review waits for the remote rather
// than judging the run on what this host has.
var ErrBranchAway = errors.New("the run's branch is on a remote that cannot be read now")

// newIDTries bounds the search for a free id: 2^32 ids make a clash rare.
const newIDTries = 16

// Add puts a new task on the board: it checks t (see Task.Validate; build
// it with NewTask for the defaults), gives it an id when it has none,
// appends [agent:start][id] title | need: need to the log and then writes
// the file into pending/, with created_at and updated_at the time of that
// entry. Every id in its after
// list must be a task on the board.
func (b *Board) Add(ctx context.Context, t *Task) (*Task, error) {
	unlock, err := b.Store.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var out *Task
	err = b.atomically(ctx, func(b *Board) error {
		var err error
		out, err = b.add(ctx, t)
		return err
	})
	return out, err
}

// add is Add under the board's lock.
func (b *Board) add(ctx context.Context, t *Task) (*Task, error) {
	t = t.Clone()
	t.applyDefaults()
	if t.ID == "" {
		for i := 0; ; i++ {
			t.ID = NewID()
			free, err := b.idFree(ctx, t.ID)
			if err != nil {
				return nil, err
			}
			if free {
				break
			}
			if i == newIDTries {
				return nil, fmt.Errorf("no free task id after %d tries: %w", newIDTries, ErrExists)
			}
		}
	} else if err := CheckID(t.ID); err != nil {
		return nil, err
	} else if free, err := b.idFree(ctx, t.ID); err != nil {
		return nil, err
	} else if !free {
		return nil, fmt.Errorf("task %s: %w: choose another id", t.ID, ErrExists)
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if err := b.checkAfter(ctx, t); err != nil {
		return nil, err
	}
	e, err := b.Log.Agent(ctx, world.StatusStart, t.ID, t.Title, t.Need)
	if err != nil {
		return nil, fmt.Errorf("log the new task: %w", err)
	}
	t.CreatedAt, t.UpdatedAt = e.Time, e.Time
	if err := b.Store.Put(ctx, t, Pending); err != nil {
		if _, ok := b.Store.(Atomic); ok {
			// Its transaction is rolled back: the log's entry goes too.
			return nil, fmt.Errorf("task %s was not added (nor logged): add it again once the cause is fixed: %w", t.ID, err)
		}
		return nil, fmt.Errorf("task %s is in the world log but its file was not written: once the cause is fixed, 'cra task rebuild' recreates it from the log (title, need): %w", t.ID, err)
	}
	return t, nil
}

// idFree reports whether no folder holds id and the log has no agent id.
func (b *Board) idFree(ctx context.Context, id string) (bool, error) {
	if _, _, err := b.Store.Get(ctx, id); !errors.Is(err, ErrNotFound) {
		return false, nil // a file holds it, readable or not
	}
	_, known, err := b.Log.Lookup(ctx, id)
	if err != nil {
		return false, err
	}
	return !known, nil
}

// checkAfter returns an error unless every id t waits for is on the board:
// a mistyped id would hold t back for good.
func (b *Board) checkAfter(ctx context.Context, t *Task) error {
	for _, id := range t.After {
		_, _, err := b.Store.Get(ctx, id)
		if errors.Is(err, ErrNotFound) {
			return &FieldError{Field: "after", Err: fmt.Sprintf("task %s is not on the board", id), Fix: "list ids shown by 'cra task list'"}
		}
	}
	return nil
}

// Edit changes task id with change and writes it back into its folder,
// after logging [event:user][id] edited: FIELD=VALUE; …. It returns the
// task and the names of the fields that changed; nothing is logged or
// written when none did. change may set the descriptive fields (title,
// description, need, type, kind, priority, milestone, after, agent,
// no_change, tests_may_change, notes);
// the id and the run's fields are the board's.
func (b *Board) Edit(ctx context.Context, id string, change func(*Task) error) (*Task, []string, error) {
	unlock, err := b.Store.Lock(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	var out *Task
	var names []string
	err = b.atomically(ctx, func(b *Board) error {
		var err error
		out, names, err = b.edit(ctx, id, change)
		return err
	})
	return out, names, err
}

// edit is Edit under the board's lock.
func (b *Board) edit(ctx context.Context, id string, change func(*Task) error) (*Task, []string, error) {
	old, folder, err := b.Store.Get(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	t := old.Clone()
	if err := change(t); err != nil {
		return nil, nil, err
	}
	if t.ID != old.ID {
		return nil, nil, &FieldError{Field: "id", Err: "cannot be edited", Fix: "add a new task instead"}
	}
	if err := t.Validate(); err != nil {
		return nil, nil, err
	}
	diff := editedFields(old, t)
	if len(diff) == 0 {
		return old, nil, nil
	}
	if slices.ContainsFunc(diff, func(d fieldChange) bool { return d.name == "after" }) {
		if err := b.checkAfter(ctx, t); err != nil {
			return nil, nil, err
		}
	}
	parts := make([]string, len(diff))
	names := make([]string, len(diff))
	for i, d := range diff {
		parts[i] = d.name + "=" + Clip(d.value, 120)
		names[i] = d.name
	}
	if _, err := b.Log.Event(ctx, world.SourceUser, id, "edited: "+strings.Join(parts, "; ")); err != nil {
		return nil, nil, fmt.Errorf("log the edit: %w", err)
	}
	t.UpdatedAt = b.Now().UTC().Truncate(time.Millisecond)
	if err := b.Store.Put(ctx, t, folder); err != nil {
		return nil, nil, err
	}
	return t, names, nil
}

type fieldChange struct{ name, value string }

// editedFields lists the descriptive fields whose values differ.
func editedFields(a, b *Task) []fieldChange {
	fields := []struct {
		name string
		get  func(*Task) string
	}{
		{"title", func(t *Task) string { return t.Title }},
		{"description", func(t *Task) string { return t.Description }},
		{"need", func(t *Task) string { return t.Need }},
		{"type", func(t *Task) string { return t.Type }},
		{"kind", func(t *Task) string { return string(t.Kind) }},
		{"priority", func(t *Task) string { return string(t.Priority) }},
		{"milestone", func(t *Task) string { return t.Milestone }},
		{"after", func(t *Task) string { return strings.Join(t.After, ",") }},
		{"agent", func(t *Task) string { return t.Agent }},
		{"no_change", func(t *Task) string { return strconv.FormatBool(t.NoChange) }},
		{"tests_may_change", func(t *Task) string { return strconv.FormatBool(t.TestsMayChange) }},
		{"source", func(t *Task) string { return t.Source }},
		{"rationale", func(t *Task) string { return t.Rationale }},
		{"files", func(t *Task) string { return strings.Join(t.Files, ",") }},
		{"notes", func(t *Task) string { return t.Notes }},
	}
	var out []fieldChange
	for _, f := range fields {
		if va, vb := f.get(a), f.get(b); va != vb {
			out = append(out, fieldChange{f.name, vb})
		}
	}
	return out
}

// Clip cuts s to n runes, saying so with an ellipsis.
func Clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// MoveError is a person's move the lifecycle does not allow.
type MoveError struct {
	ID       string
	From     Folder       // where the log puts the task
	Status   world.Status // its latest lifecycle entry
	To       Folder
	Possible []Folder // where a person may move it instead
}

func (e *MoveError) Error() string {
	msg := fmt.Sprintf("task %s cannot move to %s: the world log has it at %s (in %s)", e.ID, e.To, e.Status, e.From)
	if e.To == InProgress {
		msg = fmt.Sprintf("task %s cannot move to %s: only a run makes a task active (the processor logs [agent:active] when it starts one)", e.ID, e.To)
	}
	if len(e.Possible) == 0 {
		return msg + "; its lifecycle is over: add a new task"
	}
	return msg + "; it can move to " + joinNames(e.Possible)
}

// Move is a person's move of task id to folder to, with why as the reason.
// The log stays the truth: it appends [event:user][id] moved from F to T:
// why, then the lifecycle entry that FolderOf maps to the target (retry for
// pending, finish for completed, finish "run failed: …" for failed,
// verified, failed), then moves the file. A target the lifecycle does not
// allow from the task's current status is a *MoveError, written nowhere;
// in-progress is never a person's target, since only a run is active.
// Moving into a terminal folder sets processor_auto_requeue false, and
// back to pending from one sets it true (seed 004 sets it false on
// finalizing; a person's requeue undoes that). When the log already puts
// the task in to, only the event is logged and the file follows.
func (b *Board) Move(ctx context.Context, id string, to Folder, why string) (*Task, error) {
	if !to.Valid() {
		return nil, fmt.Errorf("folder %q is not one of %s", to, joinNames(Folders()))
	}
	unlock, err := b.Store.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var out *Task
	err = b.atomically(ctx, func(b *Board) error {
		var err error
		out, err = b.move(ctx, id, to, why)
		return err
	})
	return out, err
}

// move is Move under the board's lock.
func (b *Board) move(ctx context.Context, id string, to Folder, why string) (*Task, error) {
	t, from, a, err := b.read(ctx, id)
	if err != nil {
		return nil, err
	}
	logFolder, _ := folderOfAgent(a)
	var status world.Status
	var output string
	if logFolder != to {
		var ok bool
		status, output, ok = moveStatus(to, why)
		if !ok || !slices.Contains(world.Next(a.Status), status) {
			return nil, &MoveError{ID: id, From: logFolder, Status: a.Status, To: to, Possible: personTargets(a.Status)}
		}
	}
	text := fmt.Sprintf("moved from %s to %s", from, to)
	if why != "" {
		text += ": " + why
	}
	// From its first line on, a move is made whole: a caller that gives up
	// (a client that hangs up, Ctrl-C) while the log's lock is busy must
	// not leave the move logged without its lifecycle entry and the file
	// where it was.
	ctx = context.WithoutCancel(ctx)
	if _, err := b.Log.Event(ctx, world.SourceUser, id, text); err != nil {
		return nil, fmt.Errorf("log the move: %w", err)
	}
	switch status {
	case "":
	case world.StatusVerified:
		// A person's move is the review a verified needs (world.Next).
		if _, err := b.Log.Verify(ctx, id, "a person verified it: "+text, output); err != nil {
			return nil, fmt.Errorf("log the move: %w", err)
		}
	default:
		need := ""
		if status == world.StatusFailed {
			need = "a person answers: cra answer " + id + " '…'"
		}
		if _, err := b.Log.Agent(ctx, status, id, output, need); err != nil {
			return nil, fmt.Errorf("log the move: %w", err)
		}
	}
	if err := b.Store.Move(ctx, id, from, to); err != nil {
		return nil, err
	}
	switch {
	case to.Terminal():
		t.ProcessorAutoRequeue = false
	case to == Pending && from.Terminal():
		// A person's requeue starts the streaks afresh (seed 002 Phase 5).
		t.ProcessorAutoRequeue = true
		t.ConsecutiveCompletionClaims, t.ConsecutiveFailures = 0, 0
	}
	t.UpdatedAt = b.Now().UTC().Truncate(time.Millisecond)
	if err := b.Store.Put(ctx, t, to); err != nil {
		return nil, err
	}
	return t, nil
}

// personTargets lists the folders a person's move can reach from status.
func personTargets(status world.Status) []Folder {
	var out []Folder
	next := world.Next(status)
	for _, f := range Folders() {
		if s, _, ok := moveStatus(f, ""); ok && slices.Contains(next, s) {
			out = append(out, f)
		}
	}
	return out
}

// History returns the world log's entries for task id, oldest first;
// malformed lines are skipped (world reports them through Log.Malformed
// where the caller set it).
func (b *Board) History(ctx context.Context, id string) ([]world.Entry, error) {
	var out []world.Entry
	err := b.Log.Select(ctx, world.Filter{IDs: []string{id}}, func(r *world.Record) error {
		if r.Err == nil {
			out = append(out, r.Entry)
		}
		return nil
	})
	return out, err
}

// read returns task id's file, its folder and its latest lifecycle entry,
// for a caller that holds the board's lock; a task the log does not know
// is an error that names the repair.
func (b *Board) read(ctx context.Context, id string) (*Task, Folder, world.Agent, error) {
	t, from, err := b.Store.Get(ctx, id)
	if err != nil {
		return nil, "", world.Agent{}, err
	}
	a, known, err := b.Log.Lookup(ctx, id)
	if err != nil {
		return nil, "", world.Agent{}, err
	}
	if !known {
		return nil, "", world.Agent{}, fmt.Errorf("task %s has no entry in the world log: run 'cra task rebuild' first", id)
	}
	return t, from, a, nil
}
