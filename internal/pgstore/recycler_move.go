package pgstore

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
)

// RecyclerState is what the recycler keeps besides the log and the board:
// each task's review history (its records, oldest first, as
// verdict.HistoryStore holds them) and the notifications not told yet
// (review.NoticeQueue's, oldest first). 'cra fleet import' moves a file
// board's into the database with its log, and 'cra fleet export' writes
// them back, so that a task's earlier reviews still count once a fleet
// takes it over.
type RecyclerState struct {
	Reviews map[string][][]byte // by task ID
	Notices [][]byte
}

// ImportRecycler copies s into tx, whose review histories and
// notification queue must be empty. A history's records keep their bytes
// and order (a torn line too: the reader skips it as the file's does);
// blank lines are dropped. A notice must be a JSON object: PostgreSQL
// keeps it as jsonb, so its export is the same object, not the same
// bytes.
func ImportRecycler(ctx context.Context, tx pgx.Tx, s RecyclerState) error {
	for _, table := range []string{"review_history", "notify_queue"} {
		var have int64
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&have); err != nil {
			return fmt.Errorf("import: %w", err)
		}
		if have > 0 {
			return fmt.Errorf("the database's %s already holds %d rows: import goes into an empty one", table, have)
		}
	}
	ids := make([]string, 0, len(s.Reviews))
	for id := range s.Reviews {
		ids = append(ids, id)
	}
	slices.Sort(ids) // one order, so that the same files give the same rows
	var rows [][]any
	for _, id := range ids {
		if err := checkName("task ID", id, maxTaskIDBytes); err != nil {
			return fmt.Errorf("import the reviews: %w", err)
		}
		for i, line := range s.Reviews[id] {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			if err := checkReviewLine(line); err != nil {
				return fmt.Errorf("import the reviews of %s: record %d %w: remove it from the file, or cut its evidence", id, i+1, err)
			}
			rows = append(rows, []any{id, line})
		}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"review_history"}, []string{"task_id", "body"}, pgx.CopyFromRows(rows)); err != nil {
		return fmt.Errorf("import the reviews: %w", err)
	}
	for i, n := range s.Notices {
		if _, err := tx.Exec(ctx, "INSERT INTO notify_queue (body) VALUES ($1::jsonb)", string(n)); err != nil {
			return fmt.Errorf("import notification %d of the queue: %w", i+1, err)
		}
	}
	return nil
}

// ExportRecycler reads the review histories and the notification queue,
// as ImportRecycler takes them, in one snapshot.
func (l *Log) ExportRecycler(ctx context.Context) (RecyclerState, error) {
	s := RecyclerState{Reviews: map[string][][]byte{}}
	err := pgx.BeginTxFunc(ctx, l.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, "SELECT task_id, body FROM review_history ORDER BY task_id, seq")
		if err != nil {
			return err
		}
		var id string
		var body []byte
		_, err = pgx.ForEachRow(rows, []any{&id, &body}, func() error {
			s.Reviews[id] = append(s.Reviews[id], bytes.Clone(body))
			return nil
		})
		if err != nil {
			return err
		}
		rows, err = tx.Query(ctx, "SELECT body::text FROM notify_queue ORDER BY id")
		if err != nil {
			return err
		}
		var n string
		_, err = pgx.ForEachRow(rows, []any{&n}, func() error {
			s.Notices = append(s.Notices, []byte(n))
			return nil
		})
		return err
	})
	if err != nil {
		return RecyclerState{}, fmt.Errorf("export the reviews and notifications: %w", err)
	}
	return s, nil
}
