package pgstore

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
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

// ImportRecycler stores nothing when a record is bad or the tables hold
// rows already, naming the task and record; a good import reads back as
// written (blank records dropped), and a second one is refused.
func TestImportRecycler(t *testing.T) {
	ctx := context.Background()
	l := openPG(t, nil)
	imp := func(s RecyclerState) error {
		return pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error { return ImportRecycler(ctx, tx, s) })
	}
	for _, bad := range []struct {
		s   RecyclerState
		msg string
	}{
		{RecyclerState{Reviews: map[string][][]byte{"t-1": {[]byte(`{}`), []byte("{}\n{}")}}}, "t-1: record 2 holds a newline"},
		{RecyclerState{Reviews: map[string][][]byte{"t 1": {[]byte(`{}`)}}}, "space"},
		{RecyclerState{Notices: [][]byte{[]byte(`{"a":1}`), []byte(`not json`)}}, "notification 2"},
	} {
		if err := imp(bad.s); err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("import %v: %v, want an error naming %q", bad.s, err, bad.msg)
		}
	}
	if got, _ := l.ReviewLines(ctx, "t-1"); len(got) != 0 {
		t.Fatalf("a refused import stored %q", got)
	}
	good := RecyclerState{
		Reviews: map[string][][]byte{"t-2": {[]byte(`{"run":1}`), []byte(" "), []byte(`{"ru`)}, "t-1": {[]byte(`{"run":2}`)}},
		Notices: [][]byte{[]byte(`{"task":"t-1"}`), []byte(`{"task":"t-2"}`)},
	}
	if err := imp(good); err != nil {
		t.Fatal(err)
	}
	back, err := l.ExportRecycler(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := RecyclerState{
		Reviews: map[string][][]byte{"t-2": {[]byte(`{"run":1}`), []byte(`{"ru`)}, "t-1": {[]byte(`{"run":2}`)}},
		Notices: [][]byte{[]byte(`{"task": "t-1"}`), []byte(`{"task": "t-2"}`)}, // jsonb's spacing
	}
	if !reflect.DeepEqual(back, want) {
		t.Errorf("exported %q, want %q", back, want)
	}
	if err := imp(good); err == nil || !strings.Contains(err.Error(), "already holds") {
		t.Errorf("a second import: %v, want it refused", err)
	}
}
