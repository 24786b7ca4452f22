package world

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCompact(t *testing.T) {
	l, c := newTestLog(t)
	ctx := context.Background()
	var malformed int
	l.Malformed = func(*Record) { malformed++ }
	step := func(id string, s Status, need string) {
		t.Helper()
		c.advance(time.Second)
		if _, err := logStep(ctx, l, s, id, string(s)+" "+id, need); err != nil {
			t.Fatal(err)
		}
	}
	event := func(src Source, id string) {
		t.Helper()
		c.advance(time.Second)
		if _, err := l.Event(ctx, src, id, "about "+id); err != nil {
			t.Fatal(err)
		}
	}
	event(SourceIndex, "repo") // old, of no agent
	step("done", StatusStart, "tests pass")
	step("done", StatusActive, "")
	event(SourceBash, "done")
	step("done", StatusFinish, "")
	step("done", StatusRetry, "")
	step("done", StatusActive, "")
	step("done", StatusFinish, "")
	step("done", StatusVerified, "")
	step("stuck", StatusStart, "it works")
	step("stuck", StatusActive, "")
	step("stuck", StatusFailed, "a person must log in")
	event(SourceUser, "stuck")
	step("running", StatusStart, "")
	step("running", StatusActive, "")
	event(SourceBash, "running")
	f, _ := os.OpenFile(l.Path(), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("a malformed line\n")
	f.Close()
	cut := c.advance(time.Second)
	event(SourceIndex, "repo") // recent, of no agent

	// The fold, first to read the log, tells of its malformed line.
	before, err := l.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A reader has read up to the "stuck" failure.
	var seen []string
	if _, err := l.Check(ctx, "reader", ids(&seen)); err != nil {
		t.Fatal(err)
	}
	step("running", StatusFinish, "") // after the marker

	oldLines := readLines(t, l)
	stats, err := l.Compact(ctx, CompactOptions{EventsBefore: cut})
	if err != nil {
		t.Fatal(err)
	}
	after := readLines(t, l)
	var keptIDs []string
	for _, line := range after {
		e, err := ParseLine([]byte(line))
		if err != nil {
			keptIDs = append(keptIDs, "!")
			continue
		}
		keptIDs = append(keptIDs, e.ID+":"+string(e.Status)+string(e.Source))
	}
	want := []string{
		"done:start", "done:verified",
		"stuck:start", "stuck:active", "stuck:failed", "stuck:user",
		"running:start", "running:active", "running:bash",
		"!", "repo:index", "running:finish",
	}
	if diff := cmp.Diff(want, keptIDs); diff != "" {
		t.Errorf("kept lines (-want +got):\n%s", diff)
	}
	wantStats := CompactStats{Lines: int64(len(oldLines)), Kept: int64(len(after)), Dropped: int64(len(oldLines) - len(after)),
		Verified: 1, Archive: filepath.Join(l.dir, archiveName)}
	if diff := cmp.Diff(wantStats, stats); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}

	// Nothing is lost: kept and archived lines are the old lines.
	arch, err := os.ReadFile(stats.Archive)
	if err != nil {
		t.Fatal(err)
	}
	all := append(strings.Split(strings.TrimSuffix(string(arch), "\n"), "\n"), after...)
	if len(all) != len(oldLines) {
		t.Errorf("got %d kept+archived lines, want %d", len(all), len(oldLines))
	}
	for _, line := range oldLines {
		found := false
		for _, a := range all {
			if a == line {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("line lost: %s", line)
		}
	}

	// The latest state of every agent is the same, from a fresh replay.
	fresh, _ := Open(l.dir)
	fresh.Now = c.Now
	got, err := fresh.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range before {
		if before[i].ID == "done" {
			before[i].Retries = 0 // its retry entries were history
		}
		if before[i].ID == "running" {
			before[i].Status, before[i].Output = StatusFinish, "finish running"
			before[i].Since = c.now
			before[i].LastSeen = c.now
		}
	}
	if diff := cmp.Diff(before, got); diff != "" {
		t.Errorf("Current after compaction (-before +after):\n%s", diff)
	}

	// The marker kept its place: only what came after it is new.
	seen = nil
	if _, err := l.Check(ctx, "reader", ids(&seen)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"running"}, seen); diff != "" {
		t.Errorf("check after compaction (-want +got):\n%s", diff)
	}
	// The lifecycle goes on where it was.
	if _, err := l.Agent(ctx, StatusRetry, "stuck", "answered", ""); err != nil {
		t.Errorf("retry after the user's answer: %v", err)
	}
	if _, err := l.Agent(ctx, StatusActive, "done", "", ""); err == nil {
		t.Error("verified agent moved after compaction")
	}
	if malformed != 1 {
		t.Errorf("got %d malformed reports, want 1", malformed)
	}
}

