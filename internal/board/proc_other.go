//go:build !unix

package board

import (
	"os/exec"
	"time"
)

// ownGroup does nothing where there are no process groups.
func ownGroup(cmd *exec.Cmd) {}

// stopGroup cannot end a group here: the run's process is killed by
// Processor itself.
func stopGroup(pgid int, grace time.Duration) bool { return true }

// signalName names the signal that ended a process; none here.
func signalName(st *exec.ExitError) string { return "" }
