package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/world"
)

// logQueryOptions are the inputs of 'cra log query'.
type logQueryOptions struct {
	logCommon
	logFilterFlags
	count   bool
	current bool
	limbo   time.Duration
	skipped bool
	noIndex bool
}

func newLogQueryCmd(d *deps, runF func(context.Context, *deps, *logQueryOptions) error) *cobra.Command {
	opts := &logQueryOptions{}
	cmd := &cobra.Command{
		Use:   "query",
		Short: "Select entries, or the agents' current states",
		Long: `Print the entries that match every filter given, streaming the log. Lines
of the current format that cannot match are skipped before parsing.

--current prints the latest status of each agent; --limbo D prints the
agents neither verified nor failed whose latest entry (events with their id
included) is older than D, or stamped after now (a clock stepped back:
its silence cannot be told, SILENT says "stamped ahead"). Both read the side index, .clean_room/world.log.idx,
and only the log written since; --status and --id narrow them.

--skipped prints the agent entries the log's fold skips because the
lifecycle forbids them where they stand (a verified written by hand with no
review of the run before it, say): they moved no task. 'cra log compact'
moves them to the archive.`,
		Example: `  cra log query --kind agent --status failed
  cra log query --source bash --since 2h --json
  cra log query --text "captcha" --count
  cra log query --current
  cra log query --limbo 30m
  cra log query --skipped`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return logQueryRun(cmd.Context(), d, opts)
		},
	}
	addLogCommon(cmd, &opts.logCommon)
	addLogFilterFlags(cmd, &opts.logFilterFlags)
	f := cmd.Flags()
	f.BoolVar(&opts.count, "count", false, "print only the number of matching entries")
	f.BoolVar(&opts.current, "current", false, "print the latest status of each agent")
	f.DurationVar(&opts.limbo, "limbo", 0, "print agents neither verified nor failed and silent for longer than this")
	f.BoolVar(&opts.skipped, "skipped", false, "print the agent entries the lifecycle forbids, which the log's fold skips")
	f.BoolVar(&opts.noIndex, "no-index", false, "replay the whole log instead of using the side index (for comparison)")
	return cmd
}

func logQueryRun(ctx context.Context, d *deps, opts *logQueryOptions) error {
	now := d.now()
	filter, err := opts.filter(now, d.errOut)
	if err != nil {
		return err
	}
	agentView := opts.current || opts.limbo > 0
	if opts.current && opts.limbo > 0 {
		return usageError{err: errors.New("--current and --limbo are two views: give one")}
	}
	if opts.skipped && (agentView || opts.count || filter.Kind != "" || len(filter.Statuses)+len(filter.Sources)+len(filter.IDs) > 0 ||
		!filter.Since.IsZero() || !filter.Until.IsZero() || filter.Text != "") {
		return usageError{err: errors.New("--skipped takes no filter and no other view")}
	}
	if opts.limbo < 0 {
		return usageError{err: fmt.Errorf("--limbo %v: give a positive duration", opts.limbo)}
	}
	if agentView && (filter.Kind != "" || len(filter.Sources) > 0 || !filter.Since.IsZero() || !filter.Until.IsZero() || filter.Text != "") {
		return usageError{err: errors.New("--current and --limbo take only --status and --id")}
	}
	l, name, closeLog, err := openWorldLog(ctx, d, opts.repo, false)
	if err != nil {
		return err
	}
	defer closeLog()
	if fl, ok := l.(*world.Log); ok {
		fl.UseIndex = !opts.noIndex
	}
	if opts.skipped {
		return logPrintSkipped(ctx, d, l, opts.json)
	}
	if agentView {
		return logPrintAgents(ctx, d, l, opts, filter, now)
	}
	if opts.count {
		n := 0
		err := l.Select(ctx, filter, func(r *world.Record) error {
			if r.Err != nil {
				logWarnMalformed(d, name, r)
				return nil
			}
			n++
			return nil
		})
		if err != nil {
			return err
		}
		if opts.json {
			return encodeJSONLines(d.out, map[string]int{"count": n})
		}
		_, err = fmt.Fprintln(d.out, n)
		return err
	}
	p := newLogRecordPrinter(d, name, opts.json)
	if err := l.Select(ctx, filter, p.print); err != nil {
		p.w.Flush()
		return err
	}
	return p.w.Flush()
}

func logPrintAgents(ctx context.Context, d *deps, l world.Store, opts *logQueryOptions, filter world.Filter, now time.Time) error {
	if opts.count {
		// A count reads only the side index, not the agents' lines.
		n, err := l.CountAgents(ctx, opts.limbo, filter.Match)
		if err != nil {
			return err
		}
		if opts.json {
			return encodeJSONLines(d.out, map[string]int{"count": n})
		}
		_, err = fmt.Fprintln(d.out, n)
		return err
	}
	var agents []world.Agent
	var err error
	if opts.limbo > 0 {
		agents, err = l.Limbo(ctx, opts.limbo)
	} else {
		agents, err = l.Current(ctx)
	}
	if err != nil {
		return err
	}
	kept := agents[:0]
	for _, a := range agents {
		if filter.Match(world.Entry{Kind: world.KindAgent, Status: a.Status, ID: a.ID, Time: a.Since}) {
			kept = append(kept, a)
		}
	}
	agents = kept
	w := bufio.NewWriter(d.out)
	if opts.json {
		if err := encodeJSONLines(w, agents...); err != nil {
			return err
		}
		return w.Flush()
	}
	if len(agents) == 0 {
		if opts.limbo > 0 {
			fmt.Fprintf(w, "no agent in limbo: every unsettled agent moved within %v\n", opts.limbo)
		} else {
			fmt.Fprintln(w, "no agents in the log")
		}
		return w.Flush()
	}
	rows := [][]string{{"ID", "STATUS", "SINCE", "SILENT", "OUTPUT"}}
	for _, a := range agents {
		out := world.Escape(a.Output)
		if a.Need != "" {
			out += " | need: " + world.Escape(a.Need)
		}
		silent := now.Sub(a.LastSeen).Round(time.Second).String()
		if a.LastSeen.After(now) {
			silent = "stamped ahead" // a clock stepped back: the silence cannot be told
		}
		rows = append(rows, []string{world.Escape(a.ID), string(a.Status), a.Since.Format("2006-01-02T15:04:05Z"),
			silent, clipRunes(out, 60)})
	}
	if err := writeTable(w, rows); err != nil {
		return err
	}
	return w.Flush()
}

// logSkippedJSON is a skipped entry as JSON output.
type logSkippedJSON struct {
	world.Skip
	Why string `json:"why"`
}

func logPrintSkipped(ctx context.Context, d *deps, l world.Store, asJSON bool) error {
	skips, total, err := l.Skipped(ctx)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(d.out)
	if asJSON {
		for _, s := range skips {
			if err := encodeJSONLines(w, logSkippedJSON{Skip: s, Why: s.Err.Error()}); err != nil {
				return err
			}
		}
		return w.Flush()
	}
	if total == 0 {
		fmt.Fprintln(w, "no entry of the world log is skipped: every agent entry follows the lifecycle")
		return w.Flush()
	}
	for _, s := range skips {
		fmt.Fprintln(w, s.String())
	}
	if more := total - len(skips); more > 0 {
		fmt.Fprintf(w, "and %d earlier ones ('cra log compact' archives them all)\n", more)
	}
	return w.Flush()
}
