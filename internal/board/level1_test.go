package board

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/supervise"
	"github.com/cra-dev/cra/internal/world"
)

// TestLevel1BrokenTaskFile: one active task's file that a hand edit broke
// stops that task's restart, which fails naming the file, and no other
// action of the pass: the other dead run is restarted.
func TestLevel1BrokenTaskFile(t *testing.T) {
	ctx := context.Background()
	b, s, dir := newTestBoard(t)
	var ids []string
	for _, title := range []string{"broken file", "good file"} {
		task := add(t, b, title)
		if _, err := b.Log.Agent(ctx, world.StatusActive, task.ID, "run 1: shell", ""); err != nil {
			t.Fatal(err)
		}
		if err := s.Move(ctx, task.ID, Pending, InProgress); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.ID)
	}
	if err := os.WriteFile(s.Path(ids[0], InProgress), []byte("id: [oops\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &supervise.Pass{Log: b.Log, Board: b, StateDir: dir,
		Now:  func() time.Time { return time.Now().Add(time.Minute) }, // past the start grace
		Only: func(supervise.Process) bool { return false }}           // no process of this machine is ours
	_, err := p.Run(ctx)
	if err == nil {
		t.Error("the pass: got no error, want the broken file's")
	}
	if f := folderOn(t, s, ids[1]); f != Pending {
		t.Errorf("the good task, whose run is gone: in %s, want pending (restarted)", f)
	}
	if a, _, _ := b.Log.Lookup(ctx, ids[0]); a.Status != world.StatusActive {
		t.Errorf("the broken task: the log has %s, want it left active until its file is fixed", a.Status)
	}
}

// TestLevel1RepairsFolders: a task whose file did not follow its log line
// (the finish logged, the move out of in-progress failed) is put where the
// log says by the next Level 1 pass, not only at the daemon's next start,
// and the repair is logged; a task whose run the pass is told still goes
// is left to its run.
func TestLevel1RepairsFolders(t *testing.T) {
	ctx := context.Background()
	b, s, dir := newTestBoard(t)
	var ids []string
	for _, title := range []string{"moved badly", "still running"} {
		task := add(t, b, title)
		for _, st := range []world.Status{world.StatusActive, world.StatusFinish} {
			if _, err := b.Log.Agent(ctx, st, task.ID, "run 1: shell", ""); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Move(ctx, task.ID, Pending, InProgress); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.ID)
	}
	p := &supervise.Pass{Log: b.Log, Board: b, StateDir: dir,
		Held: func(id string) bool { return id == ids[1] },
		Only: func(supervise.Process) bool { return false }}
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if f := folderOn(t, s, ids[0]); f != Completed {
		t.Errorf("the task whose move failed: in %s, want completed", f)
	}
	if f := folderOn(t, s, ids[1]); f != InProgress {
		t.Errorf("the task a run holds: in %s, want it left in in-progress", f)
	}
	var logged []string
	b.Log.Select(ctx, world.Filter{IDs: []string{ids[0]}, Sources: []world.Source{world.SourceSystem}}, func(r *world.Record) error {
		logged = append(logged, r.Entry.Output)
		return nil
	})
	if len(logged) != 1 || logged[0] != "Level 1: moved from in-progress to completed, where its latest entry (finish) puts it" {
		t.Errorf("logged %q, want the repair", logged)
	}
}

// TestLevel1FutureStamps: an [agent:active] stamped an hour ahead (a clock
// stepped back, a line written by hand) does not make Level 1 wait an
// hour: the start grace counts from when the pass first saw it, and so
// does the backoff after restarts stamped ahead. The run, gone, is
// restarted once the grace has passed.
func TestLevel1FutureStamps(t *testing.T) {
	ctx := context.Background()
	b, s, dir := newTestBoard(t)
	task := add(t, b, "stamped ahead")
	now := time.Now()
	if _, err := b.Log.Append(ctx, world.Entry{Time: now.Add(time.Hour), Kind: world.KindAgent, Status: world.StatusActive,
		ID: task.ID, Output: "run 1: shell"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Move(ctx, task.ID, Pending, InProgress); err != nil {
		t.Fatal(err)
	}
	p := &supervise.Pass{Log: b.Log, Board: b, StateDir: dir, Now: func() time.Time { return now },
		Only: func(supervise.Process) bool { return false }}
	actions, err := p.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(actions) != 1 {
		t.Fatalf("first pass: %v, want one wait", actions)
	}
	if w, ok := actions[0].(supervise.Wait); !ok || w.Until.After(now.Add(supervise.DefaultStartGrace)) {
		t.Fatalf("first pass: %+v, want a wait of at most the start grace, not until the stamp", actions[0])
	}
	now = now.Add(supervise.DefaultStartGrace + time.Second)
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if f := folderOn(t, s, task.ID); f != Pending {
		t.Errorf("after the grace: in %s, want pending (restarted)", f)
	}
}
