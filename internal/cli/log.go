package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/workspace"
	"github.com/cra-dev/cra/internal/world"
)

func newLogCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "log",
		Short: "Write and read the world log, the truth of what happened",
		Long: `The world log, .clean_room/world.log, is one append-only plain-text file that
records what happened: events (facts) and agent lifecycles.
Folders and board columns are views of it.

  [2025-01-02T03:04:05.678Z][event:bash][git-status] clean
  [2025-01-02T03:04:05.678Z][agent:start][T-12] add a flag | need: tests pass

Timestamps are RFC 3339 UTC with milliseconds. In outputs, '\' and control
characters are escaped (\\ \n \r \t \xNN \uNNNN), so one entry is one line,
and a '|' that would read as the start of " | need: " is written \|.
Lines of the old format "[timestamp] [source] [task-id:status] description"
are read too; cra writes only the new one.

An agent moves start → active → finish → verified | retry | failed;
start and retry may also go to failed, active to retry, retry to active,
and failed to retry only after an [event:user] for it. cra refuses any other
step and names the agent's current status.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(
		newLogEventCmd(d, nil),
		newLogAgentCmd(d, nil),
		newLogCheckCmd(d, nil),
		newLogQueryCmd(d, nil),
		newLogTailCmd(d, nil),
		newLogCompactCmd(d, nil),
		newLogExportCmd(d, nil),
	)
	return cmd
}

// logCommon are the flags of every 'cra log' subcommand.
type logCommon struct {
	repo string
	json bool
}

func addLogCommon(cmd *cobra.Command, c *logCommon) {
	cmd.Flags().StringVar(&c.repo, "repo", ".", "repository root (or a directory inside it)")
	cmd.Flags().BoolVar(&c.json, "json", false, "print JSON, one object per line")
}

// openWorldLog opens the world log of the repository at repoFlag: the file
// .clean_room/world.log, or the PostgreSQL one when [fleet]
// database_url_env is configured. With create it makes the state
// directory and the file; without, a missing file is an error that says
// how a log begins. close releases the log.
func openWorldLog(ctx context.Context, d *deps, repoFlag string, create bool) (_ world.Store, name string, close func(), _ error) {
	repo, err := workspace.Find(repoFlag)
	if err != nil {
		return nil, "", nil, err
	}
	cfg, err := workspace.LoadConfig(repo)
	if err != nil {
		return nil, "", nil, err
	}
	if workspace.WorldBackendOf(cfg) == workspace.WorldPostgres {
		s, close, err := workspace.OpenPostgresWorld(ctx, cfg, os.Getenv, d.now)
		if err != nil {
			return nil, "", nil, err
		}
		return s, "world_log (PostgreSQL)", close, nil
	}
	stateDir := workspace.StateDir(repo)
	if create {
		if stateDir, err = workspace.EnsureStateDir(repo); err != nil {
			return nil, "", nil, err
		}
	} else if _, err := os.Stat(world.Path(stateDir)); errors.Is(err, os.ErrNotExist) {
		return nil, "", nil, fmt.Errorf("no world log in %s: nothing has been logged yet (write an entry with 'cra log event' or 'cra log agent')", stateDir)
	}
	l, err := world.Open(stateDir)
	if err != nil {
		return nil, "", nil, err
	}
	l.Now = d.now
	name = relPath(repo, l.Path())
	l.Malformed = func(r *world.Record) { logWarnMalformed(d, name, r) }
	l.Broken = func(r *world.Record, err *world.TransitionError) { logWarnSkipped(d, name, r.Line, err) }
	return l, name, func() {}, nil
}

// logSyncPolicy resolves the fsync policy: flag > [world] fsync > "agent"
// (a durability knob with a safe default, not a required input).
func logSyncPolicy(d *deps, repoFlag, flag string) (world.SyncPolicy, error) {
	if flag != "" {
		p, err := world.ParseSyncPolicy(flag)
		if err != nil {
			return 0, usageError{err: err}
		}
		return p, nil
	}
	repo, err := workspace.Find(repoFlag)
	if err != nil {
		return 0, err
	}
	cfg, err := loadConfig(d, repo)
	if err != nil {
		return 0, err
	}
	if cfg != nil && cfg.World != nil && cfg.World.Fsync != "" {
		return world.ParseSyncPolicy(cfg.World.Fsync)
	}
	return world.SyncAgent, nil
}

// logWarnMalformed reports a malformed line and lets the reader go on (seed
// 002: warn on malformed).
func logWarnMalformed(d *deps, name string, r *world.Record) {
	fmt.Fprintf(d.errOut, "warning: %s:%d: malformed line: %v\n", name, r.Line, r.Err.Err)
}

// logWarnSkipped reports an agent entry the fold skips: it moves no task,
// and a person should know it is there.
func logWarnSkipped(d *deps, name string, line int64, err *world.TransitionError) {
	fmt.Fprintf(d.errOut, "warning: %s:%d: skipped, the lifecycle forbids it: %v\n", name, line, err)
}

// logRecordJSON is a line of the log as JSON output.
type logRecordJSON struct {
	Line int64 `json:"line,omitempty"`
	world.Entry
	// Skipped says why the fold skips the entry.
	Skipped string `json:"skipped,omitempty"`
}

// logRecordPrinter prints records: the line as written, or JSON lines.
type logRecordPrinter struct {
	d     *deps
	name  string
	json  bool
	w     *bufio.Writer
	flush bool // after every record, for following
}

func newLogRecordPrinter(d *deps, name string, asJSON bool) *logRecordPrinter {
	return &logRecordPrinter{d: d, name: name, json: asJSON, w: bufio.NewWriterSize(d.out, 64<<10)}
}

func (p *logRecordPrinter) print(r *world.Record) error {
	if r.Err != nil {
		if err := p.w.Flush(); err != nil {
			return err
		}
		logWarnMalformed(p.d, p.name, r)
		return nil
	}
	rec := logRecordJSON{Line: r.Line, Entry: r.Entry}
	if r.Skipped != nil {
		rec.Skipped = r.Skipped.Error()
	}
	if p.json {
		if err := encodeJSONLines(p.w, rec); err != nil {
			return err
		}
	} else {
		p.w.Write(r.Raw)
		p.w.WriteByte('\n')
	}
	if r.Skipped != nil {
		if err := p.w.Flush(); err != nil {
			return err
		}
		logWarnSkipped(p.d, p.name, r.Line, r.Skipped)
	}
	if p.flush {
		return p.w.Flush()
	}
	return nil
}

// logPrintEntry prints an entry just written.
func logPrintEntry(d *deps, asJSON bool, e world.Entry) error {
	if asJSON {
		return encodeJSONLines(d.out, e)
	}
	line, err := world.Format(e)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(d.out, line)
	return err
}

// logReadOutput returns arg, or standard input when arg is "-" (without one
// trailing newline), for outputs too long or too awkward for a shell word.
func logReadOutput(d *deps, arg string) (string, error) {
	if arg != "-" {
		return arg, nil
	}
	data, err := io.ReadAll(d.in)
	if err != nil {
		return "", fmt.Errorf("read output from standard input: %w", err)
	}
	return strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r"), nil
}

func logSourceNames() string {
	var names []string
	for _, s := range world.Sources() {
		names = append(names, string(s))
	}
	return strings.Join(names, ", ")
}

func logStatusNames() string {
	var names []string
	for _, s := range world.Statuses() {
		names = append(names, string(s))
	}
	return strings.Join(names, ", ")
}

// openForAppend is what both appending commands do first: resolve the
// fsync policy, read the output ("-" is stdin), open the log. The fsync
// policy is the file's: PostgreSQL commits every append.
func openForAppend(ctx context.Context, d *deps, c logCommon, fsync, rawOutput string) (world.Store, string, func(), error) {
	sync, err := logSyncPolicy(d, c.repo, fsync)
	if err != nil {
		return nil, "", nil, err
	}
	output, err := logReadOutput(d, rawOutput)
	if err != nil {
		return nil, "", nil, err
	}
	s, _, close, err := openWorldLog(ctx, d, c.repo, true)
	if err != nil {
		return nil, "", nil, err
	}
	if l, ok := s.(*world.Log); ok {
		l.Sync = sync
	}
	return s, output, close, nil
}

// logFilterFlags are the entry filters shared by query and tail.
type logFilterFlags struct {
	kind     string
	statuses []string
	sources  []string
	ids      []string
	since    string
	until    string
	text     string
}

func addLogFilterFlags(cmd *cobra.Command, ff *logFilterFlags) {
	f := cmd.Flags()
	f.StringVar(&ff.kind, "kind", "", "event or agent")
	f.StringSliceVar(&ff.statuses, "status", nil, "agent entries with this status (repeatable, comma-separated)")
	f.StringSliceVar(&ff.sources, "source", nil, "events from this source (repeatable, comma-separated)")
	f.StringSliceVar(&ff.ids, "id", nil, "entries with this identifier or session id (repeatable)")
	f.StringVar(&ff.since, "since", "", "entries at or after this time: RFC 3339, a date, or a duration ago like 2h")
	f.StringVar(&ff.until, "until", "", "entries before this time: RFC 3339, a date, or a duration ago")
	f.StringVar(&ff.text, "text", "", "lines containing this text, as written (escaped), like grep")
}

// filter reads the flags. A source this cra does not write is queried
// anyway, since readers accept newer logs' sources, but warned of on w:
// it is more often a typo.
func (ff *logFilterFlags) filter(now time.Time, w io.Writer) (world.Filter, error) {
	var f world.Filter
	for _, s := range ff.sources {
		if !world.Source(s).Known() {
			fmt.Fprintf(w, "warning: --source %q: cra writes no such source (it writes %s); only lines of a newer cra can match\n", s, logSourceNames())
		}
	}
	switch world.Kind(ff.kind) {
	case "", world.KindEvent, world.KindAgent:
		f.Kind = world.Kind(ff.kind)
	default:
		return f, usageError{err: fmt.Errorf("--kind %q: use event or agent", ff.kind)}
	}
	for _, s := range ff.statuses {
		if !world.Status(s).Valid() {
			return f, usageError{err: fmt.Errorf("--status %q: use one of %s", s, logStatusNames())}
		}
		f.Statuses = append(f.Statuses, world.Status(s))
	}
	for _, s := range ff.sources {
		f.Sources = append(f.Sources, world.Source(s))
	}
	f.IDs = ff.ids
	var err error
	if f.Since, err = logParseWhen("--since", ff.since, now); err != nil {
		return f, err
	}
	if f.Until, err = logParseWhen("--until", ff.until, now); err != nil {
		return f, err
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return f, usageError{err: fmt.Errorf("--since %s is not before --until %s: nothing can match; a duration counts back from now, so the longer one goes in --since",
			f.Since.UTC().Format(time.RFC3339), f.Until.UTC().Format(time.RFC3339))}
	}
	f.Text = ff.text
	return f, nil
}

// logParseWhen reads a time flag: RFC 3339, a date (UTC), or a duration ago.
func logParseWhen(flag, s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if dur, err := time.ParseDuration(s); err == nil {
		if dur < 0 {
			return time.Time{}, usageError{err: fmt.Errorf("%s %q: a duration counts back from now and cannot be negative: write %s", flag, s, strings.TrimPrefix(s, "-"))}
		}
		return now.Add(-dur), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	return time.Time{}, usageError{err: fmt.Errorf("%s %q: use RFC 3339 (2025-01-02T15:04:05Z), a date (2025-01-02) or a duration ago (90m)", flag, s)}
}
