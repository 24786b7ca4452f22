package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// lockNotices is the advisory lock of the notification queue's one
// reader (review.NoticeQueue), held by a session: on every host one
// Notify at a time.
const lockNotices int64 = 0x63726134 // "cra4"

// noticeHold is the session that holds lockNotices for this Log, if any.
type noticeHold struct {
	mu   sync.Mutex
	conn *pgxpool.Conn
}

// LockNotices takes the notification queue's lock if no one holds it,
// on this host or any other; ok is false when another holds it. The lock
// is a session's (pg_try_advisory_lock on a connection kept for it), and
// the queue's reads and writes go through that session until unlock: if
// the connection is lost, the database lets the lock go and the holder's
// next step fails instead of writing over a new holder's queue.
func (l *Log) LockNotices(ctx context.Context) (unlock func(), ok bool, err error) {
	h := &l.notices
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conn != nil {
		return nil, false, nil // this process holds it
	}
	conn, err := l.pool.Acquire(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("notifications: take the lock: %w", err)
	}
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", lockNotices).Scan(&ok); err != nil || !ok {
		conn.Release()
		if err != nil {
			return nil, false, fmt.Errorf("notifications: take the lock: %w", err)
		}
		return nil, false, nil
	}
	h.conn = conn
	var once sync.Once
	return func() { once.Do(func() { l.unlockNotices(ctx, conn) }) }, true, nil
}

// unlockNotices lets the lock go and returns its session to the pool; a
// session whose unlock failed is closed, which lets the lock go too.
func (l *Log) unlockNotices(ctx context.Context, conn *pgxpool.Conn) {
	h := &l.notices
	h.mu.Lock()
	defer h.mu.Unlock()
	ctx = context.WithoutCancel(ctx)
	var released bool
	if err := conn.QueryRow(ctx, "SELECT pg_advisory_unlock($1)", lockNotices).Scan(&released); err != nil || !released {
		conn.Conn().Close(ctx)
	}
	conn.Release()
	if h.conn == conn {
		h.conn = nil
	}
}

// errNoticesUnlocked: the queue is read and written under its lock only.
var errNoticesUnlocked = errors.New("the queue's lock is not held (LockNotices first)")

// held runs fn on the session that holds the lock.
func (l *Log) held(fn func(*pgxpool.Conn) error) error {
	h := &l.notices
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conn == nil {
		return errNoticesUnlocked
	}
	return fn(h.conn)
}

// AppendNotice adds body, a JSON object, at the queue's end. It needs
// the lock.
func (l *Log) AppendNotice(ctx context.Context, body []byte) error {
	return l.held(func(c *pgxpool.Conn) error {
		if _, err := c.Exec(ctx, "INSERT INTO notify_queue (body) VALUES ($1::jsonb)", string(body)); err != nil {
			return fmt.Errorf("notifications: keep one: %w", err)
		}
		return nil
	})
}

// Notices returns the queue, oldest first. It needs the lock.
func (l *Log) Notices(ctx context.Context) ([][]byte, error) {
	var out [][]byte
	err := l.held(func(c *pgxpool.Conn) error {
		rows, err := c.Query(ctx, "SELECT body::text FROM notify_queue ORDER BY id")
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]byte, error) {
			var s string
			err := r.Scan(&s)
			return []byte(s), err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("notifications: read the queue: %w", err)
	}
	return out, nil
}

// ReplaceNotices replaces the queue by left, in order, whole or not at
// all. It needs the lock.
func (l *Log) ReplaceNotices(ctx context.Context, left [][]byte) error {
	err := l.held(func(c *pgxpool.Conn) error {
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "DELETE FROM notify_queue"); err != nil {
				return err
			}
			for _, b := range left {
				if _, err := tx.Exec(ctx, "INSERT INTO notify_queue (body) VALUES ($1::jsonb)", string(b)); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("notifications: write the queue: %w", err)
	}
	return nil
}
