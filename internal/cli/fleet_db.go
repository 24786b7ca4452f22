package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/fleet"
	"github.com/cra-dev/cra/internal/workspace"
	"github.com/cra-dev/cra/internal/world"
)

func newFleetCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Share one PostgreSQL among hosts: its schema, and the world log moved into it",
		Long: `A fleet is several hosts on one PostgreSQL. Name the environment variable
that holds its URL in .clean_room/config.toml, and export the URL in it (the
URL, with its password, is never written to a file):

  [fleet]
  database_url_env = "CRA_DATABASE_URL"

Then 'cra fleet init' makes the schema, 'cra fleet import' moves an existing
world.log into it, and every 'cra log' command reads and writes the world log
there ('cra log export' writes it back as world.log). 'cra fleet status' lists
the hosts, their heartbeats, their runs and the leader.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newFleetInitCmd(d), newFleetImportCmd(d), newFleetExportCmd(d), newFleetStatusCmd(d, nil))
	return cmd
}

// fleetConfig finds the repository at repoFlag and loads its
// configuration, which names the fleet's database.
func fleetConfig(d *deps, repoFlag string) (repo string, cfg *config.Config, err error) {
	if repo, err = workspace.Find(repoFlag); err != nil {
		return "", nil, err
	}
	cfg, err = loadConfig(d, repo)
	return repo, cfg, err
}

func newFleetInitCmd(d *deps) *cobra.Command {
	var repoFlag string
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create or migrate the fleet's schema in PostgreSQL",
		Long: `Create the schema in the PostgreSQL [fleet] database_url_env names, or
migrate it to this cra's version. The migrations are embedded and versioned;
hosts that run it at once take turns, and the later ones find the work done.`,
		Example: `  CRA_DATABASE_URL=postgres://cra@db/cra cra fleet init`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return fleetInitRun(cmd.Context(), d, repoFlag)
		},
	}
	cmd.Flags().StringVar(&repoFlag, "repo", ".", "repository root (or a directory inside it)")
	return cmd
}

func fleetInitRun(ctx context.Context, d *deps, repoFlag string) error {
	_, cfg, err := fleetConfig(d, repoFlag)
	if err != nil {
		return err
	}
	from, to, err := workspace.FleetInit(ctx, cfg, os.Getenv)
	if err != nil {
		return err
	}
	if from == to {
		_, err = fmt.Fprintf(d.out, "schema at version %d: nothing to do\n", to)
		return err
	}
	_, err = fmt.Fprintf(d.out, "schema migrated from version %d to %d\n", from, to)
	return err
}

func newFleetImportCmd(d *deps) *cobra.Command {
	var repoFlag string
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Move the file world log and board into PostgreSQL",
		Long: `Copy .clean_room/world.log and the board's task files (all six folders of
.clean_room/tasks) into PostgreSQL, whose log and board must be empty: every
line as written, malformed and hand-written ones too, at the same line
numbers, with the same agents' states and the same skipped entries, and every
task file's bytes in its folder, with the recycler's review histories
(.clean_room/runs/<id>/reviews.jsonl) and its notifications not told yet
(notify-pending.jsonl), so that a task's earlier reviews still count. It is
one transaction. Stop 'cra serve' and
the agents first: a log that grows meanwhile is refused, and so is a task file
the board cannot read (fix it, or 'cra task rebuild'). 'cra fleet export'
writes the same bytes back. The files are left in place; once imported, the
world log and the board are PostgreSQL's.`,
		Example: `  cra fleet init && cra fleet import && cra fleet export --dir /tmp/back && diff -r /tmp/back/tasks .clean_room/tasks`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return fleetImportRun(cmd.Context(), d, repoFlag)
		},
	}
	cmd.Flags().StringVar(&repoFlag, "repo", ".", "repository root (or a directory inside it)")
	return cmd
}

func fleetImportRun(ctx context.Context, d *deps, repoFlag string) error {
	repo, cfg, err := fleetConfig(d, repoFlag)
	if err != nil {
		return err
	}
	m, err := fleet.Import(ctx, workspace.StateDir(repo), cfg, os.Getenv)
	if err != nil {
		return err
	}
	if _, err = fmt.Fprintf(d.out, "imported %d lines of %s and %d tasks into PostgreSQL\n", m.Lines, relPath(repo, world.Path(workspace.StateDir(repo))), m.Tasks); err != nil {
		return err
	}
	if m.Reviews > 0 || m.Notices > 0 {
		if _, err = fmt.Fprintf(d.out, "imported %d review records and %d notifications not told yet\n", m.Reviews, m.Notices); err != nil {
			return err
		}
	}
	if m.BadNotices > 0 {
		_, err = fmt.Fprintf(d.errOut, "warning: %d lines of the notification queue (notify-pending.jsonl) do not parse: the recycler skipped them, and they stay in the file\n", m.BadNotices)
	}
	return err
}
