package store

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/statedir"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// holdWriteLock makes raw.sqlite under dir in WAL mode, without cra's
// schema, and holds its write lock (BEGIN IMMEDIATE) on a connection of
// its own, as a process killed mid-write or another cra migrating it
// would; release lets it go.
func holdWriteLock(t *testing.T, f *Factory) (release func()) {
	t.Helper()
	path, err := f.Path(Raw, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(f.Dir(), 0o755); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	released := false
	release = func() {
		if !released {
			released = true
			if _, err := conn.ExecContext(context.Background(), "COMMIT"); err != nil {
				t.Error(err)
			}
			conn.Close()
		}
	}
	t.Cleanup(release)
	return release
}

// TestOpenRetriesBusy: an open that finds the database's write lock held
// past the busy timeout waits and tries again, a bounded number of
// times: it succeeds once the lock is let go, and fails naming the tries
// when it never is.
func TestOpenRetriesBusy(t *testing.T) {
	for _, tc := range []struct {
		name       string
		releaseAt  int // the wait after which the lock is let go; 0 never
		wantWaits  int
		wantErrSub string
	}{
		{name: "released after two waits", releaseAt: 2, wantWaits: 2},
		{name: "held for good", wantWaits: len(openBackoff()), wantErrSub: "tried 6 times over about"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFactory(statedir.At(t.TempDir()))
			f.busyTimeout = 20 * time.Millisecond
			release := holdWriteLock(t, f)
			var waits []time.Duration
			f.sleep = func(ctx context.Context, d time.Duration) error {
				waits = append(waits, d)
				if len(waits) == tc.releaseAt {
					release()
				}
				return ctx.Err()
			}
			db, err := f.Open(context.Background(), Raw, "", false)
			if len(waits) != tc.wantWaits {
				t.Errorf("waited %d times (%v), want %d", len(waits), waits, tc.wantWaits)
			}
			for i, d := range waits {
				if want := openBackoff()[i]; d != want {
					t.Errorf("wait %d: %v, want %v", i, d, want)
				}
			}
			if tc.wantErrSub == "" {
				if err != nil {
					t.Fatalf("open after the lock was let go: %v", err)
				}
				defer db.Close()
				var n int
				if err := db.QueryRow("SELECT COUNT(*) FROM schema_migrations").Scan(&n); err != nil || n == 0 {
					t.Errorf("migrations: %d %v", n, err)
				}
				return
			}
			var se *sqlite.Error
			if err == nil || !strings.Contains(err.Error(), tc.wantErrSub) || !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY {
				t.Errorf("open of a database held for good: %v, want SQLITE_BUSY and %q", err, tc.wantErrSub)
			}
		})
	}
}

// TestOpenBusyStopsWithContext: a cancelled context ends the waits.
func TestOpenBusyStopsWithContext(t *testing.T) {
	f := NewFactory(statedir.At(t.TempDir()))
	f.busyTimeout = 20 * time.Millisecond
	holdWriteLock(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	f.sleep = func(ctx context.Context, d time.Duration) error {
		cancel()
		return ctx.Err()
	}
	if _, err := f.Open(ctx, Raw, "", false); !errors.Is(err, context.Canceled) {
		t.Errorf("open with the context cancelled while it waited: %v", err)
	}
}
