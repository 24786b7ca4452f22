// Package pgstore keeps cra's shared state in PostgreSQL, for a fleet of
// hosts on one database (DESIGN.md "Scale", issue 34). Today it holds the
// world log: Log implements world.Store as an append-only table, each row
// one line exactly as written, numbered without a gap in commit order, so
// that every reader of the file reads it the same way and Export writes
// world.log byte for byte.
//
// The schema comes from embedded, versioned migrations (Migrate, run by
// 'cra fleet init'); Open refuses a database at another version.
package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Open connects to the database at url, whose schema must be at
// SchemaVersion, and returns its world log. Close releases it.
func Open(ctx context.Context, url string) (*Log, error) {
	pool, err := openPool(ctx, url)
	if err != nil {
		return nil, err
	}
	return &Log{Now: time.Now, pool: pool}, nil
}

// openPool connects to the database at url, whose schema must be at
// SchemaVersion.
func openPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's message may quote the URL, password and all.
		return nil, fmt.Errorf("the database URL does not parse: give a postgres:// URL or key=value string")
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	if err := checkSchema(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// Init connects to the database at url and migrates its schema
// (Migrate); it returns the versions before and after.
func Init(ctx context.Context, url string) (from, to int, err error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return 0, 0, fmt.Errorf("the database URL does not parse: give a postgres:// URL or key=value string")
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return 0, 0, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer conn.Close(ctx)
	return Migrate(ctx, conn)
}

// Close releases the log's connections.
func (l *Log) Close() { l.pool.Close() }
