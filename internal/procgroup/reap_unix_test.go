//go:build unix

package procgroup

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
		starter(script, os.Getenv(starterEnv+"_DONE") != "")
	}
	os.Exit(m.Run())
}

func starter(script string, done bool) {
	cmd := exec.Command("sh", "-c", script)
	Own(cmd)
	if err := cmd.Start(); err != nil {
		fmt.Println("start:", err)
		os.Exit(1)
	}
	r, err := Reap(cmd.Process.Pid, time.Second)
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
		term         bool // the agent saw SIGTERM and wrote so
		alive        bool // the group is left running
	}{
		{name: "terminated", script: `trap 'echo term > "$OUT"; kill $!; exit 0' TERM; sleep 1000 & : > "$OUT.ready"; wait`, term: true},
		{name: "killed", script: `trap '' TERM; sleep 1000 & : > "$OUT.ready"; while :; do sleep 1; done`},
		{name: "done", script: `sleep 1000 & : > "$OUT.ready"; wait`, done: true, alive: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			cmd := exec.Command(exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), starterEnv+"="+tc.script, "OUT="+out)
			if tc.done {
				cmd.Env = append(cmd.Env, starterEnv+"_DONE=1")
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
		})
	}
}

// TestReapRefusesNoGroup: no reaper for a group id no run has.
func TestReapRefusesNoGroup(t *testing.T) {
	for _, pgid := range []int{0, 1, -5} {
		if _, err := Reap(pgid, time.Second); err == nil {
			t.Errorf("Reap(%d): no error", pgid)
		}
	}
}
