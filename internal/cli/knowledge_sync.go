package cli

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/fleet"
)

func newKnowledgeSyncCmd(d *deps, runF func(context.Context, *deps, *knowledgeOptions) error) *cobra.Command {
	opts := &knowledgeOptions{}
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Sync docs/knowledge/ with the fleet's remote, branch " + fleet.KnowledgeBranch,
		Long: `Merge this host's docs/knowledge/ with the branch ` + fleet.KnowledgeBranch + ` of [fleet]
remote and push the result, so that every host of a fleet reads the same
knowledge ([fleet] push = true; the daemon does it every minute and
before each run). The merge goes file by file against the last sync: a
document changed on one side takes that side's version; one changed on
both takes the remote's, and this host's is kept under
.clean_room/knowledge-conflicts/ for a person to merge.`,
		Example: `  cra knowledge sync
  cra knowledge sync --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return knowledgeSyncRun(cmd.Context(), d, opts)
		},
	}
	addKnowledgeFlags(cmd, opts, true)
	return cmd
}

func knowledgeSyncRun(ctx context.Context, d *deps, opts *knowledgeOptions) error {
	ws, err := openWorkspace(ctx, d, opts.repo, false)
	if err != nil {
		return err
	}
	defer ws.Close()
	s, err := fleet.SyncKnowledge(ctx, ws.Root, ws.StateDir, ws.Config, d.now())
	if errors.Is(err, fleet.ErrNoPush) {
		return usageError{err: err}
	}
	if err != nil {
		return err
	}
	if opts.json {
		return encodeJSON(d.out, s)
	}
	_, err = d.out.Write([]byte(s.Summary() + "\n"))
	return err
}
