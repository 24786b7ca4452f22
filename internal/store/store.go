// Package store opens cra's three SQLite databases (seed 001 §4): the
// curated knowledge base, the append-only raw activity log, and the
// per-task session DBs. It is the only package that knows the SQL driver,
// and it applies the embedded schema migrations.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite" // registers the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"
)

// Role names one of the three databases (§4.2).
type Role string

// The three database roles.
const (
	Curated Role = "curated"
	Raw     Role = "raw"
	Session Role = "session"
)

// ErrNotExist is returned by a read-only open of a database file that has
// not been created yet.
var ErrNotExist = errors.New("database does not exist")

// ErrDamaged matches (errors.Is) the error of an open that found a file
// SQLite cannot read as a database, or a corrupt one; the error's text
// says what to do with the file.
var ErrDamaged = errors.New("database file is damaged")

//go:embed migrations
var migrations embed.FS

// Layout names the database files of one state directory (.clean_room/);
// statedir.Dir is the one layout.
type Layout interface {
	// Path is the state directory itself.
	Path() string
	Curated() string
	Raw() string
	Session(taskID string) string
}

// Factory opens databases under one state directory (.clean_room/).
type Factory struct {
	// Layout names curated.sqlite, raw.sqlite and sessions/'s files.
	Layout Layout

	// busyTimeout is SQLite's busy timeout on every connection; zero is
	// defaultBusyTimeout (tests shorten it).
	busyTimeout time.Duration
	// sleep waits between Open's tries; nil waits on a timer (tests
	// count the tries instead).
	sleep func(ctx context.Context, d time.Duration) error
}

// defaultBusyTimeout is how long a statement waits for another
// connection's lock before SQLite answers SQLITE_BUSY.
const defaultBusyTimeout = 5 * time.Second

// openBackoff is what Open waits before each new try of a database that
// stayed busy past the busy timeout (a process killed during a write
// leaves the WAL for the next opener to recover; another cra may be
// migrating it): bounded, so that a database held for good fails the
// open, naming the cause, in about half a minute.
func openBackoff() [5]time.Duration {
	return [...]time.Duration{100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second}
}

// Dir is the state directory the factory opens databases in.
func (f *Factory) Dir() string { return f.Layout.Path() }

// NewFactory returns a factory for the state directory l names
// (statedir.At(dir)).
func NewFactory(l Layout) *Factory { return &Factory{Layout: l} }

// sessionID says whether id may name a session database: a letter or
// digit, then up to 127 letters, digits, '_', '.' or '-'.
func sessionID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i, c := range []byte(id) {
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '_' && c != '.' && c != '-') {
			return false
		}
	}
	return true
}

// Path returns the file of a database. taskID is required for Session and
// ignored otherwise.
func (f *Factory) Path(role Role, taskID string) (string, error) {
	switch role {
	case Curated:
		return f.Layout.Curated(), nil
	case Raw:
		return f.Layout.Raw(), nil
	case Session:
		if !sessionID(taskID) {
			return "", fmt.Errorf("invalid session task id %q: use letters, digits, '-', '_' or '.'", taskID)
		}
		return f.Layout.Session(taskID), nil
	}
	return "", fmt.Errorf("unknown database role %q", role)
}

// Open opens a database (seed 001 §4.2: get_connection(role, task_id,
// read_only)). Read-write opens create the file and apply migrations; every
// connection runs in WAL mode with foreign keys on. Read-only opens refuse
// writes at the SQLite level and return ErrNotExist when the file is absent.
//
// A database still busy after the busy timeout (SQLITE_BUSY) is tried
// again after each wait of openBackoff; the error of the last try says
// how often it was tried.
func (f *Factory) Open(ctx context.Context, role Role, taskID string, readOnly bool) (*sql.DB, error) {
	path, err := f.Path(role, taskID)
	if err != nil {
		return nil, err
	}
	backoff := openBackoff()
	for try := 0; ; try++ {
		db, err := f.open(ctx, role, path, readOnly)
		if err == nil || !busy(err) {
			return db, err
		}
		if try == len(backoff) {
			return nil, fmt.Errorf("%w (tried %d times over about %s: another process holds the database; stop it, or if none runs, run the command again)", err, try+1, f.backoffTotal())
		}
		if err := f.wait(ctx, backoff[try]); err != nil {
			return nil, fmt.Errorf("open %s db %s: %w", role, path, err)
		}
	}
}

// busy reports whether err is SQLite's SQLITE_BUSY (any extended code).
func busy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

