package corpus_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/corpus"
)

// openRaw opens a fresh raw database (the real schema) and a corpus over
// it whose clock stands at now.
// openRawAt is openRaw with the clock at now.
func openRawAt(t *testing.T, now time.Time) (*sql.DB, *corpus.Corpus) {
	t.Helper()
	c, db := openRaw(t)
	c.Now = func() time.Time { return now }
	return db, c
}

type decisionRow struct {
	TaskID, Stage string
	FileID        int64
	Tier          string
	Included      bool
	Reason        string
	Timestamp     string
}

func decisionRows(t *testing.T, db *sql.DB) []decisionRow {
	t.Helper()
	rows, err := db.Query(`SELECT task_id, stage, file_id, tier, included, reason, timestamp FROM retrieval_decisions ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []decisionRow
	for rows.Next() {
		var r decisionRow
		if err := rows.Scan(&r.TaskID, &r.Stage, &r.FileID, &r.Tier, &r.Included, &r.Reason, &r.Timestamp); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLogDecisions(t *testing.T) {
	ctx := context.Background()
	// A zone other than UTC: the rows are stamped in UTC.
	now := time.Date(2024, 3, 5, 14, 30, 0, 123e6, time.FixedZone("CET", 3600))
	db, c := openRawAt(t, now)
	if err := c.LogDecisions(ctx, "task-1", []corpus.Decision{
		{Stage: "scope", FileID: 3, Tier: "seed", Included: true, Reason: "named in the task"},
		{Stage: "scope", FileID: 7, Tier: "search", Included: false, Reason: "below the cut"},
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.LogDecisions(ctx, "task-1", nil); err != nil {
		t.Fatalf("no decisions: got %v, want nothing logged and no error", err)
	}
	if err := c.LogDecisions(ctx, "task-2", []corpus.Decision{{Stage: "precision", FileID: 3, Tier: "seed", Included: true, Reason: "holds load_user"}}); err != nil {
		t.Fatal(err)
	}
	const ts = "2024-03-05T13:30:00.123Z"
	want := []decisionRow{
		{"task-1", "scope", 3, "seed", true, "named in the task", ts},
		{"task-1", "scope", 7, "search", false, "below the cut", ts},
		{"task-2", "precision", 3, "seed", true, "holds load_user", ts},
	}
	if diff := cmp.Diff(want, decisionRows(t, db)); diff != "" {
		t.Errorf("retrieval_decisions (-want +got):\n%s", diff)
	}
}

func TestLogDecisionsClosed(t *testing.T) {
	db, c := openRawAt(t, time.Now())
	db.Close()
	if err := c.LogDecisions(context.Background(), "task-1", []corpus.Decision{{Stage: "scope", FileID: 1}}); err == nil {
		t.Error("logging to a closed database succeeded, want an error")
	}
}
