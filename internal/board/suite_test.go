package board_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/board/boardtest"
	"github.com/cra-dev/cra/internal/world"
)

// FileBackend is the suite's file store: a tasks directory and world.log
// in a temp state directory.
var fileBackend = boardtest.Backend{
	New: func(t *testing.T) *board.Board {
		dir := t.TempDir()
		l, err := world.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		return board.New(board.NewFileStore(dir), l)
	},
	Raw: func(t *testing.T, b *board.Board, id string, folder board.Folder, body []byte) {
		path := b.Store.(*board.FileStore).Path(id, folder)
		if body == nil {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			return
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, body, 0o644); err != nil {
			t.Fatal(err)
		}
	},
}

// TestSuite runs the stores' suite on the file store; internal/pgboard
// runs it on PostgreSQL's.
func TestSuite(t *testing.T) { boardtest.Run(t, fileBackend) }