func (f *Factory) wait(ctx context.Context, d time.Duration) error {
	if f.sleep != nil {
		return f.sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// backoffTotal is the time Open's tries take at most, busy timeouts
// included.
func (f *Factory) backoffTotal() time.Duration {
	backoff := openBackoff()
	total := time.Duration(len(backoff)+1) * f.busyFor()
	for _, d := range backoff {
		total += d
	}
	return total.Round(time.Second)
}

// busyFor is the busy timeout of f's connections.
func (f *Factory) busyFor() time.Duration {
	if f.busyTimeout > 0 {
		return f.busyTimeout
	}
	return defaultBusyTimeout
}

// open is one try of Open.
func (f *Factory) open(ctx context.Context, role Role, path string, readOnly bool) (*sql.DB, error) {
	if readOnly {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("open %s db %s: %w", role, path, ErrNotExist)
		}
	} else if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("open %s db: %w", role, err)
	}
	db, err := sql.Open("sqlite", dsn(path, role, readOnly, f.busyFor()))
	if err != nil {
		return nil, fmt.Errorf("open %s db: %w", role, err)
	}
	if err := checkWAL(ctx, db, readOnly); err != nil {
		db.Close()
		if readOnly && readOnlyDir(err) && !hasWAL(path) {
			return openImmutable(ctx, path, role, f.busyFor())
		}
		return nil, openError(role, path, err)
	}
	if !readOnly {
		if err := Migrate(ctx, db, role); err != nil {
			db.Close()
			return nil, openError(role, path, err)
		}
	}
	return db, nil
}

// readOnlyDir reports whether SQLite refused a read-only open because it
// may not make the -shm file a WAL reader needs beside the database: the
// directory is not writable (an agent's sandboxed run reading the index).
func readOnlyDir(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_READONLY_DIRECTORY
}

// hasWAL reports whether path has a write-ahead log with frames in it:
// pages that the database file alone does not hold yet.
func hasWAL(path string) bool {
	st, err := os.Stat(path + "-wal")
	return err == nil && st.Size() > 0
}

// openImmutable opens path read-only as a file that does not change
// (SQLite's immutable=1: no -shm, no locks), for a reader whose directory
// refuses the -shm file. It is used only when no -wal file holds pages
// the database lacks; a writer that starts meanwhile may make a read see
// a page half written, which fails that read (the next one starts again).
func openImmutable(ctx context.Context, path string, role Role, busy time.Duration) (*sql.DB, error) {
	u := dsn(path, role, true, busy)
	u += "&immutable=1"
	db, err := sql.Open("sqlite", u)
	if err != nil {
		return nil, fmt.Errorf("open %s db: %w", role, err)
	}
	if err := checkWAL(ctx, db, true); err != nil {
		db.Close()
		return nil, openError(role, path, err)
	}
	return db, nil
}

// openError wraps the error of an open that failed after the driver
// started, adding what to do with a damaged file and ErrDamaged for callers
// that test for it.
func openError(role Role, path string, err error) error {
	werr := fmt.Errorf("open %s db %s: %w%s", role, path, err, damagedHint(err, role))
	if damaged(err) {
		return &damagedError{err: werr}
	}
	return werr
}

// damagedError is an open error that also matches ErrDamaged.
type damagedError struct{ err error }

func (e *damagedError) Error() string   { return e.err.Error() }
func (e *damagedError) Unwrap() []error { return []error{e.err, ErrDamaged} }

// damaged reports whether err is SQLite's "not a database" or "corrupt".
func damaged(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && (se.Code()&0xff == sqlite3.SQLITE_NOTADB || se.Code()&0xff == sqlite3.SQLITE_CORRUPT)
}

// damagedHint says what to do with a file SQLite cannot read as a
// database: the curated one is rebuilt from the repository, the others
// hold records worth keeping.
func damagedHint(err error, role Role) string {
	if !damaged(err) {
		return ""
	}
	if role == Curated {
		return " (the file is damaged or not cra's: run 'cra index --rebuild' to set it aside and build it anew)"
	}
	return " (the file is damaged or not cra's: move it aside, keeping it for its records, and cra starts a new one)"
}

// mmapBytes bounds the memory map of a database file; the map holds the
// operating system's cached pages, not a copy.
const mmapBytes = 256 << 20

func dsn(path string, role Role, readOnly bool, busy time.Duration) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	// Reads through a memory map instead of a pread per page: a process
	// opens the curated database cold, and a retrieval touches pages all
	// over it (thousands of syscalls without the map).
	q.Add("_pragma", fmt.Sprintf("mmap_size(%d)", mmapBytes))
	switch {
	case readOnly:
		q.Set("mode", "ro")
	case role == Session:
		// A session is a run's scratch memory, archived into the raw
		// database and deleted when the run ends (seed 001 §11.1): it
		// needs no fsync, which costs more than the run's writes to it.
		q.Add("_pragma", "synchronous(off)")
	default:
		q.Add("_pragma", "synchronous(normal)")
	}
	if !readOnly {
		// The driver runs the _pragma list sorted by name, then this: so
		// synchronous is set before the switch to WAL, itself a write (with
		// fsyncs unless synchronous says otherwise) when the file is new.
		q.Set("_journal_mode", "WAL")
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path), RawQuery: q.Encode()}
	return u.String()
}

