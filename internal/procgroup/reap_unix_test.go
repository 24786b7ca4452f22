//go:build unix

package procgroup

import (
	"bufio"
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

// starterEnv makes the test binary a starter (TestMain): it runs the
// agent script in the variable in a group of its own under a reaper,
// prints "agent PGID", and waits to be killed; with starterEnv_DONE set
// it tells the reaper "done" first.
const starterEnv = "CRA_PROCGROUP_TEST_STARTER"

func TestMain(m *testing.M) {
	if script := os.Getenv(starterEnv); script != "" {
		starter(script, os.Getenv(starterEnv+"_DONE") != "", os.Getenv(starterEnv+"_TAG"))
	}
	os.Exit(m.Run())
}

func starter(script string, done bool, tag string) {
	cmd := exec.Command("sh", "-c", script)
	if tag != "" {
		cmd.Env = append(os.Environ(), tag) // the run's mark, on every process it starts
	}
	Own(cmd)
	if err := cmd.Start(); err != nil {
		fmt.Println("start:", err)
		os.Exit(1)
	}
	r, err := Reap(cmd.Process.Pid, time.Second, tag)
	if err != nil {
		fmt.Println("reap:", err)
		os.Exit(1)
	}
	if done {
		r.Done()
	}
	fmt.Printf("agent %d\n", cmd.Process.Pid)
	for {
		time.Sleep(time.Hour) // until killed
	}
}

// escape is an agent whose sleep leaves the group with setsid, and writes
// its pid to $OUT.escaped.
const escape = `setsid sh -c 'echo $$ > "$OUT.escaped.tmp"; mv "$OUT.escaped.tmp" "$OUT.escaped"; exec sleep 1000' & while [ ! -s "$OUT.escaped" ]; do sleep 0.05; done; : > "$OUT.ready"; wait`

// running reports whether pid is a live process (not a zombie).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || (b[i+2] != 'Z' && b[i+2] != 'X')
}

