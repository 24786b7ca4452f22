package supervise

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/world"
)

// fakeBoard is a board of a few task ids that writes its lifecycle
// entries to the real world log, as board.Board does (which imports this
// package, so its own tests run a Pass over the real thing).
type fakeBoard struct {
	log    *world.Log
	tasks  map[string]string // id → folder
	called []string
}

var _ Board = (*fakeBoard)(nil)

func (b *fakeBoard) Has(_ context.Context, id string) (bool, error) {
	_, ok := b.tasks[id]
	return ok, nil
}

func (b *fakeBoard) RestartRun(ctx context.Context, id string, run int, event, output string) error {
	b.called = append(b.called, "requeue "+id)
	b.tasks[id] = "pending"
	if _, err := b.log.Event(ctx, world.SourceSystem, id, event); err != nil {
		return err
	}
	_, err := b.log.Agent(ctx, world.StatusRetry, id, output, "")
	return err
}

func (b *fakeBoard) RepairFolders(context.Context, func(string) bool) ([]string, error) {
	return nil, nil
}

func (b *fakeBoard) BlockRun(ctx context.Context, id string, run int, output, need string) error {
	b.called = append(b.called, "block "+id)
	b.tasks[id] = "failed-blocked"
	_, err := b.log.Agent(ctx, world.StatusFailed, id, output, need)
	return err
}

