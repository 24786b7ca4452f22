package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cra-dev/cra/internal/world"
)

// notifyChannel is the channel every append notifies (pg_notify, in the
// append's transaction), its payload the new line's id.
const notifyChannel = "cra_world"

// Follow's waits: it reads the log again after followRecheck with no
// notification (one lost to a reconnection is then late, never missed),
// and polls every followPoll while it cannot listen.
const (
	followRecheck = 5 * time.Second
	followPoll    = 250 * time.Millisecond
)

// Follow calls fn for each record f selects appended after from, as it
// comes, until ctx ends; it returns ctx's error. It resumes by line
// (from.Line, the id of the last line read): it LISTENs on a connection
// of its own and reads the new rows when an append, on any host,
// notifies; while it cannot listen (the database restarting) it polls,
// and listens again once it can.
func (l *Log) Follow(ctx context.Context, from world.Position, f world.Filter, fn func(*world.Record) error) error {
	pos := from
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.WithoutCancel(ctx))
		}
	}()
	for {
		if conn == nil {
			// Listen before reading: an append after the read notifies.
			conn, _ = l.listen(ctx)
		}
		next, err := l.scanFrom(ctx, pos, f, true, fn)
		if err != nil {
			return err
		}
		pos = next
		if conn == nil {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(followPoll):
			}
			continue
		}
		if err := waitPast(ctx, conn, pos.Line, cmp.Or(l.recheck, followRecheck)); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			conn.Close(ctx)
			conn = nil
		}
	}
}

// waitPast waits for a notification of a line after last, or
// followRecheck; it returns an error only when the connection failed.
func waitPast(ctx context.Context, conn *pgx.Conn, last int64, recheck time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, recheck)
	defer cancel()
	for {
		n, err := conn.WaitForNotification(wctx)
		if err != nil {
			if ctx.Err() == nil && errors.Is(wctx.Err(), context.DeadlineExceeded) && !conn.IsClosed() {
				return nil // read again, in case
			}
			return err
		}
		id, perr := strconv.ParseInt(n.Payload, 10, 64)
		if perr != nil || id > last {
			return nil // a payload that does not parse: read anyway
		}
		// A line already read (its notification came after the read).
	}
}

// listen opens a connection of its own (not the pool's: it is held for
// as long as Follow runs) that listens on notifyChannel.
func (l *Log) listen(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, l.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, fmt.Errorf("listen for appends: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("listen for appends: %w", err)
	}
	return conn, nil
}

// End returns the position after the log's last line: where a follower
// of the whole log from now starts.
func (l *Log) End(ctx context.Context) (world.Position, error) { return l.end(ctx) }

// PositionAt returns the position of the line that starts at byte offset
// off (its Line the id of the line before it), as a reader of the file
// that stopped there holds it; false when no line starts there and it is
// not the log's end. A client of the live feed resumes by offset (the web
// board's ?since=), and the log reads by id.
func (l *Log) PositionAt(ctx context.Context, off int64) (world.Position, bool, error) {
	if off < 0 {
		return world.Position{}, false, nil
	}
	if off == 0 {
		return world.Position{}, true, nil
	}
	var id int64
	err := l.pool.QueryRow(ctx, "SELECT id FROM world_log WHERE off = $1", off).Scan(&id)
	if err == nil {
		return world.Position{Offset: off, Line: id - 1}, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return world.Position{}, false, fmt.Errorf("find the world log's line at offset %d: %w", off, err)
	}
	end, err := l.end(ctx)
	if err != nil {
		return world.Position{}, false, err
	}
	return end, end.Offset == off, nil
}
