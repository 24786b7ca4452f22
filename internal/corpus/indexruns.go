package corpus

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// IndexRun is an index_runs row (seed 001 §4.6): one run of 'cra index',
// failed runs included.
type IndexRun struct {
	Repo         string
	FilesScanned int
	FilesChanged int
	Duration     time.Duration
	// Status is "ok", "ok_with_warnings" or "failed: " and the error.
	Status string
	// Timestamp is when the run was recorded, as stored (TimestampFormat);
	// AddIndexRun sets it.
	Timestamp string
}

// AddIndexRun appends an index run. It writes even when ctx has been
// cancelled: the raw database is the activity log, and an interrupted run
// is part of it.
func (c *Corpus) AddIndexRun(ctx context.Context, r IndexRun) error {
	if _, err := c.db.ExecContext(context.WithoutCancel(ctx),
		`INSERT INTO index_runs(repo_path, files_scanned, files_changed, duration_ms, status, timestamp) VALUES (?, ?, ?, ?, ?, ?)`,
		r.Repo, r.FilesScanned, r.FilesChanged, r.Duration.Milliseconds(), r.Status, c.timestamp()); err != nil {
		return fmt.Errorf("record index run: %w", err)
	}
	return nil
}

// LastIndexRun returns the index run recorded last, and false when there
// is none.
func (c *Corpus) LastIndexRun(ctx context.Context) (IndexRun, bool, error) {
	var r IndexRun
	var ms int64
	err := c.db.QueryRowContext(ctx, `SELECT repo_path, files_scanned, files_changed, duration_ms, status, timestamp
		FROM index_runs ORDER BY id DESC LIMIT 1`).Scan(&r.Repo, &r.FilesScanned, &r.FilesChanged, &ms, &r.Status, &r.Timestamp)
	if errors.Is(err, sql.ErrNoRows) {
		return IndexRun{}, false, nil
	}
	if err != nil {
		return IndexRun{}, false, err
	}
	r.Duration = time.Duration(ms) * time.Millisecond
	return r, true, nil
}
