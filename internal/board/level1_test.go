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
