package corpus_test

import (
	"context"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/corpus"
)

func TestIndexRuns(t *testing.T) {
	ctx := context.Background()
	c, _ := openRaw(t)
	if _, ok, err := c.LastIndexRun(ctx); err != nil || ok {
		t.Fatalf("empty: got %v, %v, want no run", ok, err)
	}
	first := corpus.IndexRun{Repo: "/src/shop", FilesScanned: 12, FilesChanged: 12, Duration: 1500 * time.Millisecond, Status: "ok"}
	last := corpus.IndexRun{Repo: "/src/shop", FilesScanned: 12, Duration: 40 * time.Millisecond, Status: "failed: context canceled"}
	for _, r := range []corpus.IndexRun{first, last} {
		if err := c.AddIndexRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	got, ok, err := c.LastIndexRun(ctx)
	last.Timestamp = stamp
	if err != nil || !ok || got != last {
		t.Errorf("got %+v, %v, %v, want %+v", got, ok, err, last)
	}
}
