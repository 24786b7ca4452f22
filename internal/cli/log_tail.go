package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

// logTailOptions are the inputs of 'cra log tail'.
type logTailOptions struct {
	logCommon
	logFilterFlags
	lines  int
	follow bool
}

func newLogTailCmd(d *deps, runF func(context.Context, *deps, *logTailOptions) error) *cobra.Command {
	opts := &logTailOptions{}
	cmd := &cobra.Command{
		Use:   "tail",
		Short: "Print the last entries, and with -f the new ones as they come",
		Long: `Print the last N entries that match the filters; with -f keep printing new
ones until interrupted. Following goes on across 'cra log compact'.`,
		Example: `  cra log tail -n 20
  cra log tail -f --kind agent
  cra log tail -f --id T-12 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return logTailRun(cmd.Context(), d, opts)
		},
	}
	addLogCommon(cmd, &opts.logCommon)
	addLogFilterFlags(cmd, &opts.logFilterFlags)
	cmd.Flags().IntVarP(&opts.lines, "lines", "n", 10, "how many of the last entries to print")
	cmd.Flags().BoolVarP(&opts.follow, "follow", "f", false, "keep printing entries as they are appended")
	return cmd
}

func logTailRun(ctx context.Context, d *deps, opts *logTailOptions) error {
	if opts.lines < 0 {
		return usageError{err: fmt.Errorf("-n %d: give a count >= 0", opts.lines)}
	}
	filter, err := opts.filter(d.now(), d.errOut)
	if err != nil {
		return err
	}
	l, name, closeLog, err := openWorldLog(ctx, d, opts.repo, false)
	if err != nil {
		return err
	}
	defer closeLog()
	p := newLogRecordPrinter(d, name, opts.json)
	end, err := l.Tail(ctx, opts.lines, filter, p.print)
	if err != nil {
		p.w.Flush()
		return err
	}
	if err := p.w.Flush(); err != nil || !opts.follow {
		return err
	}
	p.flush = true
	err = l.Follow(ctx, end, filter, p.print)
	if errors.Is(err, context.Canceled) {
		return nil // an interrupt is how following ends
	}
	return err
}
