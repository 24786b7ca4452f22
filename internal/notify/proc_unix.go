//go:build unix

package notify

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// ownGroup starts the command in a process group of its own, whose id is
// its pid, so that stopGroup reaches everything it started and nothing
// else.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// pollEvery is how often stopGroup looks whether the group is gone.
const pollEvery = 20 * time.Millisecond

// stopGroup ends the command's process group: SIGTERM, up to grace for it
// to go, then SIGKILL and up to grace more. Nothing is sent to a group
// with no live member: its id may no longer be the command's.
func stopGroup(cmd *exec.Cmd, grace time.Duration) {
	pgid := cmd.Process.Pid
	if pgid <= 1 || !groupAlive(pgid) {
		return
	}
	syscall.Kill(-pgid, syscall.SIGTERM)
	if waitGone(pgid, grace) {
		return
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
	waitGone(pgid, grace)
}

// groupAlive reports whether group pgid has a member that is not a
// zombie. A killed orphan stays a zombie until init reaps it, which in a
// container may be never; where /proc exists it does not count.
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

// procGroup reads a process's group and state from /proc/<pid>/stat:
// "pid (comm) state ppid pgrp …", where comm may hold any byte, so the
// fields are read after its last ')'.
func procGroup(pid int) (pgid int, state byte, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(data[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	g, err := strconv.Atoi(string(f[2]))
	return g, f[0][0], err == nil
}

// waitGone waits up to d for group pgid to have no live member.
func waitGone(pgid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for groupAlive(pgid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollEvery)
	}
	return true
}
