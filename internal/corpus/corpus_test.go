package corpus_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
	"github.com/cra-dev/cra/internal/store/storetest"
)

// openRaw returns a corpus over a new raw database, stamping its rows
// with openRawClock, and the database for the test's own queries.
func openRaw(t *testing.T) (*corpus.Corpus, *sql.DB) {
	t.Helper()
	db, err := store.NewFactory(statedir.At(t.TempDir())).Open(context.Background(), store.Raw, "", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c := corpus.New(db)
	c.Now = openRawClock
	return c, db
}

// openRawClock is the corpora's clock: one instant, not in UTC.
func openRawClock() time.Time { return time.Date(2024, 3, 5, 13, 0, 0, 0, time.FixedZone("CET", 3600)) }

// stamp is the rows' timestamp: openRaw's clock, in UTC.
const stamp = "2024-03-05T12:00:00.000Z"

// row is a stored row, NULLs as nil.
type row = storetest.Row

func queryRows(t *testing.T, db *sql.DB, q string) []row { return storetest.Rows(t, db, q) }

func count(t *testing.T, db *sql.DB, table string) int {
	t.Helper()
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

var errDown = errors.New("connection refused")
