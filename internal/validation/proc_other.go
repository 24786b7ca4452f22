//go:build !unix

package validation

import (
	"context"
	"os/exec"
)

// shellCommand runs command through cmd.exe; a timeout kills cmd.exe
// only, and nothing is killed after Wait.
func shellCommand(ctx context.Context, command string) (*exec.Cmd, string, func() int) {
	return exec.CommandContext(ctx, "cmd", "/C", command), "", func() int { return 0 }
}
