package fleet

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/evidence"
	"github.com/cra-dev/cra/internal/pgboard"
	"github.com/cra-dev/cra/internal/pgstore"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/verdict"
	"github.com/cra-dev/cra/internal/workspace"
)

// TestReviewsInPostgres: on a board in PostgreSQL the recycler's review
// history is the database's, so a host that never ran the recycler (a
// state directory of its own) reads the reviews the leader appended, a
// torn record counted as the file's reader counts it, and no host
// writes a reviews file.
func TestReviewsInPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, getenv := pgConfig(t)
	host := func() *Fleet {
		l, err := openPostgres(ctx, cfg, getenv)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
		root := t.TempDir()
		return &Fleet{Board: board.New(pgboard.New(l), l), ws: &workspace.Workspace{Root: root, StateDir: statedir.Of(root).Path()}}
	}
	leader, other := host(), host()
	hs, ok := leader.reviewHistory().(*pgstore.Log)
	if !ok {
		t.Fatalf("the recycler keeps its reviews in %T, want the database (*pgstore.Log)", leader.reviewHistory())
	}
	ev, err := json.Marshal(evidence.Evidence{ValidationSkipped: "no validation commands"})
	if err != nil {
		t.Fatal(err)
	}
	for _, rv := range []*verdict.Review{
		{TaskID: "T-1", Run: 1, Classification: verdict.SomeProgress, Action: verdict.Requeue},
		{TaskID: "T-2", Run: 1, Classification: verdict.FullComplete, Action: verdict.Finalize},
		{TaskID: "T-1", Run: 2, Classification: verdict.Uncertain, Action: verdict.Requeue, Evidence: ev},
	} {
		if err := verdict.AppendHistory(ctx, hs, rv); err != nil {
			t.Fatal(err)
		}
		if rv.Run == 1 && rv.TaskID == "T-1" {
			if err := hs.AppendReview(ctx, "T-1", []byte(`{"run":7}`)); err != nil { // no task: unreadable
				t.Fatal(err)
			}
		}
	}
	list, bad, file, text, err := other.Reviews(ctx, "T-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Run != 1 || list[1].Run != 2 || list[1].Classification != verdict.Uncertain {
		t.Errorf("T-1's reviews: %+v, want runs 1 and 2", list)
	}
	if bad != 1 || file != ReviewTable {
		t.Errorf("%d bad records in %q, want 1 in %q", bad, file, ReviewTable)
	}
	if text == "" {
		t.Error("no evidence text from the latest review")
	}
	if list, bad, _, _, err := other.Reviews(ctx, "T-3"); len(list) != 0 || list == nil || bad != 0 || err != nil {
		t.Errorf("a task never reviewed: %v, %d, %v; want an empty list", list, bad, err)
	}
	for _, f := range []*Fleet{leader, other} {
		if _, err := os.Stat(verdict.HistoryPath(f.ws.StateDir, "T-1")); !os.IsNotExist(err) {
			t.Errorf("a reviews file under %s: %v", f.ws.StateDir, err)
		}
	}
}
