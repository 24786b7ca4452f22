package world

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fill appends events with ids e1..en from source bash, one second apart.
func fill(t *testing.T, l *Log, c *clock, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		c.advance(time.Second)
		if _, err := l.Event(context.Background(), SourceBash, fmt.Sprintf("e%d", i), "out"); err != nil {
			t.Fatal(err)
		}
	}
}

// ids collects the identifiers (or "!" for malformed lines) of records.
func ids(got *[]string) func(*Record) error {
	return func(r *Record) error {
		if r.Err != nil {
			*got = append(*got, fmt.Sprintf("!%d", r.Line))
		} else {
			*got = append(*got, r.Entry.ID)
		}
		return nil
	}
}

func TestMarkers(t *testing.T) {
	l, c := newTestLog(t)
	ctx := context.Background()
	check := func(name string) []string {
		t.Helper()
		var got []string
		if _, err := l.Check(ctx, name, ids(&got)); err != nil {
			t.Fatal(err)
		}
		return got
	}
	fill(t, l, c, 1, 2)
	if diff := cmp.Diff([]string{"e1", "e2"}, check("a")); diff != "" {
		t.Errorf("first check (-want +got):\n%s", diff)
	}
	if got := check("a"); got != nil {
		t.Errorf("got %v, want nothing new", got)
	}
	fill(t, l, c, 3, 1)
	f, _ := os.OpenFile(l.Path(), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("garbage\n[2025-01-02T03:04:05.000Z][event:bash][partial")
	f.Close()
	if diff := cmp.Diff([]string{"e3", "!4"}, check("a")); diff != "" {
		t.Errorf("second check (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"e1", "e2", "e3", "!4"}, check("b")); diff != "" {
		t.Errorf("another marker (-want +got):\n%s", diff)
	}
	// The partial line completes: it is new, not skipped.
	f, _ = os.OpenFile(l.Path(), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("] done\n")
	f.Close()
	if diff := cmp.Diff([]string{"partial"}, check("a")); diff != "" {
		t.Errorf("completed line (-want +got):\n%s", diff)
	}

	// A failing reader leaves the marker where it was.
	fill(t, l, c, 4, 1)
	boom := errors.New("stdout closed")
	if _, err := l.Check(ctx, "a", func(*Record) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("got %v, want %v", err, boom)
	}
	if diff := cmp.Diff([]string{"e4"}, check("a")); diff != "" {
		t.Errorf("after a failed read (-want +got):\n%s", diff)
	}

	// A log replaced behind cra's back makes the marker stale, never wrong.
	if err := os.WriteFile(l.Path()+".x", []byte("[2025-01-02T03:04:05.000Z][event:bash][new] x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Rename(l.Path()+".x", l.Path())
	if _, err := l.Check(ctx, "a", ids(new([]string))); !errors.Is(err, ErrStaleMarker) || !strings.Contains(err.Error(), "--reset") {
		t.Errorf("got %v, want ErrStaleMarker naming --reset", err)
	}
	if err := l.ResetMarker(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"new"}, check("a")); diff != "" {
		t.Errorf("after reset (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"", "../x", ".hidden", "a/b", strings.Repeat("x", 65)} {
		if _, err := l.Check(ctx, bad, ids(new([]string))); err == nil {
			t.Errorf("marker name %q: got nil, want an error", bad)
		}
	}
}

func TestQuery(t *testing.T) {
	l, _ := newTestLog(t)
	ctx := context.Background()
	lines := []string{
		"[2025-01-02T03:00:00.000Z][agent:start][T-1] add flag | need: tests",
		"[2025-01-02T03:01:00.000Z][event:bash][T-1] go test captcha",
		"[2025-01-02 03:02:00] [claude] [T-2:failed] captcha required",
		"not a line",
		"",
		"[2025-01-02T03:03:00.000Z][event:user][T-2] captcha solved",
		`[2025-01-02T03:04:00.000Z][event:file][a\x5bb\x5d] changed`,
		"[2025-01-02T03:05:00.000Z][agent:active][T-1] running",
	}
	if err := os.WriteFile(l.Path(), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	at := func(m int) time.Time { return time.Date(2025, 1, 2, 3, m, 0, 0, time.UTC) }
	tests := []struct {
		name   string
		filter Filter
		want   []string
	}{
		{"all", Filter{}, []string{"T-1", "T-1", "T-2", "!4", "T-2", "a[b]", "T-1"}},
		{"agents", Filter{Kind: KindAgent}, []string{"T-1", "T-2", "!4", "T-1"}},
		{"status failed, old format too", Filter{Statuses: []Status{StatusFailed}}, []string{"T-2", "!4"}},
		{"sources", Filter{Sources: []Source{SourceUser, SourceFile}}, []string{"!4", "T-2", "a[b]"}},
		{"escaped id", Filter{IDs: []string{"a[b]"}}, []string{"!4", "a[b]"}},
		{"id", Filter{IDs: []string{"T-2"}}, []string{"T-2", "!4", "T-2"}},
		{"text", Filter{Text: "captcha"}, []string{"T-1", "T-2", "T-2"}},
		{"time range", Filter{Since: at(1), Until: at(4)}, []string{"T-1", "T-2", "!4", "T-2"}},
		{"status and source exclude each other", Filter{Statuses: []Status{StatusStart}, Sources: []Source{SourceBash}}, []string{"!4"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			if err := l.Select(ctx, tc.filter, ids(&got)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestTail(t *testing.T) {
	l, c := newTestLog(t)
	ctx := context.Background()
	fill(t, l, c, 1, 5)
	big := strings.Repeat("y", 200<<10) // longer than a backward read
	if _, err := l.Event(ctx, SourceFile, "big", big); err != nil {
		t.Fatal(err)
	}
	fill(t, l, c, 6, 2)
	tests := []struct {
		n      int
		filter Filter
		want   []string
		lines  []int64
	}{
		{0, Filter{}, nil, nil},
		{2, Filter{}, []string{"e6", "e7"}, []int64{7, 8}},
		{3, Filter{}, []string{"big", "e6", "e7"}, []int64{6, 7, 8}},
		{2, Filter{IDs: []string{"e1", "e2", "e3"}}, []string{"e2", "e3"}, []int64{2, 3}},
		{100, Filter{Sources: []Source{SourceFile}}, []string{"big"}, []int64{6}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.n, tc.filter.IDs, tc.filter.Sources), func(t *testing.T) {
			var got []string
			var lines []int64
			end, err := l.Tail(ctx, tc.n, tc.filter, func(r *Record) error {
				got = append(got, r.Entry.ID)
				lines = append(lines, r.Line)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.lines, lines); diff != "" {
				t.Errorf("line numbers (-want +got):\n%s", diff)
			}
			if end.Line != 8 {
				t.Errorf("got end line %d, want 8", end.Line)
			}
		})
	}
}

// TestFollow reads entries as they come and stops when its context ends.
func TestFollow(t *testing.T) {
	l, c := newTestLog(t)
	fill(t, l, c, 1, 2)
	end, err := l.Tail(context.Background(), 0, Filter{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, 10)
	done := make(chan error, 1)
	go func() {
		done <- l.Follow(ctx, end, Filter{Sources: []Source{SourceBash}}, func(r *Record) error {
			got <- fmt.Sprintf("%s@%d", r.Entry.ID, r.Line)
			return nil
		})
	}()
	writer, _ := Open(l.dir)
	writer.Now = c.Now
	if _, err := writer.Event(context.Background(), SourceUser, "skipped", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := writer.Event(context.Background(), SourceBash, "e3", "x"); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "e3@4" {
			t.Errorf("got %s, want e3@4", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no entry followed within 10s")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Follow did not stop after cancel")
	}
}

// TestTailOverADamagedStretch: a run of junk without newlines (NUL bytes
// after a crash) is one malformed line cut to MaxLineBytes, read once:
// Tail neither holds nor copies it over and over, and the lines around it
// come back.
func TestTailOverADamagedStretch(t *testing.T) {
	l, _ := newTestLog(t)
	l.Malformed = nil
	ctx := context.Background()
	if _, err := l.Event(ctx, SourceBash, "a", "first"); err != nil {
		t.Fatal(err)
	}
	junk := bytes.Repeat([]byte{0}, 2*MaxLineBytes)
	f, err := os.OpenFile(l.Path(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(append(junk, '\n'))
	f.Close()
	if _, err := l.Event(ctx, SourceBash, "b", "last"); err != nil {
		t.Fatal(err)
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	var ids []string
	var bad int
	if _, err := l.Tail(ctx, 10, Filter{}, func(r *Record) error {
		if r.Err != nil {
			bad++
		} else {
			ids = append(ids, r.Entry.ID)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&m1)
	if !slices.Equal(ids, []string{"a", "b"}) || bad != 1 {
		t.Errorf("records: %v and %d malformed, want [a b] and the damaged line", ids, bad)
	}
	// Before: 8 GiB for a 32 MiB stretch, each chunk copying all the ones
	// after it. Reading it once is its length and a line of MaxLineBytes.
	if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 8*MaxLineBytes {
		t.Errorf("tail allocated %d MiB over a %d MiB damaged stretch", alloc>>20, len(junk)>>20)
	}
}

// TestTailFlagsATooLongLine: a well-formed line longer than MaxLineBytes
// is malformed to Tail as it is to Scan, not an entry cut short.
func TestTailFlagsATooLongLine(t *testing.T) {
	l, _ := newTestLog(t)
	l.Malformed = nil
	ctx := context.Background()
	f, err := os.OpenFile(l.Path(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("[2026-01-02T03:04:05.000Z][event:bash][big] " + strings.Repeat("x", 2*MaxLineBytes) + "\n")
	f.Close()
	var tailed, scanned []*Record
	if _, err := l.Tail(ctx, 5, Filter{}, func(r *Record) error { tailed = append(tailed, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Scan(ctx, Position{}, func(r *Record) error { scanned = append(scanned, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(tailed) != 1 || tailed[0].Err == nil || len(scanned) != 1 || scanned[0].Err == nil {
		t.Errorf("tail %+v, scan %+v: want the line malformed to both", tailed, scanned)
	}
}
