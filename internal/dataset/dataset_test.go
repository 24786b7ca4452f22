package dataset

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func rec(stage, user string, day int, positive bool) Record {
	return Record{
		Example: Chat("sys", user, "answer to "+user),
		Meta:    Meta{Stage: stage, Source: "synthetic", Positive: positive, Date: time.Date(2024, 1, day, 0, 0, 0, 0, time.UTC), Commit: user},
	}
}

func TestWriteSplitsByDateAndDedupes(t *testing.T) {
	root := t.TempDir()
	var recs []Record
	// Given newest first, with one repeat of day 3's messages on day 9.
	for day := 20; day >= 1; day-- {
		recs = append(recs, rec(Scope, "task "+string(rune('a'+day)), day, day%4 != 0))
	}
	dup := rec(Scope, "task "+string(rune('a'+3)), 9, true)
	recs = append(recs, dup)
	sum, err := Write(root, Scope, recs, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	// 15 positives (days not a multiple of 4) and 5 negatives.
	want := Summary{Dir: filepath.Join(root, "reasoning", "scope"), Train: 13, Valid: 2, Positive: 15, Negative: 5, Duplicates: 1}
	if diff := cmp.Diff(want, sum); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	train, err := Read(sum.Dir, Train)
	if err != nil {
		t.Fatal(err)
	}
	valid, err := Read(sum.Dir, Valid)
	if err != nil {
		t.Fatal(err)
	}
	rejected, err := Read(sum.Dir, Rejected)
	if err != nil {
		t.Fatal(err)
	}
	if len(train) != 13 || len(valid) != 2 || len(rejected) != 5 {
		t.Fatalf("read %d train, %d valid, %d rejected", len(train), len(valid), len(rejected))
	}
	// The newest two positive days are the validation split; train is
	// oldest first; no negative is in either, all are in rejected.
	if valid[0].Meta.Date.Day() != 18 || valid[1].Meta.Date.Day() != 19 || train[0].Meta.Date.Day() != 1 {
		t.Errorf("split by date: valid days %d,%d, first train day %d", valid[0].Meta.Date.Day(), valid[1].Meta.Date.Day(), train[0].Meta.Date.Day())
	}
	for _, r := range append(train, valid...) {
		if !r.Meta.Positive {
			t.Errorf("a negative example (day %d) is in a file trainers read", r.Meta.Date.Day())
		}
	}
	for _, r := range rejected {
		if r.Meta.Positive || r.Meta.Date.Day()%4 != 0 {
			t.Errorf("rejected holds day %d, positive %v", r.Meta.Date.Day(), r.Meta.Positive)
		}
	}
	// The repeat kept the oldest (day 3), not day 9.
	for _, r := range train {
		if r.Meta.Date.Day() == 9 && r.Example.Messages[1].Content == dup.Example.Messages[1].Content {
			t.Error("the later duplicate was kept")
		}
	}
	// Example lines are exactly the chat format, nothing else.
	data, err := os.ReadFile(filepath.Join(sum.Dir, TrainFile))
	if err != nil {
		t.Fatal(err)
	}
	first := strings.SplitN(string(data), "\n", 2)[0]
	var generic map[string]any
	if err := json.Unmarshal([]byte(first), &generic); err != nil {
		t.Fatal(err)
	}
	if len(generic) != 1 || generic["messages"] == nil {
		t.Errorf("a train line has keys beyond messages: %s", first)
	}
	if !strings.HasPrefix(first, `{"messages":[{"role":"system","content":"sys"},{"role":"user","content":`) {
		t.Errorf("train line = %s", first)
	}
}

func TestWriteReplacesWholeAndRefusesBadRecords(t *testing.T) {
	root := t.TempDir()
	if _, err := Write(root, ExecuteCode, []Record{rec(ExecuteCode, "a", 1, true), rec(ExecuteCode, "b", 2, true)}, 0); err != nil {
		t.Fatal(err)
	}
	dir := Dir(root, ExecuteCode)
	if filepath.Base(filepath.Dir(dir)) != "coding" {
		t.Errorf("execute_code's directory %s is not under coding/", dir)
	}
	bad := []struct {
		name  string
		stage string
		recs  []Record
		share float64
		want  string
	}{
		{"unknown stage", "judge", nil, 0, "unknown stage"},
		{"other stage", ExecuteCode, []Record{rec(Scope, "x", 1, true)}, 0, `of stage "scope"`},
		{"no assistant", ExecuteCode, []Record{{Example: Example{Messages: []Message{{"user", "u"}}}, Meta: Meta{Stage: ExecuteCode}}}, 0, "user, assistant"},
		{"empty answer", ExecuteCode, []Record{{Example: Chat("s", "u", " "), Meta: Meta{Stage: ExecuteCode}}}, 0, "empty"},
		{"share", ExecuteCode, nil, 1, "validation share"},
	}
	for _, b := range bad {
		if _, err := Write(root, b.stage, b.recs, b.share); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: error %v, want %q", b.name, err, b.want)
		}
	}
	// The refused writes left the earlier dataset whole.
	train, err := Read(dir, Train)
	if err != nil || len(train) != 1 {
		t.Errorf("after refused writes: %d train records, %v", len(train), err)
	}
	// A rewrite replaces it and leaves no temporary directory behind.
	if _, err := Write(root, ExecuteCode, []Record{rec(ExecuteCode, "c", 3, true)}, 0); err != nil {
		t.Fatal(err)
	}
	train, _ = Read(dir, Train)
	if len(train) != 1 || train[0].Meta.Commit != "c" {
		t.Errorf("rewrite: %+v", train)
	}
	entries, _ := os.ReadDir(filepath.Dir(dir))
	if len(entries) != 1 {
		t.Errorf("left in %s: %v", filepath.Dir(dir), entries)
	}
}

