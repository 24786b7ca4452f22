//go:build unix

package procgroup

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// reapScript is the reaper's body, run by /bin/sh with the group's id,
// the grace in whole seconds and the paths of a system sleep and grep as
// $1 to $4: it runs outside any sandbox, so it looks nothing up on a PATH
// an agent may write to. Its standard input is a pipe whose write end
// only its starter holds. The first line is the tag, an environment
// entry (NAME=value) every process of the run carries, or empty; it
// comes through the pipe, not the command line, which any process of the
// user may read. Then "done" means the starter ended the group itself,
// and end of file without it means the starter died (kill -9, a crash,
// the OOM killer), so the group goes as Stop ends it, and with it every
// process carrying the tag (one that left the group with setsid):
// SIGTERM, up to the grace, then SIGKILL. Nothing is sent to a group
// with no member left.
const reapScript = `trap '' INT HUP
g=$1 grace=$2 sleep=$3 grep=$4
IFS= read -r tag
IFS= read -r word
[ "$word" = done ] && exit 0
tagged() {
	[ -n "$tag" ] || return 0
	for f in $("$grep" -lsxzF -e "$tag" /proc/[0-9]*/environ); do
		p=${f#/proc/}
		echo "${p%/environ}"
	done
}
alive() {
	kill -0 -"$g" 2>/dev/null || [ -n "$(tagged)" ]
}
end() {
	kill -"$1" -"$g" 2>/dev/null
	for p in $(tagged); do kill -"$1" "$p" 2>/dev/null; done
}
alive || exit 0
end TERM
n=0
while alive; do
	if [ "$n" -ge "$grace" ]; then end KILL; end KILL; exit 0; fi
	"$sleep" 1
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
// after SIGTERM before SIGKILL, rounded up to whole seconds. tag, when
// not empty, is an environment entry (NAME=value) that marks the run's
// processes, those that left the group too: it should be unique to the
// run, and need not be public (reapScript). The caller calls Done once it
// has ended the group itself.
func Reap(pgid int, grace time.Duration, tag string) (*Reaper, error) {
	if pgid <= 1 {
		return nil, fmt.Errorf("reap process group %d: not a group a run has", pgid)
	}
	if strings.ContainsAny(tag, "\n\x00") || (tag != "" && !strings.Contains(tag, "=")) {
		return nil, fmt.Errorf("reap process group %d: the tag %q is no environment entry (NAME=value, one line)", pgid, tag)
	}
	sleep, err := systemTool("sleep")
	if err != nil {
		return nil, err
	}
	grep, err := systemTool("grep")
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe() // close-on-exec: no other child holds the write end
	if err != nil {
		return nil, fmt.Errorf("start the run's reaper: %w", err)
	}
	secs := int(math.Ceil(grace.Seconds()))
	cmd := exec.Command("/bin/sh", "-c", reapScript, "cra-reaper", strconv.Itoa(pgid), strconv.Itoa(secs), sleep, grep)
	cmd.Stdin = r
	cmd.Env = []string{} // no PATH to look in, and no CRA_TASK_ID: Level 1 never takes it for a run
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("start the run's reaper: %w", err)
	}
	// The pipe's buffer holds the line: the write does not wait on the
	// reaper.
	if _, err := w.Write([]byte(tag + "\n")); err != nil {
		w.Close()
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
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

// systemDirs are where the reaper's tools are looked for: system
// directories, NixOS's among them.
var systemDirs = []string{"/usr/bin", "/bin", "/run/current-system/sw/bin"}

// systemTool returns the first of systemDirs' name that is a regular
// file, after its links, owned by root and writable by no one else: one
// no agent of this user could have planted.
func systemTool(name string) (string, error) {
	for _, d := range systemDirs {
		real, err := filepath.EvalSymlinks(filepath.Join(d, name))
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
	return "", fmt.Errorf("start the run's reaper: no %s owned by root in %v", name, systemDirs)
}

// PID returns the reaper's process id.
func (r *Reaper) PID() int { return r.cmd.Process.Pid }
