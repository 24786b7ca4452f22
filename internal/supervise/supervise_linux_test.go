package supervise

import (
	"bytes"
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The acceptance of issue 13 item 6, with real processes. Every pass sees
// only the processes its test started (scanOwn), so no test can touch
// another's, or the machine's.

// An orphan carrying an unknown CRA_TASK_ID is found and killed, its
// group with it, and the kill is logged naming its pid.
func TestOrphanIsKilled(t *testing.T) {
	ctx := context.Background()
	task := uniqueTask(t)
	c := startChild(t, tagEnv(task, 1)...)
	actions := Reconcile(Input{Procs: scanOwn(t, c), Now: time.Now()})
	want := []Action{Kill{PID: c.pid, StartTime: c.start, PGID: c.pid, TaskID: task, Run: 1,
		Reason: "orphan", Detail: "task " + task + " is not active in the log"}}
	if diff := cmp.Diff(want, actions); diff != "" {
		t.Fatalf("actions (-want +got):\n%s", diff)
	}
	var r recorder
	e := r.executor()
	e.Stop = nil // the real one
	if err := e.Apply(ctx, actions); err != nil {
		t.Fatal(err)
	}
	if leader, kid := c.alive(t); leader || kid {
		t.Errorf("leader alive %v, its child alive %v; want both dead", leader, kid)
	}
	wantLog := []string{"log [" + strconv.Itoa(c.pid) + "] killed | reason: orphan (task " + task + " is not active in the log)"}
	if diff := cmp.Diff(wantLog, r.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if got := scanOwn(t, c); len(got) != 0 {
		t.Errorf("after the kill the scan still finds %+v", got)
	}
}

// A process that took a dead run's pid (its start time differs) is not
// the run: the run is not alive, and the process is never signalled,
// even by a kill that names the recorded identity.
func TestReusedPidIsNotTheRun(t *testing.T) {
	ctx := context.Background()
	task := uniqueTask(t)
	stranger := startChild(t) // untagged, as a process that reuses a pid is
	rec := Identity{PID: stranger.pid, StartTime: stranger.start - 1, Run: 1, TaskID: task}
	path, err := RunFile(t.TempDir(), task)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Save(path); err != nil {
		t.Fatal(err)
	}
	if rec, err = LoadIdentity(path); err != nil {
		t.Fatal(err)
	}
	if ok, err := rec.Alive(ctx); ok || err != nil {
		t.Fatalf("Alive: got %v %v, want false", ok, err)
	}
	actions := Reconcile(Input{
		Active: []Active{{ID: task, Run: 1, Since: time.Now().Add(-time.Hour)}},
		Runs:   map[string]Identity{task: rec},
		Procs:  scanOwn(t, stranger),
		Now:    time.Now(),
	})
	want := []Action{Restart{ID: task, Run: 1, Reason: "not running", Detail: "run 1, pid " + strconv.Itoa(stranger.pid) + ", has exited"}}
	if diff := cmp.Diff(want, actions); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	// Even told to kill the recorded run, the executor spares the stranger.
	var r recorder
	e := r.executor()
	e.Stop = nil
	if err := e.Apply(ctx, []Action{Kill{PID: rec.PID, StartTime: rec.StartTime, PGID: rec.PID, TaskID: task, Run: 1, Reason: "orphan"}}); err != nil {
		t.Fatal(err)
	}
	if len(r.calls) != 0 {
		t.Errorf("calls %v, want none: nothing was killed", r.calls)
	}
	if leader, kid := stranger.alive(t); !leader || !kid {
		t.Errorf("stranger alive %v, its child alive %v; want both alive", leader, kid)
	}
}

// A dry run says what it would do, naming the pid, and kills nothing.
func TestDryRunKillsNothing(t *testing.T) {
	ctx := context.Background()
	c := startChild(t, tagEnv(uniqueTask(t), 1)...)
	actions := Reconcile(Input{Procs: scanOwn(t, c), Now: time.Now()})
	var out bytes.Buffer
	e := &Executor{DryRun: true, Out: &out,
		Log: func(context.Context, string, string) error { t.Error("a dry run logged"); return nil }}
	if err := e.Apply(ctx, actions); err != nil {
		t.Fatal(err)
	}
	if want := "would kill process group " + strconv.Itoa(c.pid) + " (pid " + strconv.Itoa(c.pid) + ")"; !strings.HasPrefix(out.String(), want) {
		t.Errorf("got %q, want it to start %q", out.String(), want)
	}
	if leader, kid := c.alive(t); !leader || !kid {
		t.Errorf("leader alive %v, its child alive %v; want both alive", leader, kid)
	}
}

// An active agent whose run died (while the daemon was down, say) is
// restarted, logged first; past the start limit it is failed.
func TestDeadRunIsRestartedThenFailed(t *testing.T) {
	ctx := context.Background()
	task := uniqueTask(t)
	c := startChild(t, tagEnv(task, 2)...)
	rec, err := Of(ctx, c.pid)
	if err != nil {
		t.Fatal(err)
	}
	rec.Run, rec.TaskID = 2, task
	path, err := RunFile(filepath.Join(t.TempDir(), "runs"), task)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Save(path); err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadIdentity(path)
	if err != nil {
		t.Fatal(err)
	}
	in := Input{
		Active: []Active{{ID: task, Run: 2, Since: time.Now().Add(-time.Hour)}},
		Runs:   map[string]Identity{task: loaded},
		Procs:  scanOwn(t, c),
		Now:    time.Now(),
	}
	if ok, err := loaded.Alive(ctx); !ok || err != nil {
		t.Fatalf("Alive of the live run: got %v %v, want true", ok, err)
	}
	if got := Reconcile(in); len(got) != 0 {
		t.Fatalf("a live run: got actions %v, want none", got)
	}

	c.exit(t)
	if ok, err := loaded.Alive(ctx); ok || err != nil {
		t.Fatalf("Alive of the dead run: got %v %v, want false", ok, err)
	}
	in.Procs, in.Now = scanOwn(t, c), time.Now()
	var r recorder
	if err := r.executor().Apply(ctx, Reconcile(in)); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"log [" + task + "] restarted | reason: not running (run 2, pid " + strconv.Itoa(c.pid) + ", has exited)",
		"restart " + task,
	}
	if diff := cmp.Diff(want, r.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}

	// Five restarts within the window: the next pass fails it.
	for i := range DefaultLimit {
		in.Restarts = map[string][]time.Time{task: append(in.Restarts[task], in.Now.Add(-time.Duration(i+1)*time.Minute))}
	}
	r.calls = nil
	if err := r.executor().Apply(ctx, Reconcile(in)); err != nil {
		t.Fatal(err)
	}
	if len(r.calls) != 1 || !strings.HasPrefix(r.calls[0], "fail "+task+" | need: ") || !strings.Contains(r.calls[0], "cra answer "+task+" ") {
		t.Errorf("calls %q, want one fail whose need names 'cra answer %s'", r.calls, task)
	}
}
