package world

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// appendRaw appends lines to the log as a hand (or an agent with write
// access to the file) would: no lifecycle check, no lock.
func appendRaw(t *testing.T, l *Log, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(l.Path(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, line := range lines {
		if _, err := f.WriteString(line + "\n"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFoldSkipsWhatTheLifecycleForbids: an agent entry the lifecycle
// refuses, written into the file by hand, is ignored by every fold of the
// log (Lookup, Current, CurrentIn, a fresh Log reading the side index) and
// reported: Broken is told, Skipped lists it, and the records readers get
// are marked. A verified stands only after a finish and an [event:review]
// for that run.
func TestFoldSkipsWhatTheLifecycleForbids(t *testing.T) {
	const (
		start    = "[2026-01-02T03:04:01.000Z][agent:start][T-1] a task | need: tests pass"
		active   = "[2026-01-02T03:04:02.000Z][agent:active][T-1] run 1: shell"
		finish   = "[2026-01-02T03:04:03.000Z][agent:finish][T-1] exit 0: done"
		review   = "[2026-01-02T03:04:04.000Z][event:review][T-1] run 1: full_complete → verified"
		verified = "[2026-01-02T03:04:05.000Z][agent:verified][T-1] verified by hand"
	)
	tests := []struct {
		name    string
		lines   []string
		want    Status
		skipped []int64 // line numbers
		reason  string
	}{
		{"verified on a pending task", []string{start, verified}, StatusStart, []int64{2}, "is start: it cannot go to verified"},
		{"verified on a finished, unreviewed task", []string{start, active, finish, verified}, StatusFinish, []int64{4},
			"is finish: verified needs an [event:review][T-1] entry after the finish"},
		{"a review of an earlier run does not count", []string{start, active, review, finish, verified}, StatusFinish, []int64{5}, "needs an [event:review]"},
		{"a review for another task does not count", []string{start, active, finish,
			"[2026-01-02T03:04:04.000Z][event:review][T-2] run 1: full_complete", verified}, StatusFinish, []int64{5}, "needs an [event:review]"},
		{"a user event is no review", []string{start, active, finish,
			"[2026-01-02T03:04:04.000Z][event:user][T-1] looks good", verified}, StatusFinish, []int64{5}, "needs an [event:review]"},
		{"reviewed after its finish", []string{start, active, finish, review, verified}, StatusVerified, nil, ""},
		{"the old format is checked too", []string{start, active, finish, "[2026-01-02T03:04:05Z] [agent] [T-1:verified] by hand"},
			StatusFinish, []int64{4}, "needs an [event:review]"},
		{"no start", []string{verified}, "", []int64{1}, "has no entry yet"},
		{"skipped steps leave the status where it was", []string{start, finish, active}, StatusActive, []int64{2}, "is start: it cannot go to finish"},
		{"a log of the old format alone is read as written", []string{
			"[2026-01-02T03:04:01Z] [agent] [T-1:start] a task",
			"[2026-01-02T03:04:02Z] [agent] [T-1:done] finished",
			"[2026-01-02T03:04:03Z] [agent] [T-1:success] checked"}, StatusVerified, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			l, _ := newTestLog(t)
			var told []int64
			l.Broken = func(r *Record, _ *TransitionError) { told = append(told, r.Line) }
			appendRaw(t, l, tc.lines...)
			for _, l := range []*Log{l, mustOpen(t, l.dir)} { // the second reads the side index
				a, ok, err := l.Lookup(ctx, "T-1")
				if err != nil {
					t.Fatal(err)
				}
				if a.Status != tc.want || ok != (tc.want != "") {
					t.Errorf("Lookup: got %q (known %v), want %q", a.Status, ok, tc.want)
				}
				cur, err := l.CurrentIn(ctx, StatusVerified)
				if err != nil {
					t.Fatal(err)
				}
				if got := len(cur) == 1; got != (tc.want == StatusVerified) {
					t.Errorf("CurrentIn(verified): got %v", cur)
				}
				skips, total, err := l.Skipped(ctx)
				if err != nil {
					t.Fatal(err)
				}
				var lines []int64
				for _, s := range skips {
					lines = append(lines, s.Line)
					if !strings.Contains(s.Err.Error(), tc.reason) {
						t.Errorf("skip of line %d says %q, want %q", s.Line, s.Err, tc.reason)
					}
				}
				if !equalLines(lines, tc.skipped) || total != len(tc.skipped) {
					t.Errorf("Skipped: got lines %v (total %d), want %v", lines, total, tc.skipped)
				}
			}
			if !equalLines(told, tc.skipped) {
				t.Errorf("Broken told lines %v, want %v", told, tc.skipped)
			}
			// Readers of the records see which were skipped.
			var marked []int64
			err := l.Select(ctx, Filter{}, func(r *Record) error {
				if r.Skipped != nil {
					marked = append(marked, r.Line)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !equalLines(marked, tc.skipped) {
				t.Errorf("Select marked lines %v, want %v", marked, tc.skipped)
			}
			marked = nil
			if _, err := l.Check(ctx, "reader", func(r *Record) error {
				if r.Skipped != nil {
					marked = append(marked, r.Line)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if !equalLines(marked, tc.skipped) {
				t.Errorf("Check marked lines %v, want %v", marked, tc.skipped)
			}
		})
	}
}

func equalLines(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func mustOpen(t *testing.T, dir string) *Log {
	t.Helper()
	l, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestVerifiedNeedsAReview: the writer refuses what the fold would skip,
// and names the entry that is missing.
func TestVerifiedNeedsAReview(t *testing.T) {
	ctx := context.Background()
	l, c := newTestLog(t)
	for _, s := range []Status{StatusStart, StatusActive, StatusFinish} {
		c.advance(time.Second)
		if _, err := l.Agent(ctx, s, "T-1", "", ""); err != nil {
			t.Fatal(err)
		}
	}
	_, err := l.Agent(ctx, StatusVerified, "T-1", "done", "")
	var te *TransitionError
	if !errors.As(err, &te) || !te.NeedsReview || !strings.Contains(err.Error(), "[event:review][T-1]") {
		t.Fatalf("got %v, want a TransitionError naming the missing review", err)
	}
	if _, err := l.Event(ctx, SourceReview, "T-1", "run 1: full_complete"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Agent(ctx, StatusVerified, "T-1", "done", ""); err != nil {
		t.Fatalf("verified after a review: %v", err)
	}
}

// TestCompactKeepsVerdictsAndDropsSkips: compaction keeps of a verified
// agent its start and verified entries, which the fold of the compacted
// log still reads as verified; an entry the fold skipped goes to the
// archive, so it never reaches the part of the log compaction vouches
// for; and an entry forged after the compaction is skipped as before.
func TestCompactKeepsVerdictsAndDropsSkips(t *testing.T) {
	ctx := context.Background()
	l, c := newTestLog(t)
	step := func(id string, s Status) {
		t.Helper()
		c.advance(time.Second)
		if s == StatusVerified {
			if _, err := l.Event(ctx, SourceReview, id, "reviewed"); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := l.Agent(ctx, s, id, string(s), ""); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []Status{StatusStart, StatusActive, StatusFinish, StatusVerified} {
		step("done", s)
	}
	step("pending", StatusStart)
	appendRaw(t, l, "[2026-01-02T03:04:05.000Z][agent:verified][pending] forged")
	if _, err := l.Compact(ctx, CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(l.Path())
	if strings.Contains(string(data), "forged") {
		t.Errorf("the skipped entry is still in the compacted log:\n%s", data)
	}
	arch, _ := os.ReadFile(l.sd.WorldArchive())
	if !strings.Contains(string(arch), "forged") {
		t.Errorf("the skipped entry is not in the archive:\n%s", arch)
	}
	appendRaw(t, l, "[2026-01-02T03:05:05.000Z][agent:verified][pending] forged again")
	for _, l := range []*Log{l, mustOpen(t, l.dir)} {
		for id, want := range map[string]Status{"done": StatusVerified, "pending": StatusStart} {
			a, _, err := l.Lookup(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if a.Status != want {
				t.Errorf("%s after compaction: got %s, want %s", id, a.Status, want)
			}
		}
	}
	// A second compaction keeps the verified agent verified.
	if _, err := l.Compact(ctx, CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	if a, _, _ := mustOpen(t, l.dir).Lookup(ctx, "done"); a.Status != StatusVerified {
		t.Errorf("after a second compaction: got %s, want verified", a.Status)
	}
}
