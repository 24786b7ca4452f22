package pgboard_test

import (
	"context"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/board/boardtest"
	"github.com/cra-dev/cra/internal/pgboard"
	"github.com/cra-dev/cra/internal/pgstore"
	"github.com/cra-dev/cra/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// openLog returns the world log of a new database of the test cluster,
// its schema made by Init.
func openLog(t testing.TB) *pgstore.Log {
	t.Helper()
	ctx := context.Background()
	url := pgtest.DB(t)
	if _, _, err := pgstore.Init(ctx, url); err != nil {
		t.Fatal(err)
	}
	l, err := pgstore.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// pgBackend is the suite's PostgreSQL store, with the world log of the
// same database.
var pgBackend = boardtest.Backend{
	New: func(t *testing.T) *board.Board {
		l := openLog(t)
		return board.New(pgboard.New(l), l)
	},
	Raw: func(t *testing.T, b *board.Board, id string, folder board.Folder, body []byte) {
		pool := b.Log.(*pgstore.Log).Pool()
		var err error
		if body == nil {
			_, err = pool.Exec(context.Background(), "DELETE FROM board_tasks WHERE id = $1 AND folder = $2", id, string(folder))
		} else {
			_, err = pool.Exec(context.Background(), `INSERT INTO board_tasks (id, folder, body, updated_ms) VALUES ($1, $2, $3, $4)
				ON CONFLICT (id) DO UPDATE SET folder = $2, body = $3, updated_ms = $4`, id, string(folder), body, time.Now().UnixMilli())
		}
		if err != nil {
			t.Fatal(err)
		}
	},
}

// TestSuite runs the stores' suite (internal/board/boardtest) on
// PostgreSQL.
func TestSuite(t *testing.T) { boardtest.Run(t, pgBackend) }
