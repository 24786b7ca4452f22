package corpus

import (
	"context"
	"fmt"
)

// Decision is a retrieval stage's verdict on one candidate file (seed 001
// §5.4, §4.6 retrieval_decisions): included in the package or not, at
// which scope tier, and why. What a stage decided, and the files a model
// later needed, is the training signal of the scope and precision stages.
type Decision struct {
	Stage    string // scope, precision, ...
	FileID   int64  // files.id in the curated database
	Tier     string // the scope tier that made the file a candidate
	Included bool
	Reason   string
}

// LogDecisions appends the decisions a stage made for a task, stamped
// with one time, in one transaction: a stage's decisions are recorded
// whole or not at all.
func (c *Corpus) LogDecisions(ctx context.Context, taskID string, ds []Decision) error {
	now := c.timestamp()
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("log decisions: %w", err)
	}
	defer tx.Rollback()
	st, err := tx.PrepareContext(ctx, `INSERT INTO retrieval_decisions(task_id, stage, file_id, tier, included, reason, timestamp) VALUES (?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("log decisions: %w", err)
	}
	defer st.Close()
	for _, d := range ds {
		if _, err := st.ExecContext(ctx, taskID, d.Stage, d.FileID, d.Tier, d.Included, d.Reason, now); err != nil {
			return fmt.Errorf("log decisions: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("log decisions: %w", err)
	}
	return nil
}
