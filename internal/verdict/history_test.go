package verdict

import (
	"bytes"
	"context"
	"os"
	"reflect"
	"testing"

	"github.com/cra-dev/cra/internal/jsonl"
)

// The files behind HistoryStore are today's reviews.jsonl: AppendHistory
// writes the bytes jsonl.Append wrote, and ReadHistory reads them as
// History does, a torn line skipped and counted.
func TestFilesHistory(t *testing.T) {
	ctx := context.Background()
	dir, old := t.TempDir(), t.TempDir()
	fs := Files{StateDir: dir}
	recs := []*Review{
		{TaskID: "t-1", Run: 1, Classification: SomeProgress, Action: Requeue, Note: Note{Accomplished: "a <b> & c"}},
		{TaskID: "t-1", Run: 1, Withdrawn: "the task moved"},
		{TaskID: "t-2", Run: 1, Action: Wait},
		{TaskID: "t-1", Run: 2, Classification: FullComplete, Action: Finalize},
	}
	for i, r := range recs {
		if err := AppendHistory(ctx, fs, r); err != nil {
			t.Fatal(err)
		}
		if err := jsonl.Append(HistoryPath(old, r.TaskID), r); err != nil {
			t.Fatal(err)
		}
		if i == 1 { // a crash tore the next line
			f, err := os.OpenFile(HistoryPath(dir, "t-1"), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(`{"task_id":"t-1","ru`)
			f.Close()
		}
	}
	for _, id := range []string{"t-1", "t-2", "t-3"} {
		got, bad, err := ReadHistory(ctx, fs, id)
		want, wantBad, werr := History(dir, id)
		if err != nil || werr != nil || bad != wantBad || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: ReadHistory %+v, %d bad, %v; History %+v, %d bad, %v", id, got, bad, err, want, wantBad, werr)
		}
	}
	if got, bad, _ := ReadHistory(ctx, fs, "t-1"); len(got) != 2 || bad != 1 || got[0].Withdrawn != "the task moved" {
		t.Errorf("t-1: %+v, %d bad; want runs 1 (withdrawn) and 2, the torn line counted", got, bad)
	}
	a, _ := os.ReadFile(HistoryPath(dir, "t-2"))
	b, _ := os.ReadFile(HistoryPath(old, "t-2"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Errorf("AppendHistory wrote %q, jsonl.Append %q", a, b)
	}
	if err := fs.AppendReview(ctx, "t-3", []byte("{}\n{}")); err == nil {
		t.Error("a record holding a newline was appended")
	}
}
