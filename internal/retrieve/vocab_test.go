package retrieve

import (
	"context"
	"testing"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/store"
)

// The vocabulary is asked once per term; a failed lookup caches nothing.
func TestVocabCache(t *testing.T) {
	f := newFixture(t, shop...)
	ctx := context.Background()
	db, err := store.NewFactory(config.StateDir(f.root)).Open(ctx, store.Curated, "", true)
	if err != nil {
		t.Fatal(err)
	}
	v := newVocab(db, f.repoID)
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
