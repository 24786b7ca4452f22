package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/sandbox"
)

// newSandboxExecCmd is the launcher cra runs itself as to confine an
// agent's or a validation's command (package sandbox): it restricts its
// own writes with Landlock, then execs the command. Hidden: cra runs it,
// a person need not.
func newSandboxExecCmd(d *deps) *cobra.Command {
	return &cobra.Command{
		Use:   sandbox.Command + " [--write DIR]… -- COMMAND [ARG]…",
		Short: "Run a command that may write only the given directories (Landlock)",
		Long: `Run COMMAND confined: it reads everywhere and keeps the network, but
writes only the directories given with --write (and /dev/null, terminals,
/dev/shm). cra runs agents and validation commands this way; the
confinement holds for every child and cannot be lifted.`,
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return sandboxExecRun(cmd.Context(), d, args)
		},
	}
}

func sandboxExecRun(ctx context.Context, d *deps, args []string) error {
	spec, argv, err := sandbox.Parse(args)
	if err != nil {
		return usageError{err: err}
	}
	return sandbox.Launch(spec, argv) // returns only when it failed
}
