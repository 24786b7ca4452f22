//go:build unix && !linux

package validation

import "syscall"

// related finds nothing beyond the process group without /proc.
func related(pgid int, token string) []int { return nil }

// dead reports whether pid is gone.
func dead(pid int) bool { return syscall.Kill(pid, 0) == syscall.ESRCH }
