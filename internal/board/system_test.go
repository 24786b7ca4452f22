package board

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/world"
)

// running puts a task in progress with run 1 active in the log.
func running(t *testing.T, b *Board, title string) *Task {
	t.Helper()
	ctx := context.Background()
	task := add(t, b, title)
	if _, err := b.Log.Agent(ctx, world.StatusActive, task.ID, "run 1: test", ""); err != nil {
		t.Fatal(err)
	}
	task.Runs = 1
	if err := b.Store.Put(ctx, task, Pending); err != nil {
		t.Fatal(err)
	}
	if err := b.Store.Move(ctx, task.ID, Pending, InProgress); err != nil {
		t.Fatal(err)
	}
	return task
}

// Level 1 restarts or blocks a run only while the log still has it active:
// a run whose daemon logged its finish after the pass looked (the race a
// loaded machine showed: restarted 21 ms after its exit 0) is left alone.
func TestRestartRunOnlyWhileActive(t *testing.T) {
	ctx := context.Background()
	b, s, _ := newTestBoard(t)

	live := running(t, b, "gone run")
	if err := b.RestartRun(ctx, live.ID, 1, "restarted | reason: not running (run 1, pid 7, has exited)", "restarted by Level 1: not running"); err != nil {
		t.Fatal(err)
	}
	if f := folderOn(t, s, live.ID); f != Pending {
		t.Errorf("restarted task is in %s, want pending", f)
	}
	lines := logLines(t, b, live.ID)
	if n := len(lines); n < 2 || !strings.Contains(lines[n-2], "[event:system]["+live.ID+"] restarted | reason") || !strings.Contains(lines[n-1], "[agent:retry]["+live.ID+"] restarted by Level 1") {
		t.Errorf("log ends %q, want the restart event then the retry", lines[max(0, len(lines)-2):])
	}

	done := running(t, b, "finished meanwhile")
	if _, err := b.Log.Agent(ctx, world.StatusFinish, done.ID, "exit 0: ok", ""); err != nil {
		t.Fatal(err)
	}
	if err := s.Move(ctx, done.ID, InProgress, Completed); err != nil {
		t.Fatal(err)
	}
	before := logLines(t, b, done.ID)
	for name, err := range map[string]error{
		"restart": b.RestartRun(ctx, done.ID, 1, "restarted | reason: x", "restarted by Level 1: x"),
		"block":   b.BlockRun(ctx, done.ID, 1, "not running: start limit reached", "look"),
	} {
		if !errors.Is(err, world.ErrMovedOn) {
			t.Errorf("%s of a finished run: error %v, want ErrMovedOn", name, err)
		}
	}
	if f := folderOn(t, s, done.ID); f != Completed {
		t.Errorf("finished task moved to %s", f)
	}
	if after := logLines(t, b, done.ID); len(after) != len(before) {
		t.Errorf("log of the finished task grew: %q", after[len(before):])
	}

	// Another run began: the pass's decision about run 1 is stale.
	next := running(t, b, "run again")
	for _, e := range []struct {
		s   world.Status
		out string
	}{{world.StatusRetry, "a person requeued it"}, {world.StatusActive, "run 2: test"}} {
		if _, err := b.Log.Agent(ctx, e.s, next.ID, e.out, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.BlockRun(ctx, next.ID, 1, "not running", "look"); !errors.Is(err, world.ErrMovedOn) {
		t.Errorf("block of run 1 while run 2 is on: %v, want ErrMovedOn", err)
	}
	if err := b.BlockRun(ctx, next.ID, 2, "not running: start limit reached", "look"); err != nil {
		t.Fatal(err)
	}
	if f := folderOn(t, s, next.ID); f != FailedBlocked {
		t.Errorf("blocked task is in %s", f)
	}
}
