package review

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/verdict"
)

// A line torn by a crash is skipped and counted, and the next review
// still lands on a line of its own.
func TestHistoryTornLine(t *testing.T) {
	dir := t.TempDir()
	first := &Review{Time: time.Unix(1, 0).UTC(), TaskID: "t-1", Run: 1, Classification: SomeProgress, Action: Requeue}
	if err := (&Recycler{StateDir: dir}).appendHistory(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(HistoryPath(dir, "t-1"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"time":"2026-01-01T00:00:00Z","task_id":"t-1","ru`)
	f.Close()
	second := &Review{Time: time.Unix(2, 0).UTC(), TaskID: "t-1", Run: 2, Classification: FullComplete, Action: Finalize}
	if err := (&Recycler{StateDir: dir}).appendHistory(context.Background(), second); err != nil {
		t.Fatal(err)
	}
	got, bad, err := History(dir, "t-1")
	if err != nil {
		t.Fatal(err)
	}
	if bad != 1 || len(got) != 2 || got[0].Run != 1 || got[1].Run != 2 || got[1].Action != Finalize {
		t.Errorf("got %d reviews (%+v), %d bad; want runs 1 and 2, 1 bad", len(got), got, bad)
	}
	if none, bad, err := History(dir, "t-2"); none != nil || bad != 0 || err != nil {
		t.Errorf("a task never reviewed: %v, %d, %v", none, bad, err)
	}
}

func FuzzReadHistory(f *testing.F) {
	f.Add(`{"task_id":"t-1","run":1}` + "\n" + `{"task_id":`)
	f.Add("\n\n{}\n")
	f.Fuzz(func(t *testing.T, in string) {
		got, bad, err := verdict.Decode(strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		if len(got)+bad > strings.Count(in, "\n")+1 {
			t.Fatalf("%d reviews and %d bad lines from %d lines", len(got), bad, strings.Count(in, "\n")+1)
		}
		for _, r := range got {
			if r.TaskID == "" {
				t.Fatal("a review without a task")
			}
		}
	})
}

// A review that was not carried out keeps its record, marked withdrawn.
func TestHistoryWithdrawn(t *testing.T) {
	dir := t.TempDir()
	for _, r := range []*Review{
		{TaskID: "t-1", Run: 1, Classification: SomeProgress, Action: Requeue},
		{TaskID: "t-1", Run: 1, Withdrawn: "task changed while it was reviewed"},
		{TaskID: "t-1", Run: 2, Classification: FullComplete, Action: Requeue},
	} {
		if err := (&Recycler{StateDir: dir}).appendHistory(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	got, bad, err := History(dir, "t-1")
	if err != nil || bad != 0 || len(got) != 2 {
		t.Fatalf("got %d reviews, %d bad, %v", len(got), bad, err)
	}
	if got[0].Withdrawn != "task changed while it was reviewed" || got[0].Action != Requeue || got[1].Withdrawn != "" {
		t.Errorf("got %+v", got)
	}
}
