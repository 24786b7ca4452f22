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
	clock := time.Now().UTC().Truncate(time.Millisecond)
	l.Now = func() time.Time { return clock }
	t0 := clock.Add(-30 * time.Minute)
	path := world.Path(dir)
	// age stamps the log a minute ago: past Version's slack, which a
	// write just now is within.
	age := func() {
		t.Helper()
		old := time.Now().Add(-time.Minute)
		if err := os.Chtimes(path, old, old); err != nil {
			t.Fatal(err)
		}
	}
	restart := func(id string, at time.Time) {
		t.Helper()
		if _, err := l.Append(ctx, world.Entry{Kind: world.KindEvent, Source: world.SourceSystem, ID: id, Output: "restarted | reason: gone", Time: at}); err != nil {
			t.Fatal(err)
		}
		age()
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

	// The same bytes but one identifier, written in place: same size,
	// and the same mtime as before too, but that it is just now.
	rewrite := func(from, to string, stamp time.Time) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, bytes.Replace(b, []byte(from), []byte(to), 1), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, stamp, stamp); err != nil {
			t.Fatal(err)
		}
	}
	rewrite("[T-3]", "[T-9]", time.Now().Add(-30*time.Second))
	check("after a rewrite in place", t0.Add(time.Minute), "T-2", "T-9")
	if _, ok := l.Version(); !ok {
		t.Fatal("a log stamped 30 s ago: Version does not trust it")
	}
	// Within the slack, a rewrite of the same size may keep the mtime:
	// the version is not trusted, and the next read reads.
	stamp := time.Now()
	rewrite("[T-9]", "[T-8]", stamp)
	if _, ok := l.Version(); ok {
		t.Error("Version trusted a log changed within its slack")
	}
	check("a rewrite within the slack", t0.Add(time.Minute), "T-2", "T-8")
	rewrite("[T-8]", "[T-7]", stamp)
	check("another, same size and mtime", t0.Add(time.Minute), "T-2", "T-7")
}
