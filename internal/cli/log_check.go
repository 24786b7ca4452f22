package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/world"
)

// logCheckOptions are the inputs of 'cra log check'.
type logCheckOptions struct {
	logCommon
	marker string
	reset  bool
}

func newLogCheckCmd(d *deps, runF func(context.Context, *deps, *logCheckOptions) error) *cobra.Command {
	opts := &logCheckOptions{}
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Print what is new since a read marker, and advance it",
		Long: `Print the lines appended since the read marker was last advanced (all of
them for a new marker), then move the marker past them. Markers live in
.clean_room/markers/ and are updated atomically; each reader keeps its own.
Nothing new prints nothing.`,
		Example: `  cra log check
  cra log check --marker level2 --json
  cra log check --marker level2 --reset`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return logCheckRun(cmd.Context(), d, opts)
		},
	}
	addLogCommon(cmd, &opts.logCommon)
	cmd.Flags().StringVar(&opts.marker, "marker", "default", "read marker name")
	cmd.Flags().BoolVar(&opts.reset, "reset", false, "forget the marker first and read from the start")
	return cmd
}

func logCheckRun(ctx context.Context, d *deps, opts *logCheckOptions) error {
	if err := world.CheckMarkerName(opts.marker); err != nil {
		return usageError{err: err}
	}
	l, name, closeLog, err := openWorldLog(ctx, d, opts.repo, false)
	if err != nil {
		return err
	}
	defer closeLog()
	if opts.reset {
		if err := l.ResetMarker(ctx, opts.marker); err != nil {
			return err
		}
	}
	p := newLogRecordPrinter(d, name, opts.json)
	// Print everything, flushed, before the marker moves: a reader that
	// dies midway, or whose output fails, reads the same lines again
	// rather than missing them.
	if _, err := l.CheckThen(ctx, opts.marker, p.print, p.w.Flush); err != nil {
		p.w.Flush()
		return err
	}
	return nil
}
