//go:build unix

// Package procgroup runs a command in a process group of its own and ends
// that group: what the board's agents and the notifiers start, and
// everything those start in turn, goes when they do.
package procgroup

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// Own puts cmd's process in a process group of its own, whose id is its
// pid, so that Stop reaches everything it started and nothing else.
func Own(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// pollEvery is how often Stop looks whether the group is gone.
const pollEvery = 20 * time.Millisecond

// Stop ends process group pgid: SIGTERM, up to grace for it to go, then
// SIGKILL and up to after more. It reports whether the group is gone.
// Nothing is sent to a group with no live member, whose id may be
// another's by now; while a member lives, the id cannot name another
// group.
func Stop(pgid int, grace, after time.Duration) bool {
	if pgid <= 1 || !Alive(pgid) {
		return true
	}
	syscall.Kill(-pgid, syscall.SIGTERM)
	if wait(pgid, grace) {
		return true
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
	return wait(pgid, after)
}

// Alive reports whether group pgid has a live member. A zombie does not
// count where /proc tells (Linux): an orphan's zombie waits for init to
// reap it, which in a container may be slow or never.
func Alive(pgid int) bool {
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
		if g, state, ok := group(pid); ok && g == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// group reads a process's group and state from /proc/<pid>/stat: "pid
// (comm) state ppid pgrp …", where comm may hold any byte, so the fields
// are read after its last ')'.
func group(pid int) (pgid int, state byte, ok bool) {
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

// wait waits up to d for group pgid to have no live member.
func wait(pgid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for Alive(pgid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollEvery)
	}
	return true
}

// Signal names the signal that ended a process, or "".
func Signal(st *exec.ExitError) string {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal().String()
	}
	return ""
}

// CPU is the CPU time, in clock ticks, that the live members of group
// pgid have used, with what their reaped children used: it grows while
// any of them computes, however quiet its output (a run's liveness,
// issue 29 item 4). ok is false where /proc cannot tell.
func CPU(pgid int) (ticks int64, ok bool) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if g, t, ok := cpuOf(data); ok && g == pgid {
			ticks += t
		}
	}
	return ticks, true
}

// cpuOf reads a /proc/<pid>/stat line's group and utime + stime + cutime
// + cstime (fields 5 and 14 to 17).
func cpuOf(data []byte) (pgid int, ticks int64, ok bool) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(data[i+1:])
	if len(f) < 15 {
		return 0, 0, false
	}
	g, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return 0, 0, false
	}
	for _, s := range f[11:15] {
		n, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil {
			return 0, 0, false
		}
		ticks += n
	}
	return g, ticks, true
}