// passFixture is a repository state directory with a world log and a
// board.
func passFixture(t *testing.T) (string, *world.Log, *fakeBoard) {
	t.Helper()
	stateDir := t.TempDir()
	l, err := world.Open(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	return stateDir, l, &fakeBoard{log: l, tasks: map[string]string{}}
}

func onlyChildren(cs ...*child) func(Process) bool {
	own := map[int]bool{}
	for _, c := range cs {
		own[c.pid], own[c.kid] = true, true
	}
	return func(p Process) bool { return own[p.PID] }
}

func logText(t *testing.T, l *world.Log) string {
	t.Helper()
	var b strings.Builder
	err := l.Select(context.Background(), world.Filter{}, func(r *world.Record) error {
		b.Write(r.Raw)
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestPassKillsOnlyThisRepositorysOrphans: a dry run names the orphan's pid
// and kills nothing; a real pass kills it and logs the kill; a process
// tagged for another repository is never touched.
func TestPassKillsOnlyThisRepositorysOrphans(t *testing.T) {
	ctx := context.Background()
	stateDir, l, b := passFixture(t)
	orphan := startChild(t, append(tagEnv(uniqueTask(t), 1), EnvStateDir+"="+stateDir)...)
	other := startChild(t, append(tagEnv(uniqueTask(t), 1), EnvStateDir+"="+t.TempDir())...)
	var out bytes.Buffer
	p := &Pass{Log: l, Board: b, StateDir: stateDir, DryRun: true, Out: &out, Only: onlyChildren(orphan, other)}
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "would kill process group "+strconv.Itoa(orphan.pid)) || strings.Contains(out.String(), strconv.Itoa(other.pid)) {
		t.Errorf("dry run said %q, want the orphan's pid and not the other repository's", out.String())
	}
	if leader, kid := orphan.alive(t); !leader || !kid {
		t.Fatal("a dry run killed the orphan")
	}
	p.DryRun = false
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if leader, kid := orphan.alive(t); leader || kid {
		t.Errorf("orphan alive after the pass: leader %v, child %v", leader, kid)
	}
	if leader, kid := other.alive(t); !leader || !kid {
		t.Error("the other repository's agent was killed")
	}
	if want := "[event:system][" + strconv.Itoa(orphan.pid) + "] killed | reason: orphan"; !strings.Contains(logText(t, l), want) {
		t.Errorf("log lacks %q:\n%s", want, logText(t, l))
	}
}

// TestPassRestartsThenBlocks: a board task whose run died goes back to
// pending, logged restarted then retry; past the start limit it is
// blocked for a person. A run outside the board is failed, saying why.
func TestPassRestartsThenBlocks(t *testing.T) {
	ctx := context.Background()
	stateDir, l, b := passFixture(t)
	task := struct{ ID string }{uniqueTask(t)}
	b.tasks[task.ID] = "pending"
	if _, err := l.Agent(ctx, world.StatusStart, task.ID, "fix the sum", ""); err != nil {
		t.Fatal(err)
	}
	run := startChild(t, append(tagEnv(task.ID, 1), EnvStateDir+"="+stateDir)...)
	path, err := RunFile(filepath.Join(stateDir, "runs"), task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := (Identity{PID: run.pid, StartTime: run.start, Run: 1, TaskID: task.ID}).Save(path); err != nil {
		t.Fatal(err)
	}
	active := func() {
		t.Helper()
		if _, err := l.Agent(ctx, world.StatusActive, task.ID, "run 1: echo", ""); err != nil {
			t.Fatal(err)
		}
		b.tasks[task.ID] = "in-progress"
	}
	active()
	p := &Pass{Log: l, Board: b, StateDir: stateDir, Only: onlyChildren(run), Policy: Policy{StartGrace: time.Millisecond}}
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if f := b.tasks[task.ID]; f != "in-progress" {
		t.Fatalf("a live run was disturbed: task in %s", f)
	}
	run.exit(t)
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if f := b.tasks[task.ID]; f != "pending" {
		t.Fatalf("after the run died: task in %s, want pending", f)
	}
	text := logText(t, l)
	if i, j := strings.Index(text, "]["+task.ID+"] restarted | reason: not running"), strings.Index(text, "[agent:retry]["+task.ID+"] restarted by Level 1"); i < 0 || j < i {
		t.Fatalf("want restarted then retry in the log:\n%s", text)
	}

	// Four more restarts in the window: the fifth start is past the limit.
	for range 4 {
		if _, err := l.Event(ctx, world.SourceSystem, task.ID, "restarted | reason: not running (test)"); err != nil {
			t.Fatal(err)
		}
	}
	active()
	p.Policy.Backoff = time.Nanosecond
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if f := b.tasks[task.ID]; f != "failed-blocked" {
		t.Fatalf("past the start limit: task in %s, want failed-blocked", f)
	}

	// An agent that is no board task (a cra solve) cannot be restarted.
	if err := l.Begin(ctx, "solve-1", "cra solve: fix", "tests pass"); err != nil {
		t.Fatal(err)
	}
	p.Now = func() time.Time { return time.Now().Add(time.Minute) } // past its start grace
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	a, _, err := l.Lookup(ctx, "solve-1")
	if err != nil || a.Status != world.StatusFailed || !strings.Contains(a.Need, "not a board task") {
		t.Errorf("solve-1: %+v, %v; want failed, saying it is not a board task", a, err)
	}
}

// TestPassTakesOver: a daemon starting after one that died stops the live
// run of an active task (nothing waits for it), logs the kill, and
// restarts the task in the same pass.
func TestPassTakesOver(t *testing.T) {
	ctx := context.Background()
	stateDir, l, b := passFixture(t)
	id := uniqueTask(t)
	b.tasks[id] = "in-progress"
	if _, err := l.Agent(ctx, world.StatusStart, id, "fix", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Agent(ctx, world.StatusActive, id, "run 1: echo", ""); err != nil {
		t.Fatal(err)
	}
	run := startChild(t, append(tagEnv(id, 1), EnvStateDir+"="+stateDir)...)
	path, err := RunFile(filepath.Join(stateDir, "runs"), id)
	if err != nil {
		t.Fatal(err)
	}
	if err := (Identity{PID: run.pid, StartTime: run.start, Run: 1, TaskID: id}).Save(path); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	p := &Pass{Log: l, Board: b, StateDir: stateDir, Out: &out, Only: onlyChildren(run), TakeOver: true}
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if leader, kid := run.alive(t); leader || kid {
		t.Errorf("the old daemon's run is alive: leader %v, child %v", leader, kid)
	}
	if b.tasks[id] != "pending" {
		t.Errorf("task in %s, want pending (restarted)", b.tasks[id])
	}
	if text := logText(t, l); !strings.Contains(text, "["+strconv.Itoa(run.pid)+"] killed | reason: taken over") {
		t.Errorf("the take-over is not logged:\n%s", text)
	}

	// A run whose starter is alive ('cra task run' in another terminal)
	// is its starter's, and is left alone.
	id2 := uniqueTask(t)
	b.tasks[id2] = "in-progress"
	if _, err := l.Agent(ctx, world.StatusStart, id2, "fix", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Agent(ctx, world.StatusActive, id2, "run 1: echo", ""); err != nil {
		t.Fatal(err)
	}
	kept := startChild(t, append(tagEnv(id2, 1), EnvStateDir+"="+stateDir)...)
	self, err := Self(ctx)
	if err != nil {
		t.Fatal(err)
	}
	path2, _ := RunFile(filepath.Join(stateDir, "runs"), id2)
	if err := (Identity{PID: kept.pid, StartTime: kept.start, Run: 1, TaskID: id2, StarterPID: self.PID, StarterStart: self.StartTime}).Save(path2); err != nil {
		t.Fatal(err)
	}
	p.Only = onlyChildren(kept)
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if leader, _ := kept.alive(t); !leader || b.tasks[id2] != "in-progress" {
		t.Errorf("a run whose starter waits for it was taken over: alive %v, task in %s", leader, b.tasks[id2])
	}
}

// TestPassLeavesAnEndedRunToItsLiveStarter: a run whose process exited
// while the process that started it (here this test, alive) has not yet
// logged its finish is not restarted; the pass that keeps finding it so
// restarts it once FinishGrace has passed since it first did.
func TestPassLeavesAnEndedRunToItsLiveStarter(t *testing.T) {
	ctx := context.Background()
	stateDir, l, b := passFixture(t)
	id := uniqueTask(t)
	b.tasks[id] = "in-progress"
	if _, err := l.Agent(ctx, world.StatusStart, id, "fix the sum", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Agent(ctx, world.StatusActive, id, "run 1: echo", ""); err != nil {
		t.Fatal(err)
	}
	run := startChild(t, append(tagEnv(id, 1), EnvStateDir+"="+stateDir)...)
	self, err := Self(ctx)
	if err != nil {
		t.Fatal(err)
	}
	path, err := RunFile(filepath.Join(stateDir, "runs"), id)
	if err != nil {
		t.Fatal(err)
	}
	if err := (Identity{PID: run.pid, StartTime: run.start, Run: 1, TaskID: id, StarterPID: self.PID, StarterStart: self.StartTime}).Save(path); err != nil {
		t.Fatal(err)
	}
	run.exit(t)

	now := time.Now()
	var out bytes.Buffer
	p := &Pass{Log: l, Board: b, StateDir: stateDir, Only: onlyChildren(run), Out: &out,
		Policy: Policy{StartGrace: time.Millisecond, FinishGrace: 30 * time.Second},
		Now:    func() time.Time { return now }}
	actions, err := p.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(actions) != 1 || !actions[0].(Wait).Finishing || b.tasks[id] != "in-progress" || len(b.called) != 0 {
		t.Fatalf("first pass: actions %v, task in %s, board called %v; want one finishing wait and nothing done", actions, b.tasks[id], b.called)
	}
	now = now.Add(20 * time.Second) // within the grace since the first sighting
	if actions, err = p.Run(ctx); err != nil || len(actions) != 1 || !actions[0].(Wait).Finishing || len(b.called) != 0 {
		t.Fatalf("20 s on: actions %v, %v, board called %v; want the wait to go on", actions, err, b.called)
	}
	now = now.Add(11 * time.Second) // 31 s after the first sighting: the starter had its chance
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if b.tasks[id] != "pending" || len(b.called) != 1 || b.called[0] != "requeue "+id {
		t.Errorf("31 s on: task in %s, board called %v; want one restart", b.tasks[id], b.called)
	}
}

// TestPassClaims: a run whose starter claimed it and is alive waits for
// it, past the start grace; a claim whose starter died (a 'cra task run'
// killed before its agent started) is restarted; a malformed claim is
// reported and counts as none.
func TestPassClaims(t *testing.T) {
	ctx := context.Background()
	stateDir, l, b := passFixture(t)
	runs := filepath.Join(stateDir, "runs")
	starter := startChild(t)
	self, err := Self(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids := [3]string{}
	for i := range ids {
		ids[i] = uniqueTask(t)
		b.tasks[ids[i]] = "in-progress"
		if _, err := l.Agent(ctx, world.StatusStart, ids[i], "fix the sum", ""); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Agent(ctx, world.StatusActive, ids[i], "run 1: echo", ""); err != nil {
			t.Fatal(err)
		}
	}
	claims := []Identity{
		{TaskID: ids[0], Run: 1, StarterPID: self.PID, StarterStart: self.StartTime},
		{TaskID: ids[1], Run: 1, StarterPID: starter.pid, StarterStart: starter.start},
	}
	for _, c := range claims {
		path, err := ClaimFile(runs, c.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Save(path); err != nil {
			t.Fatal(err)
		}
	}
	bad, _ := ClaimFile(runs, ids[2])
	if err := os.MkdirAll(filepath.Dir(bad), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(`{"task_id":`), 0o644); err != nil {
		t.Fatal(err)
	}
	starter.exit(t)

	var out bytes.Buffer
	p := &Pass{Log: l, Board: b, StateDir: stateDir, Only: onlyChildren(starter), Out: &out,
		Now: func() time.Time { return time.Now().Add(time.Minute) }} // past the start grace
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if b.tasks[ids[0]] != "in-progress" {
		t.Errorf("a run its live starter claimed: task in %s, want it left in-progress", b.tasks[ids[0]])
	}
	for _, id := range ids[1:] {
		if b.tasks[id] != "pending" {
			t.Errorf("task %s: in %s, want it restarted", id, b.tasks[id])
		}
	}
	if !strings.Contains(out.String(), "load run identity "+bad+": malformed") {
		t.Errorf("output: got %q, want a warning naming the malformed claim", out.String())
	}
}
