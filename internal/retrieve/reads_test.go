package retrieve

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
)

// The vocabulary is asked once per term; a failed lookup caches nothing.
func TestVocabCache(t *testing.T) {
	f := newFixture(t, shop...)
	ctx := context.Background()
	db, err := store.NewFactory(statedir.Of(f.root)).Open(ctx, store.Curated, "", true)
	if err != nil {
		t.Fatal(err)
	}
	v := newReads(kb.New(db), f.repoID)
	got, err := v.lookup(ctx, []string{"pager", "zzzabsent", "pager"})
	if err != nil || len(got) != 1 || got[0].term != "pager" || got[0].df < 1 {
		t.Fatalf("got %v %v, want pager once with its count", got, err)
	}
	if n, err := v.fileCount(ctx); err != nil || n < 5 {
		t.Fatalf("files: %d %v", n, err)
	}
	db.Close()
	// Known terms need no query; an unknown one fails and stays unknown.
	if again, err := v.lookup(ctx, []string{"zzzabsent", "pager"}); err != nil || len(again) != 1 {
		t.Errorf("cached lookup: %v %v", again, err)
	}
	if _, err := v.lookup(ctx, []string{"format"}); err == nil {
		t.Error("a lookup on a closed database succeeded")
	}
	if _, ok := v.df["format"]; ok {
		t.Error("a failed lookup left the term cached")
	}
}

// A file is read once per run, and scanned once per file and task.
func TestReadsFilesAndScans(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	p := filepath.Join(dir, "a.py")
	if err := os.WriteFile(p, []byte("def pager():\n    return 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, shop...)
	v := newReads(f.kb, f.repoID)
	lines, err := v.file(p)
	if err != nil || len(lines) != 3 || lines[0] != "def pager():\n" {
		t.Fatalf("got %q %v", lines, err)
	}
	os.Remove(p)
	if again, err := v.file(p); err != nil || len(again) != 3 {
		t.Errorf("second read: %q %v, want the lines read before", again, err)
	}
	if _, err := v.file(filepath.Join(dir, "missing.py")); err == nil {
		t.Error("a missing file read without error")
	}
	tt, err := v.taskTerms(ctx, []string{"pager"})
	if err != nil || tt.w["pager"] <= 0 {
		t.Fatalf("task terms: %+v %v", tt, err)
	}
	if tt2, _ := v.taskTerms(ctx, []string{"pager"}); tt2 != tt {
		t.Error("the same keywords weighed twice")
	}
	ft := v.scan(p, lines, tt)
	if len(ft.exact[0]) != 1 || ft.exact[0][0] != "pager" {
		t.Fatalf("scan: %+v", ft)
	}
	if again := v.scan(p, nil, tt); len(again.exact) != 3 {
		t.Errorf("second scan: %+v, want the first", again)
	}
}
