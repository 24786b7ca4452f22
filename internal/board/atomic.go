package board

import (
	"context"

	"github.com/cra-dev/cra/internal/world"
)

// Atomic is a Store whose changes can commit in one transaction with the
// world log's entries: PostgreSQL's (internal/pgstore), where the log and
// the tasks are tables of one database, so that "the log line first, then
// the file" leaves no window in which a crash keeps one without the other
// (DESIGN.md "Scale"). The file store is not Atomic: Rebuild closes its
// window from the log.
type Atomic interface {
	Store
	// Atomic calls fn with a log and a store whose writes commit together
	// when fn returns nil and are rolled back when it fails. When log is
	// not in the store's database it calls fn(log, store) as it is.
	Atomic(ctx context.Context, log world.Store, fn func(log world.Store, store Store) error) error
}

// Atomically is atomically for the board's other writers (the
// processor's start and finish of a run): fn's log entries and task
// changes commit together where the store is Atomic. The caller holds
// the board's lock.
func (b *Board) Atomically(ctx context.Context, fn func(b *Board) error) error {
	return b.atomically(ctx, fn)
}

// atomically runs fn on a copy of b whose log and store commit together
// where the store is Atomic, and on b itself elsewhere. The caller holds
// the board's lock.
func (b *Board) atomically(ctx context.Context, fn func(b *Board) error) error {
	a, ok := b.Store.(Atomic)
	if !ok {
		return fn(b)
	}
	return a.Atomic(ctx, b.Log, func(log world.Store, store Store) error {
		tb := *b
		tb.Log, tb.Store = log, store
		return fn(&tb)
	})
}
