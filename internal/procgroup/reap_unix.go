//go:build unix

package procgroup

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// reapScript is the reaper's body, run by /bin/sh with the group's id,
// the grace in whole seconds and the path of a system sleep as $1, $2
// and $3: it runs outside any sandbox, so it looks nothing up on a PATH
// an agent may write to. Its standard input is a pipe
// whose write end only its starter holds: "done" on it means the starter
// ended the group itself, and end of file without it means the starter
// died (kill -9, a crash, the OOM killer), so the group goes as Stop ends
// it: SIGTERM, up to the grace, then SIGKILL. A group with no member left
// is sent nothing.
const reapScript = `trap '' INT HUP
IFS= read -r word
[ "$word" = done ] && exit 0
kill -0 -"$1" 2>/dev/null || exit 0
kill -TERM -"$1" 2>/dev/null
n=0
while kill -0 -"$1" 2>/dev/null; do
	if [ "$n" -ge "$2" ]; then kill -KILL -"$1" 2>/dev/null; exit 0; fi
	"$3" 1
	n=$((n + 1))
done`

// Reaper ends a process group if the process that started it dies
// first: an agent a daemon ran must not outlive a daemon killed with -9,
// working on past its lease while another host runs its task again. It
// is a small shell outside the group (in a group of its own, so that a
// terminal's ^C for the daemon does not end it), so nothing in the group
// can stop it by signalling its own group, and nothing the daemon's
// death takes with it.
type Reaper struct {
	w   *os.File
	cmd *exec.Cmd
}

// Reap starts the reaper of group pgid; grace is how long the group has
// after SIGTERM before SIGKILL, rounded up to whole seconds. The caller
// calls Done once it has ended the group itself.
func Reap(pgid int, grace time.Duration) (*Reaper, error) {
	if pgid <= 1 {
		return nil, fmt.Errorf("reap process group %d: not a group a run has", pgid)
	}
	sleep, err := systemSleep()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe() // close-on-exec: no other child holds the write end
	if err != nil {
		return nil, fmt.Errorf("start the run's reaper: %w", err)
	}
	secs := int(math.Ceil(grace.Seconds()))
	cmd := exec.Command("/bin/sh", "-c", reapScript, "cra-reaper", strconv.Itoa(pgid), strconv.Itoa(secs), sleep)
	cmd.Stdin = r
	cmd.Env = []string{} // no PATH to look in, and no CRA_TASK_ID: Level 1 never takes it for a run
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("start the run's reaper: %w", err)
	}
	return &Reaper{w: w, cmd: cmd}, nil
}

// Done tells the reaper that its group was ended by its starter, and
// waits for it to exit. A nil Reaper does nothing.
func (r *Reaper) Done() {
	if r == nil {
		return
	}
	r.w.Write([]byte("done\n")) // a reaper already gone (killed by hand) makes this fail: nothing to tell
	r.w.Close()
	// Its work is over: a reaper stopped (SIGSTOP) by a process of this
	// user that the sandbox does not scope must not hold the run's end.
	syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	r.cmd.Wait()
}

// systemSleeps are where sleep(1) is looked for: system directories,
// NixOS's among them.
var systemSleeps = []string{"/usr/bin/sleep", "/bin/sleep", "/run/current-system/sw/bin/sleep"}

// systemSleep returns the first of systemSleeps that is a regular file,
// after its links, owned by root and writable by no one else: one no
// agent of this user could have planted.
func systemSleep() (string, error) {
	for _, p := range systemSleeps {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		fi, err := os.Stat(real)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o022 != 0 {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid == 0 {
			return real, nil
		}
	}
	return "", fmt.Errorf("start the run's reaper: no sleep owned by root in %v", systemSleeps)
}

// PID returns the reaper's process id.
func (r *Reaper) PID() int { return r.cmd.Process.Pid }
