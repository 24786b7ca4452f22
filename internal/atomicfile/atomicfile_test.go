package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "f.txt")
	if err := Write(p, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	st, _ := os.Stat(p)
	if string(got) != "two" || st.Mode().Perm() != 0o600 {
		t.Errorf("got %q %v, want \"two\" 0600", got, st.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Errorf("temp files left behind: %v", entries)
	}
	// A directory in the way: an error, and the old content untouched.
	if err := Write(dir, []byte("x"), 0o644); err == nil {
		t.Error("writing over a directory: got no error")
	}
}

func TestWriteNew(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "train.jsonl")
	if err := WriteNew(p, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "{}\n" {
		t.Errorf("got %q, %v, want the data", b, err)
	}
	// A new file only: a file already there is an error, not replaced.
	if err := WriteNew(p, []byte("other\n"), 0o644); err == nil {
		t.Error("a second write of the same path: got no error")
	}
	if b, _ := os.ReadFile(p); string(b) != "{}\n" {
		t.Errorf("the file was replaced: %q", b)
	}
	SyncDir(dir)
	SyncDir(filepath.Join(dir, "missing")) // best effort: no panic, no error
}
