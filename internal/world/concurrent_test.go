package world

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// The concurrency test re-runs this test binary as writer processes.
const (
	envWriterDir = "CRA_WORLD_TEST_WRITER_DIR"
	envWriter    = "CRA_WORLD_TEST_WRITER"
	envEntries   = "CRA_WORLD_TEST_ENTRIES"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(envWriterDir); dir != "" {
		os.Exit(writerMain(dir))
	}
	if dir := os.Getenv(envCompactDir); dir != "" {
		os.Exit(compactMain(dir, os.Getenv(envCompactDie)))
	}
	os.Exit(m.Run())
}

// agentSteps is the lifecycle each writer walks, one step every 1000
// entries, between its events.
var agentSteps = []Status{StatusStart, StatusActive, StatusFinish, StatusRetry, StatusActive, StatusFinish, StatusVerified}

// payload is entry i of writer w: its head names it, and every 50th is
// longer than 8 KiB, past what one write is atomic for without the lock.
func payload(w, i int) string {
	head := fmt.Sprintf("w%02d-%05d", w, i)
	if i%50 == 7 {
		return head + " " + strings.Repeat(head+";", 9*1024/(len(head)+1)+1)
	}
	return head + " tab\there"
}

func writerMain(dir string) int {
	w, _ := strconv.Atoi(os.Getenv(envWriter))
	n, _ := strconv.Atoi(os.Getenv(envEntries))
	l, err := Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	l.Sync = SyncNever
	ctx := context.Background()
	id := fmt.Sprintf("w%02d", w)
	for i := range n {
		if i%1000 == 0 && i/1000 < len(agentSteps) {
			if agentSteps[i/1000] == StatusVerified {
				_, err = l.Verify(ctx, id, "reviewed", payload(w, i))
			} else {
				_, err = l.Agent(ctx, agentSteps[i/1000], id, payload(w, i), "")
			}
		} else {
			_, err = l.Event(ctx, SourceBash, id, payload(w, i))
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "writer %d entry %d: %v\n", w, i, err)
			return 1
		}
	}
	return 0
}

// TestConcurrentWriters: 16 processes append 5,000 entries each, some
// longer than 8 KiB, some lifecycle steps. Every entry must be there
// exactly once, whole, and every lifecycle must have been accepted.
func TestConcurrentWriters(t *testing.T) {
	writers, entries := 16, 5000
	if testing.Short() {
		entries = 500
	}
	dir := t.TempDir()
	cmds := make([]*exec.Cmd, writers)
	stderr := make([]bytes.Buffer, writers)
	for w := range writers {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envWriterDir+"="+dir, envWriter+"="+strconv.Itoa(w), envEntries+"="+strconv.Itoa(entries))
		cmd.Stderr = &stderr[w]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[w] = cmd
	}
	for w, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("writer %d: %v: %s", w, err, stderr[w].String())
		}
	}
	if t.Failed() {
		return
	}

	l, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := make(map[[2]int]int, writers*entries)
	lines := 0
	_, err = l.Scan(context.Background(), Position{}, func(r *Record) error {
		lines++
		if r.Err != nil {
			t.Errorf("torn or malformed: %v: %.80q", r.Err, r.Raw)
			return nil
		}
		var w, i int
		if _, err := fmt.Sscanf(r.Entry.Output, "w%02d-%05d", &w, &i); err != nil {
			t.Errorf("line %d: unexpected output %.80q", r.Line, r.Entry.Output)
			return nil
		}
		if r.Entry.Output != payload(w, i) {
			t.Errorf("line %d: entry w%02d-%05d damaged: %.80q", r.Line, w, i, r.Entry.Output)
		}
		wantAgent := i%1000 == 0 && i/1000 < len(agentSteps)
		if got := r.Entry.Kind == KindAgent; got != wantAgent {
			t.Errorf("line %d: entry w%02d-%05d: got agent %v, want %v", r.Line, w, i, got, wantAgent)
		}
		seen[[2]int{w, i}]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if lines != writers*entries {
		t.Errorf("got %d entries, want %d", lines, writers*entries)
	}
	data, err := os.ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte{'\n'}); n != writers*entries {
		t.Errorf("got %d lines, want %d: no empty or extra lines", n, writers*entries)
	}
	for w := range writers {
		for i := range entries {
			if n := seen[[2]int{w, i}]; n != 1 {
				t.Errorf("entry w%02d-%05d present %d times, want once", w, i, n)
			}
		}
	}
	agents, err := l.Current(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	steps := min((entries+999)/1000, len(agentSteps))
	for _, a := range agents {
		if want := agentSteps[steps-1]; a.Status != want {
			t.Errorf("agent %s: got %s, want %s", a.ID, a.Status, want)
		}
	}
	if len(agents) != writers {
		t.Errorf("got %d agents, want %d", len(agents), writers)
	}
}
