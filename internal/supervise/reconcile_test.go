package supervise

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/world"
)

func TestParseRun(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"run 3: cra", 3, true},
		{"run 12", 12, true},
		{"run 4 cra", 4, true},
		{"run 0: cra", 0, false},
		{"run -1: cra", 0, false},
		{"run x: cra", 0, false},
		{"run 3x: cra", 0, false},
		{"run : cra", 0, false},
		{"started", 0, false},
		{"", 0, false},
		{"run 99999999999999999999: cra", 0, false},
	} {
		got, ok := world.ParseRun(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("world.ParseRun(%q): got %d %v, want %d %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestActiveAgents(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	agents := []world.Agent{
		{ID: "T-1", Status: world.StatusStart, Since: t0},
		{ID: "T-2", Status: world.StatusActive, Output: "run 2: cra", Since: t0},
		{ID: "T-3", Status: world.StatusFinish, Output: "exit 0: done", Since: t0},
		{ID: "T-4", Status: world.StatusActive, Output: "by hand", Since: t0.Add(time.Second)},
	}
	want := []Active{{ID: "T-2", Run: 2, Since: t0}, {ID: "T-4", Run: 0, Since: t0.Add(time.Second)}}
	if diff := cmp.Diff(want, ActiveAgents(agents)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestReconcile(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	long := now.Add(-time.Hour) // an active entry well past the start grace
	proc := func(pid, pgid int, start int64, task string, run int) Process {
		return Process{PID: pid, PGID: pgid, StartTime: start, TaskID: task, Run: run}
	}
	ident := func(pid int, start int64, task string, run int) Identity {
		return Identity{PID: pid, StartTime: start, TaskID: task, Run: run}
	}
	claim := func(task string, run int) Identity {
		return Identity{TaskID: task, Run: run, StarterPID: 77, StarterStart: 9}
	}
	need := "find why its agent keeps dying (its output is in .clean_room/runs/T-1/), fix the cause, then answer it to retry: cra answer T-1 '…'"
	for _, tc := range []struct {
		name string
		in   Input
		want []Action
	}{
		{name: "nothing", in: Input{}, want: []Action{}},
		{name: "a live run is left alone",
			in: Input{Active: []Active{{ID: "T-1", Run: 2, Since: long}},
				Runs:  map[string]Identity{"T-1": ident(200, 5, "T-1", 2)},
				Procs: []Process{proc(200, 200, 5, "T-1", 2), proc(201, 200, 6, "T-1", 2)}},
			want: []Action{}},
		{name: "an unknown task's group is killed through its leader",
			in:   Input{Procs: []Process{proc(101, 100, 7, "T-x", 1), proc(100, 100, 6, "T-x", 1)}},
			want: []Action{Kill{PID: 100, StartTime: 6, PGID: 100, TaskID: "T-x", Run: 1, Reason: "orphan", Detail: "task T-x is not active in the log"}}},
		{name: "in a group whose leader is untagged, each orphan is killed alone",
			in: Input{Procs: []Process{proc(502, 500, 8, "T-x", 1), proc(501, 500, 7, "T-x", 1)}},
			want: []Action{Kill{PID: 501, StartTime: 7, TaskID: "T-x", Run: 1, Reason: "orphan", Detail: "task T-x is not active in the log"},
				Kill{PID: 502, StartTime: 8, TaskID: "T-x", Run: 1, Reason: "orphan", Detail: "task T-x is not active in the log"}}},
		{name: "a run this process holds is left alone while it starts",
			in: Input{Active: []Active{{ID: "T-1", Run: 2, Since: long}}, Held: map[string]bool{"T-1": true},
				Procs: []Process{proc(200, 200, 5, "T-1", 2)}, Now: now},
			want: []Action{Wait{ID: "T-1", Until: now, Reason: "run 2 is held by this process, which is starting it or recording how it ended"}}},
		{name: "a run this process holds is left alone while it is recorded",
			in: Input{Active: []Active{{ID: "T-1", Run: 2, Since: long}}, Held: map[string]bool{"T-1": true},
				Runs: map[string]Identity{"T-1": ident(200, 5, "T-1", 2)}, StarterAlive: map[string]bool{"T-1": true},
				GoneSince: map[string]time.Time{"T-1": long}, Now: now},
			want: []Action{Wait{ID: "T-1", Until: now, Reason: "run 2 is held by this process, which is starting it or recording how it ended"}}},
		{name: "a held task's stale run is still killed",
			in: Input{Active: []Active{{ID: "T-1", Run: 2, Since: long}}, Held: map[string]bool{"T-1": true},
				Procs: []Process{proc(300, 300, 4, "T-1", 1)}, Now: now},
			want: []Action{Kill{PID: 300, StartTime: 4, PGID: 300, TaskID: "T-1", Run: 1, Reason: "orphan", Detail: "run 1 is stale: the log's active run is 2"},
				Wait{ID: "T-1", Until: now, Reason: "run 2 is held by this process, which is starting it or recording how it ended"}}},
		{name: "a run another live process claimed is left to it while it starts, its agent too",
			in: Input{Active: []Active{{ID: "T-1", Run: 2, Since: long}}, Claims: map[string]Identity{"T-1": claim("T-1", 2)},
				Procs: []Process{proc(200, 200, 5, "T-1", 2)}, Now: now},
			want: []Action{Wait{ID: "T-1", Until: now, Reason: "run 2 is starting: process 77 claimed it and is alive"}}},
		{name: "a claim of an earlier run is no claim of the log's",
			in:   Input{Active: []Active{{ID: "T-1", Run: 2, Since: long}}, Claims: map[string]Identity{"T-1": claim("T-1", 1)}, Now: now},
			want: []Action{Restart{ID: "T-1", Run: 2, Reason: "not running", Detail: "run 2 has no recorded process"}}},
		{name: "once the run's identity is recorded, its claim says nothing",
			in: Input{Active: []Active{{ID: "T-1", Run: 2, Since: long}}, Claims: map[string]Identity{"T-1": claim("T-1", 2)},
				Runs: map[string]Identity{"T-1": ident(200, 5, "T-1", 2)}, Now: now},
			want: []Action{Restart{ID: "T-1", Run: 2, Reason: "not running", Detail: "run 2, pid 200, has exited"}}},
		{name: "a stale run is killed, the active one kept",
			in: Input{Active: []Active{{ID: "T-1", Run: 2, Since: long}},
				Runs:  map[string]Identity{"T-1": ident(200, 5, "T-1", 2)},
				Procs: []Process{proc(200, 200, 5, "T-1", 2), proc(300, 300, 4, "T-1", 1)}},
			want: []Action{Kill{PID: 300, StartTime: 4, PGID: 300, TaskID: "T-1", Run: 1, Reason: "orphan", Detail: "run 1 is stale: the log's active run is 2"}}},
		{name: "a process without a run number is stale",
			in: Input{Active: []Active{{ID: "T-1", Run: 2, Since: long}},
				Runs:  map[string]Identity{"T-1": ident(200, 5, "T-1", 2)},
				Procs: []Process{proc(200, 200, 5, "T-1", 2), proc(300, 300, 4, "T-1", 0)}},
			want: []Action{Kill{PID: 300, StartTime: 4, PGID: 300, TaskID: "T-1", Run: 0, Reason: "orphan", Detail: "run 0 is stale: the log's active run is 2"}}},
		{name: "an orphan in a group with a live run is killed alone",
			in: Input{Active: []Active{{ID: "T-1", Run: 2, Since: long}},
				Runs:  map[string]Identity{"T-1": ident(400, 5, "T-1", 2)},
				Procs: []Process{proc(400, 400, 5, "T-1", 2), proc(401, 400, 6, "T-x", 1)}},
			want: []Action{Kill{PID: 401, StartTime: 6, TaskID: "T-x", Run: 1, Reason: "orphan", Detail: "task T-x is not active in the log"}}},
		{name: "a process in init's group is killed alone",
			in:   Input{Procs: []Process{proc(700, 1, 5, "T-x", 1)}},
			want: []Action{Kill{PID: 700, StartTime: 5, TaskID: "T-x", Run: 1, Reason: "orphan", Detail: "task T-x is not active in the log"}}},
		{name: "pid reused: the recorded run is not live, the process holding its pid is not named",
			in: Input{Active: []Active{{ID: "T-1", Run: 2, Since: long}, {ID: "T-2", Run: 1, Since: long}},
				Runs: map[string]Identity{"T-1": ident(200, 5, "T-1", 2), "T-2": ident(200, 9, "T-2", 1)},
				// pid 200 now belongs to T-2's live run, started later.
				Procs: []Process{proc(200, 200, 9, "T-2", 1)},
				Now:   now},
			want: []Action{Restart{ID: "T-1", Run: 2, Reason: "not running", Detail: "run 2, pid 200, has exited"}}},
		{name: "run gone, its starter alive: left to it to log the finish",
			in: Input{Active: []Active{{ID: "T-1", Run: 2, Since: long}},
				Runs: map[string]Identity{"T-1": ident(200, 5, "T-1", 2)}, StarterAlive: map[string]bool{"T-1": true}, Now: now},
			want: []Action{Wait{ID: "T-1", Until: now.Add(30 * time.Second), Finishing: true,
				Reason: "run 2 has ended; the process that started it is alive and logs how"}}},
		{name: "run gone, its starter alive, first found 10 s ago: still waits from then",
			in: Input{Active: []Active{{ID: "T-1", Run: 2, Since: long}},
				Runs: map[string]Identity{"T-1": ident(200, 5, "T-1", 2)}, StarterAlive: map[string]bool{"T-1": true},
				GoneSince: map[string]time.Time{"T-1": now.Add(-10 * time.Second)}, Now: now},
			want: []Action{Wait{ID: "T-1", Until: now.Add(20 * time.Second), Finishing: true,
				Reason: "run 2 has ended; the process that started it is alive and logs how"}}},
		{name: "run gone, its starter alive but silent past the finish grace: restart",
			in: Input{Active: []Active{{ID: "T-1", Run: 2, Since: long}},
				Runs: map[string]Identity{"T-1": ident(200, 5, "T-1", 2)}, StarterAlive: map[string]bool{"T-1": true},
				GoneSince: map[string]time.Time{"T-1": now.Add(-31 * time.Second)}, Now: now},
			want: []Action{Restart{ID: "T-1", Run: 2, Reason: "not running", Detail: "run 2, pid 200, has exited"}}},
		{name: "no identity past the grace: restart",
			in:   Input{Active: []Active{{ID: "T-1", Run: 2, Since: long}}, Now: now},
			want: []Action{Restart{ID: "T-1", Run: 2, Reason: "not running", Detail: "run 2 has no recorded process"}}},
		{name: "no identity within the grace: wait, and its processes are spared",
			in: Input{Active: []Active{{ID: "T-1", Run: 2, Since: now.Add(-5 * time.Second)}},
				Procs: []Process{proc(200, 200, 5, "T-1", 2)}, Now: now},
			want: []Action{Wait{ID: "T-1", Until: now.Add(10 * time.Second), Reason: "run 2 has no recorded process yet and may still be starting"}}},
		{name: "a dead run within the grace is restarted: the grace is for recording",
			in: Input{Active: []Active{{ID: "T-1", Run: 2, Since: now.Add(-time.Second)}},
				Runs: map[string]Identity{"T-1": ident(200, 5, "T-1", 2)}, Now: now},
			want: []Action{Restart{ID: "T-1", Run: 2, Reason: "not running", Detail: "run 2, pid 200, has exited"}}},
		{name: "the recorded run is older than the active one",
			in: Input{Active: []Active{{ID: "T-1", Run: 3, Since: long}},
				Runs:  map[string]Identity{"T-1": ident(200, 5, "T-1", 2)},
				Procs: []Process{proc(200, 200, 5, "T-1", 2)}, Now: now},
			want: []Action{
				Kill{PID: 200, StartTime: 5, PGID: 200, TaskID: "T-1", Run: 2, Reason: "orphan", Detail: "run 2 is stale: the log's active run is 3"},
				Restart{ID: "T-1", Run: 3, Reason: "not running", Detail: "the recorded run is 2, not the active run 3"}}},
		{name: "a dead run's leftover child is killed before the restart",
			in: Input{Active: []Active{{ID: "T-1", Run: 2, Since: long}},
				Runs:  map[string]Identity{"T-1": ident(200, 5, "T-1", 2)},
				Procs: []Process{proc(201, 200, 6, "T-1", 2)}, Now: now},
			want: []Action{
				Kill{PID: 201, StartTime: 6, PGID: 200, TaskID: "T-1", Run: 2, Reason: "orphan", Detail: "run 2's recorded process is gone"},
				Restart{ID: "T-1", Run: 2, Reason: "not running", Detail: "run 2, pid 200, has exited"}}},
		{name: "an unknown active run number makes no run stale",
			in: Input{Active: []Active{{ID: "T-1", Run: 0, Since: long}},
				Runs:  map[string]Identity{"T-1": ident(600, 5, "T-1", 3)},
				Procs: []Process{proc(600, 600, 5, "T-1", 3), proc(601, 601, 4, "T-1", 1)}},
			want: []Action{}},
		{name: "backing off",
			in: Input{Active: []Active{{ID: "T-1", Run: 2, Since: long}}, Now: now,
				Restarts: map[string][]time.Time{"T-1": {now.Add(-5 * time.Second)}}},
			want: []Action{Wait{ID: "T-1", Until: now.Add(5 * time.Second), Reason: "not running; backing off: restarted 1 times in the last 10m0s"}}},
		{name: "past the start limit: fail",
			in: Input{Active: []Active{{ID: "T-1", Run: 6, Since: long}}, Now: now,
				Restarts: map[string][]time.Time{"T-1": {
					now.Add(-5 * time.Minute), now.Add(-4 * time.Minute), now.Add(-3 * time.Minute),
					now.Add(-2 * time.Minute), now.Add(-time.Minute)}}},
			want: []Action{Fail{ID: "T-1", Run: 6, Reason: "not running: start limit reached (restarted 5 times in the last 10m0s)", Need: need}}},
		{name: "kills first by pid, then the agents in log order",
			in: Input{Active: []Active{{ID: "T-2", Run: 1, Since: long}, {ID: "T-1", Run: 1, Since: long}}, Now: now,
				Procs: []Process{proc(900, 900, 1, "T-9", 1), proc(800, 800, 1, "T-8", 1)}},
			want: []Action{
				Kill{PID: 800, StartTime: 1, PGID: 800, TaskID: "T-8", Run: 1, Reason: "orphan", Detail: "task T-8 is not active in the log"},
				Kill{PID: 900, StartTime: 1, PGID: 900, TaskID: "T-9", Run: 1, Reason: "orphan", Detail: "task T-9 is not active in the log"},
				Restart{ID: "T-2", Run: 1, Reason: "not running", Detail: "run 1 has no recorded process"},
				Restart{ID: "T-1", Run: 1, Reason: "not running", Detail: "run 1 has no recorded process"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Reconcile(tc.in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestActionStrings(t *testing.T) {
	k := Kill{PID: 321, PGID: 321, TaskID: "T-x", Run: 1, Reason: "orphan", Detail: "task T-x is not active in the log"}
	if s := k.String(); !strings.Contains(s, "321") || !strings.Contains(s, "orphan") {
		t.Errorf("got %q, want the pid and the reason", s)
	}
	k.PGID = 0
	if got, want := k.String(), "kill process 321 of task T-x run 1: orphan (task T-x is not active in the log)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestRestarted(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	entries := []world.Entry{
		{Time: t0, Kind: world.KindEvent, Source: world.SourceSystem, ID: "T-1", Output: "restarted | reason: not running (run 1 has no recorded process)"},
		{Time: t0.Add(time.Second), Kind: world.KindEvent, Source: world.SourceSystem, ID: "4242", Output: "killed | reason: orphan (x)"},
		{Time: t0.Add(2 * time.Second), Kind: world.KindEvent, Source: world.SourceUser, ID: "T-1", Output: "restarted it by hand"},
		{Time: t0.Add(3 * time.Second), Kind: world.KindAgent, Status: world.StatusActive, ID: "T-1", Output: "run 2: cra"},
		{Time: t0.Add(4 * time.Second), Kind: world.KindEvent, Source: world.SourceSystem, ID: "T-1", Output: "restarted | reason: not running"},
	}
	want := map[string][]time.Time{"T-1": {t0, t0.Add(4 * time.Second)}}
	if diff := cmp.Diff(want, Restarted(entries)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
