package cli

import (
	"bufio"
	"context"

	"github.com/spf13/cobra"
)

func newLogExportCmd(d *deps, runF func(context.Context, *deps, *logCommon) error) *cobra.Command {
	opts := &logCommon{}
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write the world log as the plain-text world.log",
		Long: `Write every line of the world log to standard output, as written, each with
its newline: the file .clean_room/world.log holds. From PostgreSQL ([fleet]
database_url_env), the output is byte for byte the file the same entries
make, so 'cra fleet import' then 'cra log export' gives the file back.`,
		Example: `  cra log export > world.log`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return logExportRun(cmd.Context(), d, opts)
		},
	}
	cmd.Flags().StringVar(&opts.repo, "repo", ".", "repository root (or a directory inside it)")
	return cmd
}

func logExportRun(ctx context.Context, d *deps, opts *logCommon) error {
	l, _, closeLog, err := openWorldLog(ctx, d, opts.repo, false)
	if err != nil {
		return err
	}
	defer closeLog()
	w := bufio.NewWriterSize(d.out, 256<<10)
	if err := l.Export(ctx, w); err != nil {
		return err
	}
	return w.Flush()
}
