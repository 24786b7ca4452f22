package supervisor

import (
	"context"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/board"
)

// listCounter is a FileStore that counts the tasks it reads.
type listCounter struct {
	*board.FileStore
	read int
}

func (c *listCounter) List(ctx context.Context, folder board.Folder) ([]board.Listed, error) {
	l, err := c.FileStore.List(ctx, folder)
	c.read += len(l)
	return l, err
}

func (c *listCounter) Get(ctx context.Context, id string) (*board.Task, board.Folder, error) {
	c.read++
	return c.FileStore.Get(ctx, id)
}

// TestIdleCheckReadsNoTask: a check on a board that has not changed since
// the last one reads none of its tasks (an idle daemon checks every 30
// s, and a board may hold thousands of finished ones); a change to the
// board is seen by the next check.
func TestIdleCheckReadsNoTask(t *testing.T) {
	ctx := context.Background()
	r, _ := newTestRunner(t, nil)
	c := &listCounter{FileStore: r.Board.Store.(*board.FileStore)}
	r.Board.Store = c
	done := addTask(t, r, "finished long ago", nil)
	if _, err := r.Board.Close(ctx, done.ID, "done"); err != nil {
		t.Fatal(err)
	}
	addTask(t, r, "pending", nil)
	// An hour on: the folders' last changes are not too recent to trust.
	r.Board.Now = func() time.Time { return time.Now().Add(time.Hour) }
	check := func() (*Status, int) {
		t.Helper()
		c.read = 0
		if _, err := r.Check(ctx); err != nil {
			t.Fatal(err)
		}
		st, err := r.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st, c.read
	}
	if _, n := check(); n == 0 {
		t.Fatalf("first check read no task")
	}
	if _, n := check(); n != 0 {
		t.Errorf("idle check: read %d tasks, want none", n)
	}
	addTask(t, r, "new cleanup", cleanupDirective)
	st, n := check()
	if n == 0 || st.PendingCleanup != 1 {
		t.Errorf("after an add: read %d tasks and counted %d pending cleanup directives, want the board read and 1", n, st.PendingCleanup)
	}
	if _, n := check(); n != 0 {
		t.Errorf("idle again: read %d tasks, want none", n)
	}
}