func TestReadNamesTheBrokenLine(t *testing.T) {
	root := t.TempDir()
	sum, err := Write(root, Scope, []Record{rec(Scope, "a", 1, true), rec(Scope, "b", 2, true), rec(Scope, "c", 3, true)}, 0)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(sum.Dir, TrainFile)
	os.WriteFile(path, []byte("{\"messages\":[]}\nnot json\n"), 0o644)
	if _, err := Read(sum.Dir, Train); err == nil || !strings.Contains(err.Error(), "train.jsonl:2") {
		t.Errorf("error = %v, want the file and line 2", err)
	}
	os.WriteFile(path, []byte("{\"messages\":[]}\n"), 0o644)
	if _, err := Read(sum.Dir, Train); err == nil || !strings.Contains(err.Error(), "write the dataset again") {
		t.Errorf("mismatched meta: error = %v", err)
	}
	if _, err := Read(sum.Dir, "test"); err == nil {
		t.Error("an unknown split was read")
	}
}

// TestPlace: a complete run's temporary directory is renamed into place
// under the name given, with a suffix when a directory, even an empty
// one, has it; that directory is left as it was.
func TestPlace(t *testing.T) {
	root := t.TempDir()
	taken := filepath.Join(root, "plan-1-20240306T000000Z")
	if err := os.Mkdir(taken, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(root, ".tmp-1")
	if _, err := Write(tmp, Scope, []Record{rec(Scope, "a", 1, true)}, 0); err != nil {
		t.Fatal(err)
	}
	name, dir, err := Place(root, "plan-1-20240306T000000Z", tmp)
	if err != nil {
		t.Fatal(err)
	}
	if want := "plan-1-20240306T000000Z-2"; name != want || dir != filepath.Join(root, want) {
		t.Errorf("got %s at %s, want %s", name, dir, want)
	}
	if recs, err := Read(Dir(dir, Scope), Train); err != nil || len(recs) != 1 {
		t.Errorf("the placed directory's train split: got %d records, %v; want 1", len(recs), err)
	}
	if entries, err := os.ReadDir(taken); err != nil || len(entries) != 0 {
		t.Errorf("the directory that had the name: got %v, %v; want it empty, as it was", entries, err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("the temporary directory is still there: %v", err)
	}
}

func TestRemoveLeftovers(t *testing.T) {
	root := t.TempDir()
	mk := func(name, owner string) string {
		t.Helper()
		tmp := filepath.Join(root, ".tmp-"+name)
		if err := os.MkdirAll(filepath.Join(tmp, "reasoning", "scope"), 0o755); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := MarkPending(tmp, owner); err != nil {
				t.Fatal(err)
			}
		}
		_, dir, err := Place(root, name, tmp)
		if err != nil {
			t.Fatal(err)
		}
		return dir
	}
	orphan := mk("plan-1", "curate")          // placed, never recorded
	recorded := mk("plan-2", "curate")        // recorded, killed before its Settle
	older := mk("plan-3", "")                 // an older cra's, unmarked
	other := mk("bootstrap-app-1", "another") // another writer's
	if err := RemoveLeftovers(root, "curate", "cra curate-data", []string{Dir(recorded, Scope)}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Errorf("the unrecorded run is still there: %v", err)
	}
	for _, d := range []string{recorded, older, other} {
		if _, err := os.Stat(filepath.Join(d, "reasoning", "scope")); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(d), err)
		}
	}
	if _, err := os.Stat(filepath.Join(recorded, PendingFile)); !os.IsNotExist(err) {
		t.Errorf("the recorded run keeps its pending mark: %v", err)
	}
	if _, err := os.Stat(filepath.Join(other, PendingFile)); err != nil {
		t.Errorf("another writer's pending mark was touched: %v", err)
	}
	if got := runName(Dir(recorded, Scope)); got != "plan-2" {
		t.Errorf("runName: got %q, want plan-2", got)
	}
	if err := RemoveLeftovers(filepath.Join(root, "missing"), "curate", "cra curate-data", nil); err != nil {
		t.Errorf("a datasets directory not made yet: %v", err)
	}
}
