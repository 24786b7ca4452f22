package board

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/world"
)

// finished puts a new task through a run that ended in folder: completed
// (exit 0) or failed.
func finished(t *testing.T, b *Board, title string, folder Folder) *Task {
	t.Helper()
	ctx := context.Background()
	task := add(t, b, title)
	out := "exit 0: ok"
	if folder == Failed {
		out = RunFailed + " exit 3: broken"
	}
	for _, e := range []struct {
		s   world.Status
		out string
	}{{world.StatusActive, "run 1: test"}, {world.StatusFinish, out}} {
		if _, err := b.Log.Agent(ctx, e.s, task.ID, e.out, ""); err != nil {
			t.Fatal(err)
		}
	}
	task.Runs = 1
	if err := b.Store.Put(ctx, task, Pending); err != nil {
		t.Fatal(err)
	}
	if err := b.Store.Move(ctx, task.ID, Pending, folder); err != nil {
		t.Fatal(err)
	}
	return task
}

func TestDecide(t *testing.T) {
	ctx := context.Background()
	b, s, _ := newTestBoard(t)
	task := finished(t, b, "finish me", Completed)

	// A decision about a task that ran again meanwhile is dropped whole.
	_, _, err := b.Decide(ctx, Decision{ID: task.ID, From: Completed, Runs: 0, Status: world.StatusVerified, Output: "done", Review: "run 1: full_complete"})
	if !errors.Is(err, ErrChanged) {
		t.Fatalf("got %v, want ErrChanged", err)
	}
	_, _, err = b.Decide(ctx, Decision{ID: task.ID, From: Failed, Runs: 1, Status: world.StatusVerified, Output: "done", Review: "run 1: full_complete"})
	if !errors.Is(err, ErrChanged) {
		t.Fatalf("got %v, want ErrChanged", err)
	}
	if n := len(logLines(t, b, task.ID)); n != 3 {
		t.Fatalf("a dropped decision logged something: %d lines", n)
	}
	if _, _, err := b.Decide(ctx, Decision{ID: task.ID, From: Completed, Runs: 1, Status: world.StatusActive}); err == nil {
		t.Fatal("an active decision was taken")
	}

	got, to, err := b.Decide(ctx, Decision{ID: task.ID, From: Completed, Runs: 1, Status: world.StatusVerified, Output: "verified: 3 complete reviews",
		Review: "run 1: full_complete", Update: func(t *Task) { t.Notes, t.ConsecutiveCompletionClaims = "the note", 3 }})
	if err != nil {
		t.Fatal(err)
	}
	if to != CompletedFinalized || folderOn(t, s, task.ID) != CompletedFinalized {
		t.Errorf("went to %s (file in %s), want completed-finalized", to, folderOn(t, s, task.ID))
	}
	stored, _, _ := s.Get(ctx, task.ID)
	if stored.ProcessorAutoRequeue || stored.Notes != "the note" || stored.ConsecutiveCompletionClaims != 3 || got.Notes != "the note" {
		t.Errorf("stored %+v", stored)
	}
	lines := logLines(t, b, task.ID)
	if last := lines[len(lines)-1]; !strings.HasSuffix(last, "[agent:verified]["+task.ID+"] verified: 3 complete reviews") {
		t.Errorf("last line %q", last)
	}
}

// TestGuidanceOf: a retry's guidance reaches the next run as advice; a
// person's move or stop as the person's reason; cra's own "run again"
// wording not at all.
func TestGuidanceOf(t *testing.T) {
	for _, tc := range []struct{ output, want string }{
		{"some_progress: add the test", "some_progress: add the test"},
		{"moved by a person: run again with 'cra task run'", ""},
		{"moved by a person", ""},
		{"moved by a person: use the v2 API", "A person sent the task back: use the v2 API"},
		{"stopped by a person: wrong approach", "A person stopped the previous run: wrong approach"},
		{"continue: the run was stopped, stale: no output for 15m0s", "continue: the run was stopped, stale: no output for 15m0s"},
	} {
		if got := guidanceOf(tc.output); got != tc.want {
			t.Errorf("guidanceOf(%q) = %q, want %q", tc.output, got, tc.want)
		}
	}
}