// TestReaperEndsTheGroupOfADeadStarter: a starter killed with -9 leaves
// no agent behind: the reaper ends the agent's whole group, with SIGTERM
// first and SIGKILL for what ignores it; a starter that said "done" has
// its reaper leave the group alone.
func TestReaperEndsTheGroupOfADeadStarter(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, script string
		done         bool
		plant        bool // a sleep that says it ran is first on the starter's PATH
		term         bool // the agent saw SIGTERM and wrote so
		alive        bool // the group is left running
		tag          bool // the agent carries a tag the reaper is given
		escapedAlive bool // the process in $OUT.escaped outlives the reaper
	}{
		{name: "terminated", script: `trap 'echo term > "$OUT"; kill $!; exit 0' TERM; sleep 1000 & : > "$OUT.ready"; wait`, term: true},
		// The reaper waits out the grace with a system sleep, not one
		// planted first on the daemon's PATH (a cache an agent writes).
		{name: "killed", script: `trap '' TERM; /bin/sleep 1000 & : > "$OUT.ready"; while :; do /bin/sleep 1; done`, plant: true},
		{name: "done", script: `sleep 1000 & : > "$OUT.ready"; wait`, done: true, alive: true},
		// A process that left the group (setsid) goes too when it
		// carries the run's tag, and only then.
		{name: "setsid tagged", script: escape, tag: true},
		{name: "setsid untagged", script: escape, escapedAlive: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			cmd := exec.Command(exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), starterEnv+"="+tc.script, "OUT="+out)
			if tc.done {
				cmd.Env = append(cmd.Env, starterEnv+"_DONE=1")
			}
			if tc.tag {
				cmd.Env = append(cmd.Env, starterEnv+"_TAG=CRA_TEST_RUN_TOKEN="+filepath.Base(filepath.Dir(out)))
			}
			planted := filepath.Join(filepath.Dir(out), "planted")
			if tc.plant {
				bin := filepath.Join(filepath.Dir(out), "bin")
				if err := os.Mkdir(bin, 0o755); err != nil {
					t.Fatal(err)
				}
				fake := "#!/bin/sh\necho ran > " + planted + "\nexec /bin/sleep \"$@\"\n"
				if err := os.WriteFile(filepath.Join(bin, "sleep"), []byte(fake), 0o755); err != nil {
					t.Fatal(err)
				}
				cmd.Env = append(cmd.Env, "PATH="+bin+":"+os.Getenv("PATH"))
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(stdout).ReadString('\n')
			var pgid int
			if _, serr := fmt.Sscanf(line, "agent %d", &pgid); err != nil || serr != nil {
				cmd.Process.Kill()
				t.Fatalf("starter said %q, %v", line, err)
			}
			t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
			for { // its traps are set
				if _, err := os.Stat(out + ".ready"); err == nil {
					break
				}
				if !Alive(pgid) {
					t.Fatalf("agent group %d not running under its starter", pgid)
				}
				time.Sleep(10 * time.Millisecond)
			}
			syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
			// A bound, not a measure: the grace is a second.
			deadline := time.Now().Add(30 * time.Second)
			for Alive(pgid) && !tc.alive && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if tc.alive {
				time.Sleep(1500 * time.Millisecond) // past the grace a wrongful reaper would have used
			}
			if got := Alive(pgid); got != tc.alive {
				t.Fatalf("agent group alive %v after its starter was killed, want %v", got, tc.alive)
			}
			b, _ := os.ReadFile(out)
			if got := strings.TrimSpace(string(b)) == "term"; got != tc.term {
				t.Errorf("agent saw SIGTERM: %v (%q), want %v", got, b, tc.term)
			}
			if _, err := os.Stat(planted); err == nil {
				t.Errorf("the reaper ran the sleep planted first on its starter's PATH")
			}
			if b, err := os.ReadFile(out + ".escaped"); err == nil {
				pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
				if err != nil || pid <= 1 {
					t.Fatalf("escaped pid %q", b)
				}
				t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
				// A bound, not a measure: the grace is a second.
				gone := false
				wait := 10 * time.Second
				if tc.escapedAlive {
					wait = 3 * time.Second // past the grace a wrongful reaper would have used
				}
				for deadline := time.Now().Add(wait); !gone && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
					gone = !running(pid)
				}
				if gone == tc.escapedAlive {
					t.Errorf("the process that left the group (tagged %v) gone: %v, want %v", tc.tag, gone, !tc.escapedAlive)
				}
			}
		})
	}
}

// TestDoneEndsAStoppedReaper: a reaper stopped by hand (SIGSTOP, from a
// process the sandbox does not scope) does not hold Done, and with it the
// run's end; the group it watched is left alone.
func TestDoneEndsAStoppedReaper(t *testing.T) {
	agent := exec.Command("sleep", "1000")
	Own(agent)
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { syscall.Kill(-agent.Process.Pid, syscall.SIGKILL); agent.Wait() }()
	r, err := Reap(agent.Process.Pid, time.Second, "")
	if err != nil {
		t.Fatal(err)
	}
	syscall.Kill(r.PID(), syscall.SIGSTOP)
	done := make(chan struct{})
	go func() { r.Done(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second): // a bound: Done returns at once
		syscall.Kill(r.PID(), syscall.SIGKILL)
		t.Fatal("Done still waits for a stopped reaper")
	}
	if !Alive(agent.Process.Pid) {
		t.Error("the agent's group was ended by a reaper told done")
	}
}

// TestReapRefusesNoGroup: no reaper for a group id no run has.
func TestReapRefusesNoGroup(t *testing.T) {
	for _, pgid := range []int{0, 1, -5} {
		if _, err := Reap(pgid, time.Second, ""); err == nil {
			t.Errorf("Reap(%d): no error", pgid)
		}
	}
}
