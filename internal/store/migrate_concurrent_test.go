package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cra-dev/cra/internal/statedir"
)

// TestConcurrentUpgradeOpen: after an upgrade that adds a migration,
// the daemon and a command open raw.sqlite at the same moment. Both must
// open; neither may fail with "database is locked".
func TestConcurrentUpgradeOpen(t *testing.T) {
	ctx := context.Background()
	files, err := migrationFiles(Raw)
	if err != nil {
		t.Fatal(err)
	}
	fails := 0
	var firstErr error
	for round := 0; round < 20; round++ {
		dir := t.TempDir()
		f := NewFactory(statedir.At(dir))
		// A database of the release before: every migration but the last.
		db, err := sql.Open("sqlite", dsn(filepath.Join(dir, "raw.sqlite"), Raw, false, defaultBusyTimeout))
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, db, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`)
		for _, m := range files[:len(files)-1] {
			body, _ := migrations.ReadFile(m.path)
			mustExec(t, db, string(body))
			mustExec(t, db, fmt.Sprintf("INSERT INTO schema_migrations VALUES (%d, '%s', 'x')", m.version, m.name))
		}
		db.Close()

		var wg sync.WaitGroup
		errs := make([]error, 2)
		start := make(chan struct{})
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				db, err := f.Open(ctx, Raw, "", false)
				if err == nil {
					db.Close()
				}
				errs[i] = err
			}()
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				fails++
				if firstErr == nil {
					firstErr = err
				}
			}
		}
	}
	if fails > 0 {
		t.Fatalf("%d of 40 concurrent opens failed after an upgrade; first: %v", fails, firstErr)
	}
}
