package corpus_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
)

// The corpus keeps the sessions store archives.
var _ store.Archiver = (*corpus.Corpus)(nil)

func TestArchiveSession(t *testing.T) {
	ctx := context.Background()
	f := store.NewFactory(statedir.At(t.TempDir()))
	db, err := f.Open(ctx, store.Raw, "", false)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := corpus.New(db)
	s, err := f.OpenSession(ctx, "t-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Set(ctx, "final_context", map[string]int{"files": 3}); err != nil {
		t.Fatal(err)
	}
	path, _ := f.Path(store.Session, "t-1")
	if err := s.Archive(ctx, f, c, "t-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("session file still there after archiving: %v", err)
	}
	got := queryRows(t, db, `SELECT task_id, substr(session_blob, 1, 16) AS magic, length(session_blob) > 0 AS kept, archived_at FROM session_archives`)
	if len(got) != 1 {
		t.Fatalf("got %d archives, want 1", len(got))
	}
	if got[0]["task_id"] != "t-1" || got[0]["kept"] != int64(1) || !bytes.HasPrefix(got[0]["magic"].([]byte), []byte("SQLite format 3")) {
		t.Errorf("got %v, want t-1's SQLite file", got[0])
	}

	// Stamped like every row.
	c.Now = openRawClock
	if err := c.ArchiveSession(ctx, "t-2", []byte("db")); err != nil {
		t.Fatal(err)
	}
	got = queryRows(t, db, `SELECT task_id, session_blob, archived_at FROM session_archives WHERE task_id = 't-2'`)
	if diff := cmp.Diff([]row{{"task_id": "t-2", "session_blob": []byte("db"), "archived_at": stamp}}, got); diff != "" {
		t.Errorf("session_archives (-want +got):\n%s", diff)
	}
}
