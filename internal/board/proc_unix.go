//go:build unix

package board

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ownGroup puts the run's process in a process group of its own, whose id
// is its pid: a timeout ends the agent and everything it started, and
// Level 1 finds the group the same way.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// groupPollEvery is how often stopGroup looks whether the group is gone.
const groupPollEvery = 20 * time.Millisecond

// stopGroup ends process group pgid: SIGTERM, up to grace for it to go,
// then SIGKILL, and up to two seconds more. It reports whether the group
// is gone. The group is the run's own (ownGroup) and its id cannot name
// another group while any member lives, so signalling it reaches only the
// run's processes.
func stopGroup(pgid int, grace time.Duration) bool {
	if pgid <= 1 {
		return true
	}
	if !groupAlive(pgid) {
		return true
	}
	syscall.Kill(-pgid, syscall.SIGTERM)
	if waitGroup(pgid, grace) {
		return true
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
	return waitGroup(pgid, 2*time.Second)
}

// groupAlive reports whether group pgid has a live member. A zombie does
// not count where /proc tells (Linux): an orphan's zombie waits for init
// to reap it, which in a container may be slow or never.
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true // no /proc: the signal's answer stands
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g, state, ok := procGroup(pid); ok && g == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// procGroup reads a process's group and state from /proc/<pid>/stat,
// whose fields after the parenthesised command are state, ppid, pgrp.
func procGroup(pid int) (pgid int, state byte, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	g, err := strconv.Atoi(f[2])
	return g, f[0][0], err == nil
}

// waitGroup waits up to d for group pgid to be gone.
func waitGroup(pgid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if !groupAlive(pgid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(groupPollEvery)
	}
}

// signalName names the signal that ended a process, or "".
func signalName(st *exec.ExitError) string {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal().String()
	}
	return ""
}
