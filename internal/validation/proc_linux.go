package validation

import (
	"bytes"
	"os"
	"strconv"
)

// related returns the live processes of group pgid, those whose
// environment carries token, and all their descendants, read from /proc.
func related(pgid int, token string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	needle := []byte(tokenVar + "=" + token + "\x00")
	children := map[int][]int{}
	var roots []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, pgrp, state, ok := procStat(pid)
		if !ok || state == 'Z' {
			continue
		}
		children[ppid] = append(children[ppid], pid)
		if pgrp == pgid {
			roots = append(roots, pid)
			continue
		}
		if env, err := os.ReadFile("/proc/" + e.Name() + "/environ"); err == nil &&
			(bytes.HasPrefix(env, needle) || bytes.Contains(env, append([]byte{0}, needle...))) {
			roots = append(roots, pid)
		}
	}
	seen := map[int]bool{}
	var out []int
	for len(roots) > 0 {
		pid := roots[len(roots)-1]
		roots = roots[:len(roots)-1]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		out = append(out, pid)
		roots = append(roots, children[pid]...)
	}
	return out
}

// procStat reads a process's parent, process group and state from
// /proc/<pid>/stat: "pid (comm) state ppid pgrp …", comm holding any
// byte, so the fields are read after its last ')'.
func procStat(pid int) (ppid, pgrp int, state byte, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, 0, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, 0, false
	}
	f := bytes.Fields(data[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, 0, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	if err1 != nil || err2 != nil {
		return 0, 0, 0, false
	}
	return ppid, pgrp, f[0][0], true
}

// dead reports whether pid is gone or a zombie its parent has yet to
// reap.
func dead(pid int) bool {
	_, _, state, ok := procStat(pid)
	return !ok || state == 'Z'
}
