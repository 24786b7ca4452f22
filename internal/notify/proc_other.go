//go:build !unix

package notify

import (
	"os/exec"
	"time"
)

// ownGroup does nothing where there are no process groups.
func ownGroup(cmd *exec.Cmd) {}

// stopGroup kills the shell only: without process groups, what it
// started is out of reach.
func stopGroup(cmd *exec.Cmd, grace time.Duration) {
	cmd.Process.Kill()
}
