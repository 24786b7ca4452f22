//go:build unix

package validation

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// tokenVar names the environment variable that marks every process one
// validation command starts.
const tokenVar = "CRA_VALIDATION_TOKEN"

// shellCommand runs command through sh so that nothing it starts
// outlives it (issue 19, defect 7). The command gets a process group of
// its own and a token of its own in its environment; on timeout or cancel
// (cmd.Cancel), and through the returned function after Wait, every
// process of the group, every process carrying the token and every
// descendant of either is stopped, then killed, and waited for (bounded).
// The function returns how many processes it killed. The string is the
// token's environment entry, which the check's reaper ends them by should
// cra die first.
//
// The group alone is not enough: setsid leaves it, and a process whose
// parent died is re-parented to init, out of reach of a walk of the tree.
// The token survives both; the walk of parent links catches a descendant
// that cleared its environment while its parent lives. Stopping first
// keeps a process from forking past the scan. Only what clears its
// environment and loses its parent escapes, and where /proc is missing
// (unix other than Linux) only the group is killed. A subreaper
// (PR_SET_CHILD_SUBREAPER) would catch orphans too, but it is a property
// of the whole cra process; cgroups need privileges cra does not have.
func shellCommand(ctx context.Context, command string) (*exec.Cmd, string, func() int) {
	token := newToken()
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Env = append(os.Environ(), tokenVar+"="+token)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		killAll(cmd.Process.Pid, token)
		return nil
	}
	return cmd, tokenVar + "=" + token, func() int {
		if cmd.Process == nil {
			return 0
		}
		return killAll(cmd.Process.Pid, token)
	}
}

func newToken() string {
	b := make([]byte, 12)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// killAll stops, kills and waits for the processes of group pgid, those
// carrying token, and their descendants; it returns how many it found
// through /proc (none where there is no /proc).
func killAll(pgid int, token string) int {
	syscall.Kill(-pgid, syscall.SIGSTOP)
	found := map[int]bool{}
	for range 100 {
		fresh := 0
		for _, pid := range related(pgid, token) {
			if pid <= 1 || pid == os.Getpid() || found[pid] {
				continue
			}
			syscall.Kill(pid, syscall.SIGSTOP)
			found[pid] = true
			fresh++
		}
		if fresh == 0 {
			break
		}
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
	for pid := range found {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		alive := false
		for pid := range found {
			if !dead(pid) {
				alive = true
				break
			}
		}
		if !alive {
			break
		}
	}
	return len(found)
}
