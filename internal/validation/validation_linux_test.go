package validation

import (
	"bytes"
	"context"
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

// TestValidatorKillsEscapedChildren: nothing a validation command starts
// outlives it, not even a process that left its process group and
// session with setsid, or one whose parent died (issue 19, defect 7).
// Each command writes the pid of its escaped sleep to escaped.pid.
func TestValidatorKillsEscapedChildren(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Fatal("setsid(1) is missing: install util-linux (apt-get install -y util-linux)")
	}
	const escape = `setsid sh -c 'echo $$ > escaped.pid.tmp; mv escaped.pid.tmp escaped.pid; exec sleep 300'`
	const waitPid = `while [ ! -s escaped.pid ]; do sleep 0.05; done`
	tests := []struct {
		name     string
		command  string
		timeout  time.Duration
		timedOut bool
	}{
		{"setsid child, timeout", escape + ` & sleep 300`, time.Second, true},
		{"setsid grandchild whose parent exited, timeout", `(` + escape + ` &); sleep 300`, time.Second, true},
		{"setsid child left behind by a passing command", escape + ` >/dev/null 2>&1 & ` + waitPid + `; echo ok`, 20 * time.Second, false},
		{"child holding the output left behind by a passing command", escape + ` & ` + waitPid + `; echo ok`, 20 * time.Second, false},
	}
	// A process of the test's own, outside the command: it must live on.
	bystander := exec.Command("sleep", "300")
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bystander.Process.Kill(); bystander.Wait() })
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			v := &Validator{Test: tc.command, Timeout: tc.timeout}
			start := time.Now()
			res, runErr := v.Run(context.Background(), dir)
			took := time.Since(start)
			data, err := os.ReadFile(filepath.Join(dir, "escaped.pid"))
			if err != nil {
				t.Fatalf("the command wrote no pid: %v (validation: %v)", err, runErr)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil || pid <= 1 {
				t.Fatalf("pid %q", data)
			}
			if runErr != nil {
				t.Error(runErr)
			} else {
				c := res.Check(CheckTest)
				if c.TimedOut != tc.timedOut || c.Passed == tc.timedOut {
					t.Errorf("got passed=%v timed_out=%v, want timed_out=%v\n%s", c.Passed, c.TimedOut, tc.timedOut, c.Output)
				}
				if !tc.timedOut && !strings.Contains(c.Output, "ok\n") {
					t.Errorf("output: %q", c.Output)
				}
			}
			if took > tc.timeout+4*time.Second {
				t.Errorf("validation took %v", took)
			}
			if !gone(pid, 5*time.Second) {
				syscall.Kill(pid, syscall.SIGKILL) // the test started it
				t.Errorf("the escaped process %d outlived the validation", pid)
			}
		})
	}
	if err := bystander.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("a process outside the command was killed: %v", err)
	}
}

// gone waits up to d for pid to be dead: no such process, or a zombie
// its parent has yet to reap.
func gone(pid int, d time.Duration) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// TestCheckEndsWithAKilledValidator: a validator killed with -9 mid-check
// (a daemon or reviewer that dies) leaves none of the check's processes
// running: its reaper ends the check's group, SIGTERM first.
func TestCheckEndsWithAKilledValidator(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The shell waits on its sleep: with no reaper both live on. A second
	// sleep leaves the group (setsid) first; it carries the check's token.
	const command = `setsid sh -c 'echo $$ > escaped.pid.tmp; mv escaped.pid.tmp escaped.pid; exec sleep 300' & ` +
		`while [ ! -s escaped.pid ]; do sleep 0.05; done; sleep 300 & echo $! > sleep.pid.tmp; mv sleep.pid.tmp sleep.pid; wait`
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), checkerEnv+"="+command, checkerEnv+"_DIR="+dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	for deadline := time.Now().Add(60 * time.Second); pid == 0; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(filepath.Join(dir, "sleep.pid")); err == nil {
			if pid, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil || pid <= 1 {
				t.Fatalf("sleep.pid holds %q", b)
			}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the check never started: %s", out.String())
		}
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	if strings.Contains(out.String(), "check ended") {
		t.Fatalf("the check ended before the validator was killed: %s", out.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "escaped.pid"))
	escaped, perr := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || perr != nil || escaped <= 1 {
		t.Fatalf("escaped.pid: %q, %v", b, err)
	}
	t.Cleanup(func() { syscall.Kill(escaped, syscall.SIGKILL) })
	// A bound, not a measure: the grace is two seconds.
	if !gone(pid, 30*time.Second) {
		t.Errorf("the check's sleep %d outlived its killed validator: %s", pid, out.String())
	}
	if !gone(escaped, 30*time.Second) {
		t.Errorf("the check's sleep %d that left its group (setsid) outlived its killed validator: %s", escaped, out.String())
	}
}
