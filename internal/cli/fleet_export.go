package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/fleet"
)

func newFleetExportCmd(d *deps) *cobra.Command {
	var repoFlag, dir string
	cmd := &cobra.Command{
		Use:   "export --dir DIR",
		Short: "Write the PostgreSQL world log and board back as files",
		Long: `Write the world log and the board of the PostgreSQL [fleet] database_url_env
names into DIR, laid out as a state directory: DIR/world.log, byte for byte
as 'cra log export' writes it, and DIR/tasks/<folder>/<id>.yaml, each as its
row holds it, with the recycler's review histories under DIR/runs/ and its
notifications not told yet in DIR/notify-pending.jsonl. DIR must hold neither
yet: export does not merge. What 'cra fleet import' moved in comes back byte
for byte, but for the notifications: PostgreSQL keeps each as a JSON object,
which comes back as the same object in its own spacing and key order.`,
		Example: `  cra fleet export --dir /tmp/board && cmp /tmp/board/world.log .clean_room/world.log`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				return fmt.Errorf("--dir is required: name a new directory to write world.log and tasks/ into")
			}
			return fleetExportRun(cmd.Context(), d, repoFlag, dir)
		},
	}
	cmd.Flags().StringVar(&repoFlag, "repo", ".", "repository root (or a directory inside it)")
	cmd.Flags().StringVar(&dir, "dir", "", "the directory to write world.log and tasks/ into (required; must hold neither)")
	return cmd
}

func fleetExportRun(ctx context.Context, d *deps, repoFlag, dir string) error {
	_, cfg, err := fleetConfig(d, repoFlag)
	if err != nil {
		return err
	}
	m, err := fleet.Export(ctx, dir, cfg, os.Getenv)
	if err != nil {
		return err
	}
	if _, err = fmt.Fprintf(d.out, "exported %d lines of the world log and %d tasks into %s\n", m.Lines, m.Tasks, dir); err != nil {
		return err
	}
	if m.Reviews > 0 || m.Notices > 0 {
		_, err = fmt.Fprintf(d.out, "exported %d review records and %d notifications not told yet\n", m.Reviews, m.Notices)
	}
	return err
}