// checkWAL verifies that WAL took (a filesystem without shared memory
// support silently stays in rollback mode) and that foreign keys are on.
func checkWAL(ctx context.Context, db *sql.DB, readOnly bool) error {
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	// A read-only open of a file that was never written has no journal yet.
	if !strings.EqualFold(mode, "wal") && !readOnly {
		return fmt.Errorf("journal_mode is %q, want wal (is the filesystem a network share?)", mode)
	}
	var fk int
	if err := db.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil {
		return err
	}
	if fk != 1 {
		return errors.New("foreign keys are off")
	}
	return nil
}

// Migrate applies the embedded migrations of role that db has not seen, in
// one transaction, recording each in schema_migrations. Files are never
// edited once released: a change is a new NNNN_name.sql file. The
// transaction takes the write lock first (BEGIN IMMEDIATE), so that two
// processes opening a database that needs an upgrade take turns under
// the busy timeout: in WAL a read transaction that turns into a write
// after another wrote fails at once.
func Migrate(ctx context.Context, db *sql.DB, role Role) error {
	files, err := migrationFiles(role)
	if err != nil {
		return err
	}
	// Most opens find nothing to do: a read says so without the lock.
	var current int
	if err := db.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&current); err == nil && current == len(files) {
		return nil
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := conn.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&current); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if n := len(files); current > n {
		return fmt.Errorf("schema version %d is newer than this cra knows (%d): upgrade cra", current, n)
	}
	for _, m := range files {
		if m.version <= current {
			continue
		}
		body, err := migrations.ReadFile(m.path)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if _, err := conn.ExecContext(ctx, string(body)); err != nil {
			return fmt.Errorf("migrate %s: %w", m.path, err)
		}
		if _, err := conn.ExecContext(ctx, "INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)",
			m.version, m.name, Now()); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	committed = true
	return nil
}

type migration struct {
	version int
	name    string
	path    string
}

func migrationFiles(role Role) ([]migration, error) {
	dir := "migrations/" + string(role)
	entries, err := fs.ReadDir(migrations, dir)
	if err != nil {
		return nil, fmt.Errorf("no migrations for role %q", role)
	}
	var out []migration
	for _, e := range entries {
		name := e.Name()
		num, rest, ok := strings.Cut(name, "_")
		if !ok || !strings.HasSuffix(name, ".sql") {
			return nil, fmt.Errorf("bad migration file name %s", name)
		}
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("bad migration file name %s", name)
		}
		out = append(out, migration{version: v, name: strings.TrimSuffix(rest, ".sql"), path: dir + "/" + name})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migrations of %s are not numbered 1..n: %s", role, m.path)
		}
	}
	return out, nil
}

// Now returns the current time as stored in every timestamp column: RFC 3339
// UTC with milliseconds.
func Now() string { return time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// QuickCheck runs SQLite's quick_check on db (O(N), lighter than
// integrity_check): nil when the file reads as sound, else an error that
// matches ErrDamaged and quotes SQLite's first findings.
func QuickCheck(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, "PRAGMA quick_check(5)")
	if err != nil {
		if damaged(err) {
			return &damagedError{err: fmt.Errorf("quick_check: %w", err)}
		}
		return fmt.Errorf("quick_check: %w", err)
	}
	defer rows.Close()
	var findings []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return &damagedError{err: fmt.Errorf("quick_check: %w", err)}
		}
		if s != "ok" {
			findings = append(findings, s)
		}
	}
	if err := rows.Err(); err != nil {
		return &damagedError{err: fmt.Errorf("quick_check: %w", err)}
	}
	if len(findings) > 0 {
		return &damagedError{err: fmt.Errorf("quick_check: %s", strings.Join(findings, "; "))}
	}
	return nil
}

// IsDamaged reports whether err says a database file is damaged: an
// ErrDamaged, or SQLite's "malformed" or "not a database" from any call.
func IsDamaged(err error) bool { return errors.Is(err, ErrDamaged) || damaged(err) }

// SetAside renames a database file, with its -wal and -shm, to
// <file>.damaged, replacing an older one, so that the next open starts a
// new database; it returns the new name, or "" when there was no file.
func (f *Factory) SetAside(role Role) (string, error) {
	path, err := f.Path(role, "")
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	aside := path + ".damaged"
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(aside + suffix)
		if err := os.Rename(path+suffix, aside+suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("set %s db aside: %w", role, err)
		}
	}
	return aside, nil
}
