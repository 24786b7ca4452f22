//go:build unix

package agent

import (
	"context"
	"os/exec"
	"syscall"
)

// shellCommand runs command through sh in a process group of its own, so
// that a timeout kills the test runner's children too.
func shellCommand(ctx context.Context, command string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return cmd
}
