package board

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/config"
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

// TestFinishLoggedWhenFileUnreadable: a run whose task file a hand edit
// broke while it ran still logs its end (the log first), and says how to
// repair the file; the log no longer holds the run active for ever.
func TestFinishLoggedWhenFileUnreadable(t *testing.T) {
	ctx := context.Background()
	p, s, _ := newTestProcessor(t, map[string]config.Agent{"slow": {Command: "sleep 1; echo done"}}, 1)
	task := addWith(t, p.Board, "slow", "slow", nil)
	broken := make(chan error, 1)
	go func() {
		for {
			if _, f, _ := s.Get(ctx, task.ID); f == InProgress {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		data, err := os.ReadFile(s.Path(task.ID, InProgress))
		if err == nil {
			err = os.WriteFile(s.Path(task.ID, InProgress), append(data, "notes: [unclosed\n"...), 0o644)
		}
		broken <- err
	}()
	_, err := p.Run(ctx, task.ID)
	if werr := <-broken; werr != nil {
		t.Fatal(werr)
	}
	if err == nil || !strings.Contains(err.Error(), "cra task rebuild") {
		t.Errorf("run: got %v, want an error naming the repair", err)
	}
	if a, _, _ := p.Board.Log.Lookup(ctx, task.ID); a.Status != world.StatusFinish {
		t.Errorf("the log has %s %q, want the run's finish", a.Status, a.Output)
	}
}
