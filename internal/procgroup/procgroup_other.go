//go:build !unix

// Package procgroup runs a command in a process group of its own and ends
// that group; where there are no process groups, it does what it can.
package procgroup

import (
	"os/exec"
	"time"
)

// Own does nothing where there are no process groups.
func Own(cmd *exec.Cmd) {}

// Stop cannot end a group here: the caller kills its process itself.
func Stop(pgid int, grace, after time.Duration) bool { return true }

// Alive cannot tell here.
func Alive(pgid int) bool { return false }

// Signal names the signal that ended a process; none here.
func Signal(st *exec.ExitError) string { return "" }

// CPU is not known here.
func CPU(pgid int) (int64, bool) { return 0, false }

// Reaper cannot end a group here.
type Reaper struct{}

// Reap returns a Reaper that does nothing: there are no groups here.
func Reap(pgid int, grace time.Duration, tag string) (*Reaper, error) { return &Reaper{}, nil }

// Done does nothing.
func (r *Reaper) Done() {}
