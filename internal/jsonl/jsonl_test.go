package jsonl

import (
	"os"
	"path/filepath"
	"testing"
)

type rec struct {
	N int `json:"n"`
}

// A torn last line is ended before the next record, skipped and counted
// when read; a missing file has no records.
func TestAppendAfterATornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "log.jsonl")
	if err := Append(path, rec{1}); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"n":`)
	f.Close()
	if err := Append(path, rec{2}); err != nil {
		t.Fatal(err)
	}
	got, bad, err := Read(path, func(r *rec) bool { return r.N > 0 })
	if err != nil || bad != 1 || len(got) != 2 || got[0].N != 1 || got[1].N != 2 {
		t.Errorf("got %v, %d bad, %v; want records 1 and 2, 1 bad", got, bad, err)
	}
	if none, bad, err := Read[rec](filepath.Join(t.TempDir(), "none"), nil); none != nil || bad != 0 || err != nil {
		t.Errorf("a missing file: %v, %d, %v", none, bad, err)
	}
}
