package cli

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/world"
)

// logCompactOptions are the inputs of 'cra log compact'.
type logCompactOptions struct {
	logCommon
	eventsBefore string
}

func newLogCompactCmd(d *deps, runF func(context.Context, *deps, *logCompactOptions) error) *cobra.Command {
	opts := &logCompactOptions{}
	cmd := &cobra.Command{
		Use:   "compact",
		Short: "Move the history of verified agents out of the log",
		Long: `Rewrite the world log without the history of verified agents: each keeps
its start entry (the criteria) and its verified entry (its latest state);
its other entries and the events with its id move to
.clean_room/world.log.archive. The latest state of every agent, every line of
an agent not verified, and malformed lines are always kept. With
--events-before, events older than that which belong to no agent move too.
Writers wait meanwhile; read markers keep their place.`,
		Example: `  cra log compact
  cra log compact --events-before 720h`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return logCompactRun(cmd.Context(), d, opts)
		},
	}
	addLogCommon(cmd, &opts.logCommon)
	cmd.Flags().StringVar(&opts.eventsBefore, "events-before", "", "also move events of no agent older than this: RFC 3339, a date, or a duration ago")
	return cmd
}

func logCompactRun(ctx context.Context, d *deps, opts *logCompactOptions) error {
	before, err := logParseWhen("--events-before", opts.eventsBefore, d.now())
	if err != nil {
		return err
	}
	s, name, closeLog, err := openWorldLog(ctx, d, opts.repo, false)
	if err != nil {
		return err
	}
	defer closeLog()
	l, ok := s.(*world.Log)
	if !ok {
		return fmt.Errorf("%s is not compacted: PostgreSQL keeps every line, and its readers go by index, not by reading the whole log", name)
	}
	stats, err := l.Compact(ctx, world.CompactOptions{EventsBefore: before})
	if err != nil {
		return err
	}
	if opts.json {
		return encodeJSONLines(d.out, stats)
	}
	archive := filepath.Join(filepath.Dir(name), filepath.Base(stats.Archive))
	_, err = fmt.Fprintf(d.out, "compacted %s: kept %d of %d lines; moved %d to %s (history of %d verified agents)\n",
		name, stats.Kept, stats.Lines, stats.Dropped, archive, stats.Verified)
	return err
}
