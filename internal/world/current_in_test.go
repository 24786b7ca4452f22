package world

import (
	"context"
	"slices"
	"testing"
)

// TestKeptLinesFollowTheLog: a state keeps the entries it read, and an
// agent that moves on is read at its new line, by the same Log and by
// a fresh one; AnsweredFailed lists the failed agents a person answered
// since, and no other; CurrentIn asked again of the same state gives
// the same agents, and after the log moves the new ones.
func TestKeptLinesFollowTheLog(t *testing.T) {
	ctx := context.Background()
	l, _ := newTestLog(t)
	appendRaw(t, l,
		"[2026-01-02T03:04:01.000Z][agent:start][T-1] one",
		"[2026-01-02T03:04:01.000Z][agent:start][T-2] two",
		"[2026-01-02T03:04:02.000Z][agent:failed][T-1] stuck on the schema",
		"[2026-01-02T03:04:02.000Z][agent:failed][T-2] stuck too")
	for range 2 { // the second reads the kept lines
		a, ok, err := l.Lookup(ctx, "T-1")
		if err != nil || !ok || a.Status != StatusFailed || a.Output != "stuck on the schema" {
			t.Fatalf("Lookup: %+v %v %v", a, ok, err)
		}
	}
	if got, err := l.AnsweredFailed(ctx); err != nil || len(got) != 0 {
		t.Fatalf("AnsweredFailed before an answer: %v %v", got, err)
	}
	for range 2 { // the second is the kept pick
		checkIn(t, l, []Status{StatusFailed}, "T-1", "T-2")
		checkIn(t, l, []Status{StatusStart})
	}
	appendRaw(t, l, "[2026-01-02T03:04:03.000Z][event:user][T-1] use the v2 schema")
	for _, l := range []*Log{l, mustOpen(t, l.dir)} {
		got, err := l.AnsweredFailed(ctx)
		if err != nil || len(got) != 1 || got[0].ID != "T-1" || !got[0].UserAnswered {
			t.Errorf("AnsweredFailed: %+v %v, want T-1 alone", got, err)
		}
	}
	appendRaw(t, l, "[2026-01-02T03:04:04.000Z][agent:retry][T-1] again, with the answer")
	a, _, err := l.Lookup(ctx, "T-1")
	if err != nil || a.Status != StatusRetry || a.Output != "again, with the answer" {
		t.Errorf("Lookup after the retry: %+v %v", a, err)
	}
	if got, err := l.AnsweredFailed(ctx); err != nil || len(got) != 0 {
		t.Errorf("AnsweredFailed after the retry: %v %v", got, err)
	}
	checkIn(t, l, []Status{StatusFailed}, "T-2")
	checkIn(t, l, []Status{StatusRetry, StatusFailed}, "T-2", "T-1")
	checkIn(t, l, []Status{StatusRetry}, "T-1")
}

// checkIn checks that CurrentIn(statuses) is the agents want, in order.
func checkIn(t *testing.T, l *Log, statuses []Status, want ...string) {
	t.Helper()
	got, err := l.CurrentIn(context.Background(), statuses...)
	if err != nil {
		t.Fatalf("CurrentIn%v: %v", statuses, err)
	}
	ids := []string{}
	for _, a := range got {
		ids = append(ids, a.ID)
	}
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(ids, want) {
		t.Errorf("CurrentIn%v = %v, want %v", statuses, ids, want)
	}
}
