package pgstore

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
)

// Each task's review records come back as appended, in order, whatever
// the other tasks' appends between them; a task never reviewed has none;
// a record that is no line, or over the cap, or a task ID no host could
// name, is refused and stores nothing.
func TestReviewHistory(t *testing.T) {
	ctx := context.Background()
	l := openPG(t, nil)
	want := map[string][][]byte{}
	for i := range 6 {
		id := fmt.Sprintf("t-%d", i%2)
		line := fmt.Appendf(nil, `{"task_id":%q,"run":%d}`, id, i)
		if i == 3 {
			line = []byte(`{"task_id": "t-1", "ru`) // torn: kept as written, for the reader to count
		}
		if err := l.AppendReview(ctx, id, line); err != nil {
			t.Fatal(err)
		}
		want[id] = append(want[id], line)
	}
	for _, bad := range []struct{ id, line, msg string }{
		{"t-0", "", "empty"},
		{"t-0", " \t", "empty"},
		{"t-0", "{}\n{}", "newline"},
		{"t-0", `{"x":"` + strings.Repeat("a", MaxReviewLine) + `"}`, "over the cap"},
		{"", "{}", "empty"},
		{"t 0", "{}", "space"},
	} {
		err := l.AppendReview(ctx, bad.id, []byte(bad.line))
		if err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("AppendReview(%q, %.20q): %v, want an error naming %q", bad.id, bad.line, err, bad.msg)
		}
	}
	for _, id := range []string{"t-0", "t-1", "t-2"} {
		got, err := l.ReviewLines(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want[id]) {
			t.Fatalf("%s: %d records, want %d: %q", id, len(got), len(want[id]), got)
		}
		for i := range got {
			if !bytes.Equal(got[i], want[id][i]) {
				t.Errorf("%s record %d: %q, want %q", id, i, got[i], want[id][i])
			}
		}
	}
}
