package pgstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
)

// MaxReviewLine caps one record of a review history, in bytes. A review
// carries its run's evidence, whose lists of changed files have no bound
// of their own, so the cap is well above any review a run makes; it
// keeps one row from filling a reader's memory.
const MaxReviewLine = 8 << 20

// AppendReview adds line, one record of the recycler's review history
// (verdict.HistoryStore), to the end of task id's.
func (l *Log) AppendReview(ctx context.Context, id string, line []byte) error {
	if err := checkName("task ID", id, maxTaskIDBytes); err != nil {
		return err
	}
	if len(bytes.TrimSpace(line)) == 0 {
		return errors.New("the review record is empty: append one JSON object")
	}
	if err := checkReviewLine(line); err != nil {
		return fmt.Errorf("the review record of %s %w: record less of the run's evidence, on one line", id, err)
	}
	if _, err := l.pool.Exec(ctx, "INSERT INTO review_history (task_id, body) VALUES ($1, $2)", id, line); err != nil {
		return fmt.Errorf("append to the reviews of %s: %w", id, err)
	}
	return nil
}

// ReviewLines returns task id's review records, oldest first
// (verdict.HistoryStore); a task never reviewed has none.
func (l *Log) ReviewLines(ctx context.Context, id string) ([][]byte, error) {
	rows, err := l.pool.Query(ctx, "SELECT body FROM review_history WHERE task_id = $1 ORDER BY seq", id)
	if err != nil {
		return nil, fmt.Errorf("read the reviews of %s: %w", id, err)
	}
	defer rows.Close()
	var out [][]byte
	for rows.Next() {
		var body []byte
		if err := rows.Scan(&body); err != nil {
			return nil, fmt.Errorf("read the reviews of %s: %w", id, err)
		}
		out = append(out, body)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the reviews of %s: %w", id, err)
	}
	return out, nil
}

// checkReviewLine says what keeps line from being one stored record of a
// review history: a newline in it, or a size over MaxReviewLine.
func checkReviewLine(line []byte) error {
	if bytes.IndexByte(line, '\n') >= 0 {
		return errors.New("holds a newline")
	}
	if len(line) > MaxReviewLine {
		return fmt.Errorf("is %d bytes, over the cap of %d", len(line), MaxReviewLine)
	}
	return nil
}
