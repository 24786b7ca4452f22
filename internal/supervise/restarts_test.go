package supervise

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/world"
)

// TestRestartsFollowTheLog: the restarts a pass counts are those a fresh
// read of the log gives, window after window, while the pass keeps its
// last read for an unchanged log: after an append, after a rewrite of
// the same size in place and for an earlier window, it reads again.
func TestRestartsFollowTheLog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l, err := world.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond) // an hour past the file's stamp: Version holds
	l.Now = func() time.Time { return clock }
	t0 := clock.Add(-30 * time.Minute)
	restart := func(id string, at time.Time) {
		t.Helper()
		if _, err := l.Append(ctx, world.Entry{Kind: world.KindEvent, Source: world.SourceSystem, ID: id, Output: "restarted | reason: gone", Time: at}); err != nil {
			t.Fatal(err)
		}
	}
	restart("T-1", t0)
	restart("T-2", t0.Add(10*time.Minute))
	p := &Pass{Log: l, StateDir: dir}
	check := func(step string, since time.Time, want ...string) {
		t.Helper()
		got, err := p.restarts(ctx, since)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		fresh, err := RecentRestarts(ctx, l, since)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) || len(fresh) != len(want) {
			t.Fatalf("%s: restarts %v, a fresh read %v, want %v", step, got, fresh, want)
		}
		for _, id := range want {
			if len(got[id]) != 1 || len(fresh[id]) != 1 || !got[id][0].Equal(fresh[id][0]) {
				t.Fatalf("%s: restarts %v, a fresh read %v, want %v", step, got, fresh, want)
			}
		}
	}
	check("first read", t0.Add(-time.Minute), "T-1", "T-2")
	if !p.recent.ok {
		t.Fatal("the pass kept no read of an unchanged log")
	}
	check("the window slid past T-1", t0.Add(time.Minute), "T-2")
	restart("T-3", t0.Add(20*time.Minute))
	check("after an append", t0.Add(time.Minute), "T-2", "T-3")
	check("an earlier window", t0.Add(-time.Minute), "T-1", "T-2", "T-3")

	// The same bytes but one identifier, written in place: same size.
	path := world.Path(dir)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Replace(b, []byte("[T-3]"), []byte("[T-9]"), 1), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	later := time.Now().Add(-time.Minute) // a stamp of its own, a minute old: Version holds
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	check("after a rewrite in place", t0.Add(time.Minute), "T-2", "T-9")
}
