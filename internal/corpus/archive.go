package corpus

import (
	"context"
	"fmt"
)

// ArchiveSession appends the bytes of the session database of taskID, a
// whole SQLite file, to session_archives (seed 001 §4.6, §11.1 step 6).
// It is the archiver store.SessionDB.Archive hands the file to before it
// deletes it.
func (c *Corpus) ArchiveSession(ctx context.Context, taskID string, blob []byte) error {
	if _, err := c.db.ExecContext(ctx, `INSERT INTO session_archives(task_id, session_blob, archived_at) VALUES (?, ?, ?)`,
		taskID, blob, c.timestamp()); err != nil {
		return fmt.Errorf("archive session: %w", err)
	}
	return nil
}
