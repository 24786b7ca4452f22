package board

import (
	"context"
	"errors"
	"testing"

	"github.com/cra-dev/cra/internal/world"
)

// errCrashed stands for the process dying in the middle of a change.
var errCrashed = errors.New("killed here")

// crashingStore is a Store whose process dies after writes more file
// writes (Put, Move): every later one fails.
type crashingStore struct {
	Store
	writes int
}

func (c *crashingStore) Put(ctx context.Context, t *Task, f Folder) error {
	if c.writes == 0 {
		return errCrashed
	}
	c.writes--
	return c.Store.Put(ctx, t, f)
}

func (c *crashingStore) Move(ctx context.Context, id string, from, to Folder) error {
	if c.writes == 0 {
		return errCrashed
	}
	c.writes--
	return c.Store.Move(ctx, id, from, to)
}

// TestAnswerCrashThenRebuild: a daemon killed between the two file writes
// of an answer's retry (its new fields, its move to pending) leaves a
// task that Rebuild, following the log, makes one the processor picks.
func TestAnswerCrashThenRebuild(t *testing.T) {
	ctx := context.Background()
	b, s, _ := newTestBoard(t)
	task := add(t, b, "blocked one")
	if _, err := b.Move(ctx, task.ID, FailedBlocked, "needs a key"); err != nil {
		t.Fatal(err)
	}
	crashed := New(&crashingStore{Store: s, writes: 1}, b.Log)
	if _, _, _, err := crashed.Answer(ctx, task.ID, "the key is in the vault"); !errors.Is(err, errCrashed) {
		t.Fatalf("answer: got %v, want the crash between its writes", err)
	}
	if _, err := b.Rebuild(ctx, false); err != nil {
		t.Fatal(err)
	}
	got, f, err := s.Get(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if a, _, _ := b.Log.Lookup(ctx, task.ID); a.Status != world.StatusRetry || f != Pending {
		t.Fatalf("got the log at %s and the file in %s, want retry and pending", a.Status, f)
	}
	if len(Order([]*Task{got}, nil)) == 0 {
		t.Errorf("the answered task is pending but the processor would never pick it (processor_auto_requeue %v)", got.ProcessorAutoRequeue)
	}
}
