package review

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/supervise"
	"github.com/cra-dev/cra/internal/world"
)

// Level 2's restarts come stale_after apart at the soonest; the window
// they are counted in holds the start limit of them, so a run that
// always stalls is blocked in the end.
func TestLevelTwoPolicyReachesTheLimit(t *testing.T) {
	stale := 15 * time.Minute
	p := levelTwoPolicy(supervise.Policy{}, stale)
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var starts []time.Time
	for i := range supervise.DefaultLimit {
		starts = append(starts, now.Add(-time.Duration(i+1)*stale))
	}
	if got := p.Next(starts, now).Verdict; got != supervise.LimitReached {
		t.Errorf("after %d restarts %s apart: %s, want %s", len(starts), stale, got, supervise.LimitReached)
	}
	// Level 1's own window stands when it is the longer.
	if got := levelTwoPolicy(supervise.Policy{Window: 10 * time.Hour}, time.Minute).Window; got != 10*time.Hour {
		t.Errorf("window %s, want 10h", got)
	}
}

// Level 2 stops a run only when nothing of it moved for stale_after
// (issue 29 item 4): an agent that prints nothing for longer but writes
// files and uses CPU is alive; one that only sleeps is stale. The world
// log's entries and both runs' files are dated an hour back, so that
// only what the processor sees moving from now on counts.
func TestLevel2SparesABusyQuietRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFixture(t, "[agents.busy]\ncommand = \"while :; do i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done; echo $i > busy.txt; done\"\n\n"+
		"[agents.stuck]\ncommand = \"exec sleep 60\"\n")
	hourAgo := func() time.Time { return time.Now().Add(-time.Hour) }
	f.board.Log.(*world.Log).Now, f.board.Now = hourAgo, hourAgo
	f.proc.AliveEvery = 50 * time.Millisecond
	busy, stuck := f.add(t, "compute quietly", "busy"), f.add(t, "get stuck", "stuck")
	var wg sync.WaitGroup
	for _, id := range []string{busy.ID, stuck.ID} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := f.proc.Run(ctx, id); err != nil {
				t.Error(err)
			}
		}()
	}
	defer wg.Wait()
	defer cancel()
	waitRunning(t, f, busy.ID)
	pid := waitRunning(t, f, stuck.ID)
	// Once the stuck run is its sleep (the sandbox's launcher exec'd it),
	// it uses no more CPU.
	for deadline := time.Now().Add(20 * time.Second); ; {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if strings.TrimSpace(string(comm)) == "sleep" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stuck run's process is %q, never sleep", comm)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // past the samples of its start
	// Both runs' signs are aged an hour; then the busy run's sampler
	// stamps its alive file (its CPU time grows) and the stuck one's does
	// not. On a loaded machine a sample may come late, either way: the
	// test waits for the busy run's stamp rather than a fixed half second,
	// and ages the signs again when a late sample of the stuck run's start
	// stamped it too.
	old := time.Now().Add(-time.Hour)
	age := func() {
		for _, id := range []string{busy.ID, stuck.ID} {
			rd := statedir.At(f.state).Run(id)
			for _, path := range []string{rd.Log(1), rd.Alive(1)} {
				if err := os.Chtimes(path, old, old); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	stamped := func(id string) bool {
		fi, err := os.Stat(statedir.At(f.state).Run(id).Alive(1))
		return err == nil && fi.ModTime().After(old.Add(time.Minute))
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		age()
		for !stamped(busy.ID) {
			if time.Now().After(deadline) {
				t.Fatalf("the busy run's alive file was never stamped after its signs were aged: its sampler does not see it move")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if !stamped(stuck.ID) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stuck run's alive file is stamped again and again: its sampler sees a sleeping process move")
		}
	}
	rep, err := f.rec.Tick(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var restarted []string
	for _, r := range rep.Restarted {
		restarted = append(restarted, r.ID)
		if r.ID == stuck.ID && !strings.HasPrefix(r.Reason, "stale: no output and no log line for 1h") {
			t.Errorf("the stuck run's reason: %q", r.Reason)
		}
	}
	if len(restarted) != 1 || restarted[0] != stuck.ID {
		t.Errorf("Level 2 stopped %v; want only the stuck run %s, not the busy one %s", restarted, stuck.ID, busy.ID)
	}
	if _, err := os.Stat(filepath.Join(statedir.At(f.state).Worktree(busy.ID), "busy.txt")); err != nil {
		t.Errorf("the busy run never wrote its file: %v", err)
	}
	if log, _ := os.ReadFile(statedir.At(f.state).Run(busy.ID).Log(1)); len(log) != 0 {
		t.Errorf("the busy run printed %q: it should be silent", log)
	}
}
