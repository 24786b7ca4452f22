package pgboard_test

import (
	"testing"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/pgboard"
)

// FuzzTaskOfRow: a row of board_tasks, whatever it holds, is a task only
// when the file store would read it as one (a folder of the six, a task
// id, a body within the limit that parses and names the row's id), and
// an error otherwise; nothing panics.
func FuzzTaskOfRow(f *testing.F) {
	f.Add("t-00000001", "pending", []byte("id: t-00000001\ntitle: x\n"))
	f.Add("t-00000001", "pending", []byte("id: t-00000002\ntitle: x\n"))
	f.Add("t-00000001", "nowhere", []byte("id: t-00000001\ntitle: x\n"))
	f.Add("../etc", "failed", []byte("id: ../etc\ntitle: x\n"))
	f.Add("a", "completed", []byte("id: a\ntitle: x\npriority: urgent\n"))
	f.Add("a", "completed", []byte("\x00[{"))
	f.Fuzz(func(t *testing.T, id, folder string, body []byte) {
		task, got, err := pgboard.TaskOfRow(id, folder, body)
		if err != nil {
			if task != nil {
				t.Fatalf("error %v with a task", err)
			}
			return
		}
		if task == nil || task.ID != id || string(got) != folder || !got.Valid() || board.CheckID(id) != nil || len(body) > board.MaxFileBytes {
			t.Fatalf("row (%q, %q) read as %+v in %q", id, folder, task, got)
		}
	})
}
