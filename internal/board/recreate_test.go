package board

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/cra-dev/cra/internal/world"
)

// fullDisk is a FileStore whose writes fail as on a full disk.
type fullDisk struct{ *FileStore }

func (fullDisk) Put(context.Context, *Task, Folder) error {
	return &fsError{syscall.ENOSPC}
}

type fsError struct{ errno syscall.Errno }

func (e *fsError) Error() string { return "write tasks/pending/x.yaml: " + e.errno.Error() }
func (e *fsError) Unwrap() error { return e.errno }

// TestAddOnAFullDiskThenRebuild: 'cra task add' logs the start entry and
// then fails to write the file (ENOSPC); it says the task is in the log
// and that 'cra task rebuild' recreates the file, and rebuild does so from
// the start entry: title, need, the time it was added, and for a task the
// log has further along, its folder and runs.
func TestAddOnAFullDiskThenRebuild(t *testing.T) {
	ctx := context.Background()
	b, s, _ := newTestBoard(t)
	full := New(fullDisk{s}, b.Log)
	task := NewTask("write the release notes")
	task.Need = "NOTES.md lists every change"
	_, err := full.Add(ctx, task)
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "is in the world log but its file was not written") ||
		!strings.Contains(err.Error(), "'cra task rebuild' recreates it from the log") {
		t.Fatalf("got %v, want ENOSPC saying that 'cra task rebuild' recreates the file", err)
	}
	agents, err := b.Log.Current(ctx)
	if err != nil || len(agents) != 1 {
		t.Fatalf("the log has %v (%v), want the start entry", agents, err)
	}
	id, started := agents[0].ID, agents[0].Since

	// A second task the log has finished, whose file was lost.
	done := add(t, b, "fix the sum")
	for _, st := range []world.Status{world.StatusActive, world.StatusFinish} {
		if _, err := b.Log.Agent(ctx, st, done.ID, "run 1: shell", ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(ctx, done.ID, Pending); err != nil {
		t.Fatal(err)
	}

	rep, err := b.Rebuild(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Repairs) != 2 || rep.Repairs[0].What != "recreate" || rep.Repairs[0].Fixed {
		t.Fatalf("check: got %+v, want two recreations, not made", rep.Repairs)
	}
	if _, _, err := s.Get(ctx, id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a check wrote the file: %v", err)
	}
	if rep, err = b.Rebuild(ctx, false); err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Repairs {
		if r.What != "recreate" || !r.Fixed {
			t.Errorf("rebuild: %+v, want recreated", r)
		}
	}
	got, folder, err := s.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if folder != Pending || got.Title != task.Title || got.Need != task.Need || !got.CreatedAt.Equal(started) || !got.ProcessorAutoRequeue {
		t.Errorf("recreated %+v in %s; want the title, need and time of its start entry, in pending", got, folder)
	}
	got, folder, err = s.Get(ctx, done.ID)
	if err != nil || folder != Completed || got.Title != "fix the sum" || got.Runs != 1 {
		t.Errorf("recreated %+v in %s (%v); want it in completed after 1 run", got, folder, err)
	}
	if rep, err := b.Rebuild(ctx, true); err != nil || !rep.Clean() {
		t.Errorf("after the rebuild: %+v, %v; want it clean", rep.Repairs, err)
	}
	var logged []string
	b.Log.Select(ctx, world.Filter{IDs: []string{id}, Sources: []world.Source{world.SourceSystem}}, func(r *world.Record) error {
		logged = append(logged, r.Entry.Output)
		return nil
	})
	if len(logged) != 1 || !strings.HasPrefix(logged[0], "rebuild: recreated tasks/pending/"+id+".yaml from its start entry") {
		t.Errorf("logged %q, want the recreation", logged)
	}
}
