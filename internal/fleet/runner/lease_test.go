//go:build unix

package runner

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/supervise"
)

// hostLeases is Leases as one host of a fleet sees them: it may claim
// only the tasks no other host holds.
type hostLeases struct {
	mu       sync.Mutex
	others   map[string]bool // held by other hosts
	taken    map[string]bool // claimed here, then taken over elsewhere
	claimed  []string
	released []string
}

func (h *hostLeases) Claim(_ context.Context, ids []string, n int) ([]string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, id := range ids {
		if len(out) < n && !h.others[id] && !slices.Contains(h.claimed, id) {
			out = append(out, id)
		}
	}
	h.claimed = append(h.claimed, out...)
	return out, nil
}

func (h *hostLeases) Holds(_ context.Context, id string) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.taken[id], nil
}

func (h *hostLeases) Release(_ context.Context, id string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.released = append(h.released, id)
	return nil
}

// On a fleet the processor runs only what it claims, and a run whose
// lease is lost is stopped, not finished: no finish entry, no move, its
// working copy gone (the next run starts from the pushed branch), its
// lease let go.
func TestLostLeaseStopsTheRunUnfinished(t *testing.T) {
	t.Parallel()
	p, s, _ := newTestProcessor(t, map[string]config.Agent{
		"hang": {Command: "echo up; sleep 300 & wait"},
	}, 2)
	ctx := context.Background()
	mine := addWith(t, p.Board, "mine", "hang", nil)
	theirs := addWith(t, p.Board, "theirs", "hang", nil)
	leases := &hostLeases{others: map[string]bool{theirs.ID: true}}
	p.Leases = leases

	started, err := p.Tick(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(started, []string{mine.ID}) {
		t.Fatalf("started %v, want only %s (another host holds %s)", started, mine.ID, theirs.ID)
	}
	runFile := filepath.Join(p.RunDir(mine.ID), supervise.RunFileName)
	waitFor(t, func() bool { _, err := os.Stat(runFile); return err == nil })
	id, err := supervise.LoadIdentity(runFile)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { _, ok := p.LastOutput(mine.ID); return ok })

	if !p.Lose(mine.ID, "host h2 took it over as run r-2") {
		t.Fatal("Lose found no run going")
	}
	p.Wait()
	if st, ok := procState(id.PID); ok && st != 'Z' {
		t.Errorf("the agent (pid %d) still runs, state %c", id.PID, st)
	}
	if p.Lose(mine.ID, "again") {
		t.Error("Lose of an ended run reported a run going")
	}
	lines := logLines(t, p.Board, mine.ID)
	text := strings.Join(lines, "\n")
	if strings.Contains(text, "[agent:finish]") || strings.Contains(text, "[agent:retry]") {
		t.Errorf("a lost run was finished or requeued here:\n%s", text)
	}
	if !strings.Contains(text, "abandoned: run 1 stopped, not finished") || !strings.Contains(text, "host h2 took it over as run r-2") {
		t.Errorf("no event says the run was abandoned and why:\n%s", text)
	}
	if f := folderOn(t, s, mine.ID); f != board.InProgress {
		t.Errorf("the lost run's task moved to %s: the run that took it over owns it", f)
	}
	if _, err := os.Stat(statedir.At(p.StateDir).Worktree(mine.ID)); !os.IsNotExist(err) {
		t.Errorf("the abandoned working copy is still there (%v)", err)
	}
	leases.mu.Lock()
	defer leases.mu.Unlock()
	if !slices.Equal(leases.released, []string{mine.ID}) {
		t.Errorf("released %v, want %s once", leases.released, mine.ID)
	}
	if f := folderOn(t, s, theirs.ID); f != board.Pending {
		t.Errorf("the task another host holds is in %s", f)
	}
}

// A task whose last run was another host's waits PreferFor for that
// host, which has its working copy, then any host takes it; the run
// records the host it ran on.
func TestPreferTheHostWithTheWorkingCopy(t *testing.T) {
	t.Parallel()
	p, s, _ := newTestProcessor(t, map[string]config.Agent{"quick": {Command: "echo done"}}, 2)
	ctx := context.Background()
	moved := addWith(t, p.Board, "last ran on h2", "quick", func(t *board.Task) { t.Results = &board.Results{Host: "h2"} })
	if got, _, err := s.Get(ctx, moved.ID); err != nil || got.Results == nil || got.Results.Host != "h2" {
		t.Fatalf("the task's results do not keep the host: %v %v", got, err)
	}
	mine := addWith(t, p.Board, "last ran here", "quick", func(t *board.Task) { t.Results = &board.Results{Host: "h1"} })
	leases := &hostLeases{}
	p.Leases, p.Host, p.PreferFor = leases, "h1", time.Hour

	started, err := p.Tick(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p.Wait()
	if !slices.Equal(started, []string{mine.ID}) {
		t.Errorf("started %v, want only %s while h2 may still take %s", started, mine.ID, moved.ID)
	}
	if got, _, err := s.Get(ctx, mine.ID); err != nil || got.Results == nil || got.Results.Host != "h1" {
		t.Errorf("the run did not record its host: %+v %v", got.Results, err)
	}
	p.PreferFor = 0 // h2 had its time
	if started, err = p.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	p.Wait()
	if !slices.Equal(started, []string{moved.ID}) {
		t.Errorf("started %v, want %s once h2 had its time", started, moved.ID)
	}
}

// A run whose agent ended after its lease went to another host, before
// this host heard of it (Level 1 stopped it as an orphan, or it just
// finished), is not committed, pushed or finished: the check at its end
// finds the lease gone.
func TestRunEndingAfterItsLeaseWentIsNotFinished(t *testing.T) {
	t.Parallel()
	p, s, _ := newTestProcessor(t, map[string]config.Agent{"quick": {Command: "echo done > work.txt; echo did it"}}, 1)
	ctx := context.Background()
	task := addWith(t, p.Board, "taken over meanwhile", "quick", nil)
	p.Leases = &hostLeases{taken: map[string]bool{task.ID: true}}
	if _, err := p.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	p.Wait()
	text := strings.Join(logLines(t, p.Board, task.ID), "\n")
	if strings.Contains(text, "[agent:finish]") || !strings.Contains(text, "abandoned: run 1 stopped, not finished") ||
		!strings.Contains(text, "no longer this host's") {
		t.Errorf("the run was finished, or its abandon not said:\n%s", text)
	}
	if f := folderOn(t, s, task.ID); f != board.InProgress {
		t.Errorf("the task moved to %s", f)
	}
}
