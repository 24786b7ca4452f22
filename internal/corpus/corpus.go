// Package corpus owns the raw database (seed 001 §4.6): the append-only
// record of everything cra did, and the training corpus that the
// self-improvement loop reads. Every row written to raw.sqlite (LLM calls,
// retrieval decisions, task runs and their attempts, enrichment outputs,
// index runs, session archives) and every read of it goes through a
// *Corpus, so the SQL of that database has one owner and a later backend
// changes one package.
//
// A Corpus is safe for concurrent use; it does not own the *sql.DB it
// wraps, whose opener closes it.
package corpus

import (
	"database/sql"
	"time"
)

// TimestampFormat is the format of every timestamp column of the raw
// database (as store.Now writes it).
const TimestampFormat = "2006-01-02T15:04:05.000Z07:00"

// Corpus reads and appends the rows of one raw database.
type Corpus struct {
	db *sql.DB
	// Now stamps the rows; tests replace it.
	Now func() time.Time
}

// New returns the corpus over the raw database db, opened read-write for
// appends or read-only for reads.
func New(db *sql.DB) *Corpus { return &Corpus{db: db, Now: time.Now} }

// timestamp is the current time in the columns' format.
func (c *Corpus) timestamp() string { return c.Now().UTC().Format(TimestampFormat) }
