//go:build !unix

package agent

import (
	"context"
	"os/exec"
)

// shellCommand runs command through cmd.exe.
func shellCommand(ctx context.Context, command string) *exec.Cmd {
	return exec.CommandContext(ctx, "cmd", "/C", command)
}
