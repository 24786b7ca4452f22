//go:build unix

package review

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/supervise"
	"github.com/cra-dev/cra/internal/world"
)

// fakeRemote is the fleet's other hosts as Level 2 sees them: cra's own
// seam (RemoteRuns), whose PostgreSQL side internal/fleet tests against
// a real database.
type fakeRemote struct {
	mu    sync.Mutex
	runs  map[string]RemoteRun
	err   error
	stop  func(taskID, runID, why string) (bool, error)
	stops []string // task run why, per Stop
}

func (f *fakeRemote) Runs(context.Context) (map[string]RemoteRun, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runs, f.err
}

func (f *fakeRemote) Stop(_ context.Context, taskID, runID, why string) (bool, error) {
	f.mu.Lock()
	f.stops = append(f.stops, taskID+" "+runID+" "+why)
	stop := f.stop
	f.mu.Unlock()
	if stop == nil {
		return true, nil
	}
	return stop(taskID, runID, why)
}

// activeElsewhere adds a task whose run 1 is active, in progress, with
// no process on this machine: another host runs it.
func activeElsewhere(t *testing.T, f *fixture) *board.Task {
	t.Helper()
	ctx := context.Background()
	task := f.add(t, "run elsewhere", "")
	if _, err := f.board.Log.Agent(ctx, world.StatusActive, task.ID, "run 1: stuck", ""); err != nil {
		t.Fatal(err)
	}
	if err := f.board.Store.Move(ctx, task.ID, board.Pending, board.InProgress); err != nil {
		t.Fatal(err)
	}
	return task
}

