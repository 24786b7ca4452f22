package runner

import (
	"context"
	"github.com/cra-dev/cra/internal/board"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/supervise"
	"github.com/cra-dev/cra/internal/world"
)

// TestLevel1OverTheBoard: a Level 1 pass over the real board requeues a
// task whose agent died while no daemon watched (restarted, then retry,
// the file in pending/), and blocks it for a person past the start limit.
func TestLevel1OverTheBoard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	stateDir := t.TempDir()
	l, err := world.Open(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	b := board.New(board.NewFileStore(stateDir), l)
	task, err := b.Add(ctx, board.NewTask("fix the sum"))
	if err != nil {
		t.Fatal(err)
	}
	activate := func() {
		t.Helper()
		if _, err := l.Agent(ctx, world.StatusActive, task.ID, "run 1: sleep", ""); err != nil {
			t.Fatal(err)
		}
		_, from, err := b.Store.Get(ctx, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Store.Move(ctx, task.ID, from, board.InProgress); err != nil {
			t.Fatal(err)
		}
	}
	activate()
	// The agent, started by this test in a group of its own, then killed
	// by its pid as a crash would.
	cmd := exec.Command("sleep", "60")
	cmd.Env = []string{supervise.EnvTaskID + "=" + task.ID, supervise.EnvRunID + "=1", supervise.EnvStateDir + "=" + stateDir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	id, err := supervise.Of(ctx, cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	id.Run, id.TaskID = 1, task.ID
	path, err := supervise.RunFile(filepath.Join(stateDir, board.RunsDir), task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := id.Save(path); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Kill()
	cmd.Wait()

	pid := cmd.Process.Pid
	p := &supervise.Pass{Log: l, Board: b, StateDir: stateDir,
		Only: func(pr supervise.Process) bool { return pr.PID == pid }}
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if _, f, _ := b.Store.Get(ctx, task.ID); f != board.Pending {
		t.Fatalf("after its agent died: task in %s, want pending", f)
	}
	entries, err := b.History(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	last := entries[len(entries)-1]
	if last.Status != world.StatusRetry || !strings.HasPrefix(entries[len(entries)-2].Output, "restarted | reason: not running") {
		t.Errorf("log: %+v", entries[len(entries)-2:])
	}

	// Past the start limit a person is asked.
	for range 4 {
		if _, err := l.Event(ctx, world.SourceSystem, task.ID, "restarted | reason: not running (test)"); err != nil {
			t.Fatal(err)
		}
	}
	activate()
	p.Policy = supervise.Policy{Backoff: time.Nanosecond}
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if got, f, _ := b.Store.Get(ctx, task.ID); f != board.FailedBlocked || got.ProcessorAutoRequeue {
		t.Fatalf("past the start limit: task in %s (auto requeue %v), want failed-blocked", f, got.ProcessorAutoRequeue)
	}
}

// TestLevel1LeavesRunsStarting: a run still being started past the start
// grace (a worktree of a large repository, here a slow knowledge load) is
// not restarted, and its agent, once it starts, is not killed as an
// orphan: by the daemon's own Level 1, which holds the run (Pass.Held),
// nor by another process's, which shares none of its memory and reads
// the starter's claim in the run directory (a 'cra task run' in a
// terminal beside a daemon).
func TestLevel1LeavesRunsStarting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		held bool
		want string // the pass's wait
	}{
		{"held by the daemon's processor", true, "held by this process"},
		{"claimed by another process", false, "starting: process"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			p, s, _ := newTestProcessor(t, map[string]config.Agent{"work": {Command: "echo working"}}, 1)
			task := addWith(t, p.Board, "work", "work", nil)
			release := make(chan struct{})
			p.Knowledge = func(ctx context.Context, _ string) (string, error) { <-release; return "", nil }
			done := make(chan *Outcome, 1)
			go func() { o, _ := p.Run(ctx, task.ID); done <- o }()
			waitFor(t, func() bool { a, _, _ := p.Board.Log.Lookup(ctx, task.ID); return a.Status == world.StatusActive })
			pass := &supervise.Pass{Log: p.Board.Log, Board: p.Board, StateDir: p.StateDir,
				Now: func() time.Time { return time.Now().Add(time.Minute) }} // past the start grace
			if tc.held {
				pass.Held = p.Holds
			}
			actions, err := pass.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			close(release)
			o := <-done
			if len(actions) != 1 {
				t.Errorf("actions: got %v, want one wait", actions)
			} else if w, ok := actions[0].(supervise.Wait); !ok || !strings.Contains(w.Reason, tc.want) {
				t.Errorf("action: got %v, want a wait saying %q", actions[0], tc.want)
			}
			if o == nil || o.Folder != board.Completed {
				t.Errorf("the run: got %+v, want it completed", o)
			}
			if f := folderOn(t, s, task.ID); f != board.Completed {
				t.Errorf("the task is in %s, want completed", f)
			}
			for _, l := range logLines(t, p.Board, task.ID) {
				if strings.Contains(l, "restarted") {
					t.Errorf("a run still being started was restarted: %s", l)
				}
			}
		})
	}
}