// TestFollowAcrossCompaction: a follower goes on in the compacted file.
func TestFollowAcrossCompaction(t *testing.T) {
	l, c := newTestLog(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, s := range []Status{StatusStart, StatusActive, StatusFinish, StatusVerified} {
		c.advance(time.Second)
		if _, err := logStep(ctx, l, s, "old", "", ""); err != nil {
			t.Fatal(err)
		}
	}
	end, err := l.Tail(ctx, 0, Filter{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 10)
	done := make(chan error, 1)
	go func() {
		done <- l.Follow(ctx, end, Filter{}, func(r *Record) error {
			got <- fmt.Sprintf("%s@%d", r.Entry.ID, r.Line)
			return nil
		})
	}()
	if _, err := l.Event(ctx, SourceBash, "before", "x"); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "before@6" { // old: start, active, finish, review, verified
		t.Errorf("got %s, want before@6", s)
	}
	if _, err := l.Compact(ctx, CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Event(ctx, SourceBash, "after", "x"); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "after@4" { // old:start, old:verified, before, after
			t.Errorf("got %s, want after@4", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing followed after compaction")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

// TestCompactKeepsAnOversizedLine: a line longer than MaxLineBytes (a
// hand-written or damaged one), which readers get cut short, is kept
// whole by compaction, with the lines around it.
func TestCompactKeepsAnOversizedLine(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := l.Event(ctx, SourceBash, "a", "first"); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("y"), MaxLineBytes+300<<10)
	f, err := os.OpenFile(l.Path(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(append(big, '\n'))
	f.Close()
	if _, err := l.Event(ctx, SourceBash, "b", "last"); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Compact(ctx, CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(after, before) {
		t.Errorf("compaction changed a log it had nothing to drop from: %d bytes before, %d after", len(before), len(after))
	}
	if _, err := l.Event(ctx, SourceBash, "c", "after"); err != nil {
		t.Fatalf("append after compaction: %v", err)
	}
}

// TestFollowAcrossTwoCompactions: a follower that is busy (a slow
// client of the web board, a blocked terminal) while two compactions run
// must still get the lines appended between them.
func TestFollowAcrossTwoCompactions(t *testing.T) {
	l, _ := newTestLog(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	end, err := l.Tail(ctx, 0, Filter{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 10)
	release := make(chan struct{})
	go l.Follow(ctx, end, Filter{}, func(r *Record) error {
		got <- r.Entry.ID
		if r.Entry.ID == "e1" {
			<-release // busy printing
		}
		return nil
	})
	ev := func(id string) {
		if _, err := l.Event(ctx, SourceBash, id, "x"); err != nil {
			t.Fatal(err)
		}
	}
	ev("e1")
	if id := <-got; id != "e1" {
		t.Fatalf("got %s", id)
	}
	if _, err := l.Compact(ctx, CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	ev("between") // appended to the first compacted file
	if _, err := l.Compact(ctx, CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	ev("after")
	close(release)
	var seen []string
	timeout := time.After(20 * time.Second)
	for len(seen) < 2 {
		select {
		case id := <-got:
			seen = append(seen, id)
		case <-timeout:
			t.Fatalf("followed %v after e1; want [between after]", seen)
		}
	}
	if seen[0] != "between" || seen[1] != "after" {
		t.Fatalf("followed %v after e1; want [between after]", seen)
	}
}

// TestResetDuringCompaction: 'cra log check --reset' while a compaction
// runs waits for it, instead of being undone by the markers it moves at
// its end: the check that follows reads the whole log.
func TestResetDuringCompaction(t *testing.T) {
	l, c := newTestLog(t)
	ctx := context.Background()
	fill(t, l, c, 1, 3) // e1 e2 e3
	var first []string
	if _, err := l.Check(ctx, "r", ids(&first)); err != nil {
		t.Fatal(err)
	}
	other, err := Open(l.dir) // the user's 'cra log check --reset', another process
	if err != nil {
		t.Fatal(err)
	}
	reset := make(chan error, 1)
	l.crashAt = func(step string) {
		if step == "journaled" { // under way, the markers read
			go func() { reset <- other.ResetMarker(ctx, "r") }()
		}
	}
	if _, err := l.Compact(ctx, CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-reset; err != nil {
		t.Fatal(err)
	}
	var got []string
	if _, err := other.Check(ctx, "r", ids(&got)); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("check after --reset read %v, want e1 e2 e3 (the whole log)", got)
	}
}
