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
//
// The records of what happened outlive the command that is being
// cancelled: LLM calls are written for up to ten seconds after their
// context ended, a run's attempts, its outcome and index runs whenever
// they come. A write that fails says what it was recording ("record LLM
// call: …"); the reads return the database's own error for their caller
// to put in context.
package corpus

import (
	"context"
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

// recordTimeout bounds the write of an LLM call whose context has ended.
const recordTimeout = 10 * time.Second

// outliving returns a context for recording an LLM call: it survives
// ctx's cancellation, for up to recordTimeout, so a call is recorded even
// when the command is being cancelled, a failed call included.
func outliving(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
}

// inTx runs f in a transaction, committed when f returns nil.
func (c *Corpus) inTx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := f(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// nullString is s, or NULL when s is empty.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// nullInt is n, or NULL when n is 0.
func nullInt(n int) any {
	if n == 0 {
		return nil
	}
	return n
}

// errString is err's text, or NULL when err is nil.
func errString(err error) any {
	if err == nil {
		return nil
	}
	return err.Error()
}
