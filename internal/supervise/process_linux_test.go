package supervise

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// child is a process group a test started: sh as the leader, with a sleep
// of its own, both carrying the tags given.
type child struct {
	cmd   *exec.Cmd
	pid   int   // the leader, sh
	start int64 // the leader's start time
	kid   int   // sh's sleep
	kidAt int64 // the sleep's start time
}

// startChild starts `sh -c 'sleep 60 & echo $! >FILE; wait'` in a new
// process group, with env added to an environment cleared of any
// CRA_ tags the test itself inherited. t.Cleanup ends its group, the
// only one the test made, and reaps it.
func startChild(t *testing.T, env ...string) *child {
	t.Helper()
	return startScript(t, "", env...)
}

// startScript is startChild with prefix run first in the shell, e.g. a
// trap.
func startScript(t *testing.T, prefix string, env ...string) *child {
	t.Helper()
	ready := filepath.Join(t.TempDir(), "kid")
	cmd := exec.Command("sh", "-c", prefix+`sleep 60 & echo $! >"$1.tmp" && mv "$1.tmp" "$1"; wait`, "sh", ready)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, EnvTaskID+"=") && !strings.HasPrefix(kv, EnvRunID+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, pid: cmd.Process.Pid}
	t.Cleanup(func() {
		syscall.Kill(-c.pid, syscall.SIGKILL) // the group this test made
		cmd.Wait()
	})
	ctx := context.Background()
	id, err := Of(ctx, c.pid)
	if err != nil {
		t.Fatal(err)
	}
	c.start = id.StartTime
	for c.kid == 0 { // bounded by the test's own timeout
		data, err := os.ReadFile(ready)
		if err == nil {
			if c.kid, err = strconv.Atoi(strings.TrimSpace(string(data))); err != nil {
				t.Fatalf("sleep's pid: %v", err)
			}
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	kid, err := Of(ctx, c.kid)
	if err != nil {
		t.Fatal(err)
	}
	c.kidAt = kid.StartTime
	return c
}

// exit ends the child's group, reaps the leader and waits until the
// sleep is gone too (SIGKILL is delivered asynchronously): the run is
// dead.
func (c *child) exit(t *testing.T) {
	t.Helper()
	syscall.Kill(-c.pid, syscall.SIGKILL)
	c.cmd.Wait()
	for { // bounded by the test's own timeout
		if _, kid := c.alive(t); !kid {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (c *child) alive(t *testing.T) (leader, kid bool) {
	t.Helper()
	ctx := context.Background()
	l, err1 := Identity{PID: c.pid, StartTime: c.start}.Alive(ctx)
	k, err2 := Identity{PID: c.kid, StartTime: c.kidAt}.Alive(ctx)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	return l, k
}

// tags returns the environment entries that tag a process.
func tagEnv(task string, run int) []string {
	return []string{EnvTaskID + "=" + task, EnvRunID + "=" + strconv.Itoa(run)}
}

// uniqueTask returns a task id no other test or process uses.
func uniqueTask(t *testing.T) string {
	return fmt.Sprintf("T-%s-%d-%d", strings.ReplaceAll(t.Name(), "/", "-"), os.Getpid(), time.Now().UnixNano())
}

// scanOwn scans and keeps only the processes of the children given: the
// machine may run other tagged processes, which a test must not touch.
func scanOwn(t *testing.T, cs ...*child) []Process {
	t.Helper()
	all, err := Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	own := map[int]bool{}
	for _, c := range cs {
		own[c.pid], own[c.kid] = true, true
	}
	var out []Process
	for _, p := range all {
		if own[p.PID] {
			out = append(out, p)
		}
	}
	return out
}

func TestScanFindsTaggedProcesses(t *testing.T) {
	task := uniqueTask(t)
	c := startChild(t, tagEnv(task, 3)...)
	untagged := startChild(t)
	got := scanOwn(t, c, untagged)
	want := []Process{
		{PID: c.pid, PGID: c.pid, StartTime: c.start, TaskID: task, Run: 3},
		{PID: c.kid, PGID: c.pid, StartTime: c.kidAt, TaskID: task, Run: 3},
	}
	if c.kid < c.pid {
		want[0], want[1] = want[1], want[0]
	}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestStopKillsTheGroup(t *testing.T) {
	c := startChild(t, tagEnv(uniqueTask(t), 1)...)
	sent, err := Stop(context.Background(), Kill{PID: c.pid, StartTime: c.start, PGID: c.pid}, 0)
	if !sent || err != nil {
		t.Fatalf("got %v %v, want true <nil>", sent, err)
	}
	if leader, kid := c.alive(t); leader || kid {
		t.Errorf("after Stop: leader alive %v, its child alive %v; want both dead", leader, kid)
	}
}

func TestStopEscalatesToSIGKILL(t *testing.T) {
	// Both ignore SIGTERM (an ignored signal stays ignored across exec).
	c := startScript(t, "trap '' TERM; ", tagEnv(uniqueTask(t), 1)...)
	sent, err := Stop(context.Background(), Kill{PID: c.pid, StartTime: c.start, PGID: c.pid}, 50*time.Millisecond)
	if !sent || err != nil {
		t.Fatalf("got %v %v, want true <nil>", sent, err)
	}
	if leader, kid := c.alive(t); leader || kid {
		t.Errorf("after Stop: leader alive %v, its child alive %v; want both dead", leader, kid)
	}
}

func TestStopOneProcess(t *testing.T) {
	c := startChild(t, tagEnv(uniqueTask(t), 1)...)
	sent, err := Stop(context.Background(), Kill{PID: c.kid, StartTime: c.kidAt}, 0)
	if !sent || err != nil {
		t.Fatalf("got %v %v, want true <nil>", sent, err)
	}
	if _, kid := c.alive(t); kid {
		t.Error("after Stop: the process is alive")
	}
}

func TestStopSparesAReusedPid(t *testing.T) {
	// The live child stands for a process that took a dead run's pid: the
	// recorded start time is not its own.
	c := startChild(t, tagEnv(uniqueTask(t), 1)...)
	for _, k := range []Kill{
		{PID: c.pid, StartTime: c.start + 1, PGID: c.pid},
		{PID: c.pid, StartTime: c.start - 1},
		{PID: c.kid, StartTime: c.kidAt + 1, PGID: c.pid},
	} {
		sent, err := Stop(context.Background(), k, 0)
		if sent || err != nil {
			t.Errorf("Stop(%+v): got %v %v, want false <nil>", k, sent, err)
		}
	}
	if leader, kid := c.alive(t); !leader || !kid {
		t.Errorf("leader alive %v, its child alive %v; want both alive", leader, kid)
	}
}

func TestStopRefuses(t *testing.T) {
	ctx := context.Background()
	self, err := Self(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := startChild(t)
	for _, k := range []Kill{
		{PID: 0},
		{PID: 1},
		{PID: -c.pid, StartTime: c.start},
		{PID: self.PID, StartTime: self.StartTime},
		{PID: c.pid, StartTime: c.start, PGID: 1},
		{PID: c.pid, StartTime: c.start, PGID: self.PID},
		{PID: c.pid, StartTime: c.start, PGID: syscall.Getpgrp()},
	} {
		sent, err := Stop(ctx, k, 0)
		if sent || !errors.Is(err, ErrRefused) {
			t.Errorf("Stop(%+v): got %v %v, want false and ErrRefused", k, sent, err)
		}
	}
	if leader, kid := c.alive(t); !leader || !kid {
		t.Errorf("leader alive %v, its child alive %v; want both alive", leader, kid)
	}
}
