package pgstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one versioned step of the schema.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order. A file is
// named NNNN_what.sql; the numbers run 1, 2, ... without a gap.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, n := range names {
		base := path.Base(n)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name it NNNN_what.sql", base)
		}
		body, err := migrationFiles.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: base, sql: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: versions must run 1, 2, ... without a gap (want %d)", m.name, i+1)
		}
	}
	return out, nil
}

// SchemaVersion is the version of the schema this cra writes and reads.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

// Lock keys of pg_advisory_xact_lock: one for migrations, one that
// serializes appends to the world log (so that line numbers follow
// commit order with no gap).
const (
	lockMigrate int64 = 0x63726131 // "cra1"
	lockAppend  int64 = 0x63726132 // "cra2"
	lockClaim   int64 = 0x63726133 // "cra3": Fleet's claims take turns
)

// Migrate brings the schema of the database at conn up to SchemaVersion,
// each migration in the same transaction as its record in cra_schema.
// Processes migrating at once take turns on an advisory lock: the second
// finds the work done. It returns the versions before and after; a
// database a newer cra migrated is an error, and is left alone.
func Migrate(ctx context.Context, conn *pgx.Conn) (from, to int, err error) {
	ms, err := migrations()
	if err != nil {
		return 0, 0, err
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockMigrate); err != nil {
		return 0, 0, fmt.Errorf("migrate: take the migration lock: %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS cra_schema (
		version integer PRIMARY KEY, name text NOT NULL, applied timestamptz NOT NULL DEFAULT now())`); err != nil {
		return 0, 0, fmt.Errorf("migrate: %w", err)
	}
	if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM cra_schema").Scan(&from); err != nil {
		return 0, 0, fmt.Errorf("migrate: read the schema version: %w", err)
	}
	if from > len(ms) {
		return from, from, fmt.Errorf("the database's schema is at version %d, newer than this cra's %d: a newer cra migrated it; upgrade cra", from, len(ms))
	}
	for _, m := range ms[from:] {
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return from, from, fmt.Errorf("migrate: %s: %w", m.name, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO cra_schema (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
			return from, from, fmt.Errorf("migrate: record %s: %w", m.name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return from, from, fmt.Errorf("migrate: commit: %w", err)
	}
	return from, len(ms), nil
}

// checkSchema returns an error unless the database's schema is the one
// this cra knows, naming the command that fixes it.
func checkSchema(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) error {
	want := SchemaVersion()
	var have int
	err := q.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM cra_schema").Scan(&have)
	if err != nil {
		if strings.Contains(err.Error(), "42P01") { // undefined_table
			return fmt.Errorf("the database has no cra schema: run 'cra fleet init'")
		}
		return fmt.Errorf("read the schema version: %w", err)
	}
	switch {
	case have < want:
		return fmt.Errorf("the database's schema is at version %d, this cra needs %d: run 'cra fleet init'", have, want)
	case have > want:
		return fmt.Errorf("the database's schema is at version %d, newer than this cra's %d: upgrade cra", have, want)
	}
	return nil
}