func lastEntry(t *testing.T, f *fixture, id string) world.Agent {
	t.Helper()
	a, _, err := f.board.Log.Lookup(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestLevel2JudgesRunsOnOtherHosts: on the fleet's leader, Level 2
// judges a run another host holds from the later of its log lines and
// its host's report of its last output (the runs' files are not here):
// stale, it is stopped through its lease (Stop) and restarted as a local
// run is, its restart counted by Level 1 and at the start limit a block;
// a run whose host reports output within stale_after is left, as is one
// that ended before the stop took or whose finish its host logged
// meanwhile; an output time after now counts from when it was first
// seen; a run stopped before whose restart failed is restarted without
// another stop; and an unreadable fleet leaves the tick to go on.
func TestLevel2JudgesRunsOnOtherHosts(t *testing.T) {
	ctx := context.Background()
	later := time.Now().Add(time.Hour) // the log's lines are an hour old then
	tests := []struct {
		name string
		// output is the host's report of the run's last output, from later.
		output  time.Duration
		revoked string
		limit   bool // Level 1's start limit reached
		stop    func(f *fixture) func(taskID, runID, why string) (bool, error)
		err     error
		// want: the folder after the tick, and whether Stop was called.
		want   board.Folder
		stops  int
		warned string
	}{
		{name: "stale", output: -50 * time.Minute, want: board.Pending, stops: 1},
		{name: "output within stale_after", output: -time.Minute, want: board.InProgress},
		{name: "output after now", output: 10 * time.Hour, want: board.InProgress},
		{name: "never reported, stale", want: board.Pending, stops: 1},
		{name: "at the start limit", output: -50 * time.Minute, limit: true, want: board.FailedBlocked, stops: 1},
		{name: "ended before the stop", output: -50 * time.Minute, want: board.InProgress, stops: 1,
			stop: func(*fixture) func(string, string, string) (bool, error) {
				return func(string, string, string) (bool, error) { return false, nil }
			}},
		// want "": the review that follows in the tick requeues it.
		{name: "finished meanwhile", output: -50 * time.Minute, stops: 1,
			stop: func(f *fixture) func(string, string, string) (bool, error) {
				return func(id, _, _ string) (bool, error) {
					// Its host logs the finish, then the revocation lands
					// before the host released its lease.
					if _, err := f.board.Log.Agent(ctx, world.StatusFinish, id, "exit 0: done", ""); err != nil {
						return false, err
					}
					return true, f.board.Store.Move(ctx, id, board.InProgress, board.Completed)
				}
			}},
		{name: "stopped before, restart failed", output: -time.Minute, revoked: "stale: no output and no log line for 20m0s, nor any file written or CPU time used (on host b)",
			want: board.Pending},
		{name: "fleet unreadable", err: errors.New("connection refused"), want: board.InProgress, warned: "read the runs of the fleet's other hosts: connection refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, "")
			task := activeElsewhere(t, f)
			remote := &fakeRemote{err: tc.err, runs: map[string]RemoteRun{task.ID: {
				Host: "b", RunID: "r-0123", Revoked: tc.revoked, Renewed: later.Add(-10 * time.Second)}}}
			if tc.output != 0 {
				r := remote.runs[task.ID]
				r.LastOutput = later.Add(tc.output)
				remote.runs[task.ID] = r
			}
			if tc.stop != nil {
				remote.stop = tc.stop(f)
			}
			if tc.limit {
				f.rec.Policy = supervise.Policy{Limit: 1, Window: 2 * time.Hour}
				if _, err := f.board.Log.Event(ctx, world.SourceSystem, task.ID, "restarted | reason: not running (test)"); err != nil {
					t.Fatal(err)
				}
			}
			f.rec.Remote = remote
			f.rec.Now = func() time.Time { return later }
			rep, err := f.rec.Tick(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.folder(t, task.ID); tc.want != "" && got != tc.want {
				h, _ := f.board.History(ctx, task.ID)
				t.Errorf("the task is in %s, want %s; %+v", got, tc.want, h)
			}
			if len(remote.stops) != tc.stops {
				t.Fatalf("Stop called %d times (%q), want %d", len(remote.stops), remote.stops, tc.stops)
			}
			if tc.stops == 1 && !strings.HasPrefix(remote.stops[0], task.ID+" r-0123 stale: no output and no log line for ") ||
				tc.stops == 1 && !strings.HasSuffix(remote.stops[0], "(on host b)") {
				t.Errorf("Stop(%q): want the task, its run and why, naming host b", remote.stops[0])
			}
			restarted := tc.want == board.Pending || tc.want == board.FailedBlocked
			if restarted != (len(rep.Restarted) == 1) {
				t.Errorf("restarted %+v, want it only when the task moved", rep.Restarted)
			}
			h, err := f.board.History(ctx, task.ID)
			if err != nil {
				t.Fatal(err)
			}
			level2 := 0
			for _, e := range h {
				if strings.HasSuffix(e.Output, "(Level 2)") || strings.HasPrefix(e.Output, "stopped by Level 2") {
					level2++
				}
			}
			if restarted != (level2 == 1) || level2 > 1 {
				t.Errorf("%d lines of Level 2's in %+v, want one only when it restarted the task", level2, h)
			}
			a := lastEntry(t, f, task.ID)
			switch tc.want {
			case board.Pending:
				if a.Status != world.StatusRetry || !strings.HasPrefix(a.Output, "continue: the run was stopped, stale") {
					t.Errorf("the log has %s %q, want a retry with continue", a.Status, a.Output)
				}
				var events []world.Entry
				f.board.Log.Select(ctx, world.Filter{IDs: []string{task.ID}, Kind: world.KindEvent}, func(r *world.Record) error {
					events = append(events, r.Entry)
					return nil
				})
				if got := supervise.Restarted(events)[task.ID]; len(got) != 1 || !strings.HasSuffix(events[len(events)-1].Output, "(on host b) (Level 2)") {
					t.Errorf("Level 1 counts %d restarts in %+v, want 1, Level 2's", len(got), events)
				}
			case board.FailedBlocked:
				if a.Status != world.StatusFailed || !strings.Contains(a.Need, "on host b") || !strings.Contains(a.Need, "cra answer "+task.ID) {
					t.Errorf("the log has %s need %q, want failed, naming host b and the answer to give", a.Status, a.Need)
				}
			case board.InProgress:
				if a.Status != world.StatusActive {
					t.Errorf("the log has %s, want the run left active", a.Status)
				}
			}
			if tc.warned != "" && (len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], tc.warned)) {
				t.Errorf("warnings %q, want one saying %q", rep.Warnings, tc.warned)
			}
			if tc.name != "output after now" {
				return
			}
			// The time after now counts from the first tick that saw it:
			// stale_after later, the run is stale.
			f.rec.Now = func() time.Time { return later.Add(20 * time.Minute) }
			if _, err := f.rec.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			if got := f.folder(t, task.ID); got != board.Pending || len(remote.stops) != 1 {
				t.Errorf("20 minutes on, the task is in %s after %d stops, want pending after one", got, len(remote.stops))
			}
		})
	}
}
