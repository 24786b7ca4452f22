package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cra-dev/cra/internal/world"
)

// Pool returns the connections of the log's database, for the other
// tables a fleet keeps there (internal/pgboard's tasks).
func (l *Log) Pool() *pgxpool.Pool { return l.pool }

// Tx runs fn in one transaction of the log's database, with a log whose
// appends write in it: fn's appends and its own writes in tx commit
// together when fn returns nil, and none of them when it fails. Each
// append takes its turn for a line number as Append does and holds it to
// the end, so other writers of the log wait for the commit.
func (l *Log) Tx(ctx context.Context, fn func(tx pgx.Tx, log world.Store) error) error {
	return pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		return fn(tx, &txLog{Log: l, tx: tx})
	})
}

// txLog is the world log writing in a transaction of Log.Tx. Its
// appends (and Verify's and Begin's checks) see the transaction's own
// entries; its other reads are the log's, of committed entries only, so
// a caller reads first and writes last (as Board's changes do).
type txLog struct {
	*Log
	tx pgx.Tx
}

// Append implements world.Store in the transaction.
func (l *txLog) Append(ctx context.Context, e world.Entry) (world.Entry, error) {
	e, line, err := world.Prepare(e, l.Now)
	if err != nil {
		return world.Entry{}, err
	}
	if err := appendTx(ctx, l.tx, e, line[:len(line)-1]); err != nil {
		return world.Entry{}, appendError(err)
	}
	return e, nil
}

// Event implements world.Store in the transaction.
func (l *txLog) Event(ctx context.Context, source world.Source, id, output string) (world.Entry, error) {
	return l.Append(ctx, world.Entry{Kind: world.KindEvent, Source: source, ID: id, Output: output})
}

// Agent implements world.Store in the transaction.
func (l *txLog) Agent(ctx context.Context, status world.Status, id, output, need string) (world.Entry, error) {
	return l.Append(ctx, world.Entry{Kind: world.KindAgent, Status: status, ID: id, Output: output, Need: need})
}

// Verify implements world.Store in the transaction (Log.Verify).
func (l *txLog) Verify(ctx context.Context, id, review, output string) (world.Entry, error) {
	a, err := agentState(ctx, l.tx, id)
	if err != nil {
		return world.Entry{}, fmt.Errorf("read agent %s: %w", id, err)
	}
	if a == nil || a.Status != world.StatusFinish {
		from := world.Status("")
		if a != nil {
			from = a.Status
		}
		return world.Entry{}, &world.TransitionError{ID: id, From: from, To: world.StatusVerified}
	}
	if _, err := l.Event(ctx, world.SourceReview, id, review); err != nil {
		return world.Entry{}, err
	}
	return l.Agent(ctx, world.StatusVerified, id, output, "")
}

// Begin implements world.Store in the transaction (Log.Begin).
func (l *txLog) Begin(ctx context.Context, id, output, need string) error {
	a, err := agentState(ctx, l.tx, id)
	if err != nil {
		return fmt.Errorf("read agent %s: %w", id, err)
	}
	if a == nil {
		if _, err := l.Agent(ctx, world.StatusStart, id, output, need); err != nil {
			return err
		}
	} else if a.Status != world.StatusStart && a.Status != world.StatusRetry {
		return &world.TransitionError{ID: id, From: a.Status, To: world.StatusActive}
	}
	_, err = l.Agent(ctx, world.StatusActive, id, output, "")
	return err
}

var _ world.Store = (*txLog)(nil)
