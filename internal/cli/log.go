package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/world"
)

func newLogCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "log",
		Short: "Write and read the world log, the truth of what happened",
		Long: `The world log, .clean_room/world.log, is one append-only plain-text file that
records what happened: events (facts) and agent lifecycles (seed 002).
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

// openWorldLog opens the world log of the repository at repoFlag. With create
// it makes the state directory and the log; without, a missing log is an
// error that says how a log begins.
func openWorldLog(d *deps, repoFlag string, create bool) (*world.Log, string, error) {
	repo, err := findRepo(repoFlag)
	if err != nil {
		return nil, "", err
	}
	stateDir := filepath.Join(repo, config.Dir)
	if create {
		if stateDir, err = config.EnsureStateDir(repo); err != nil {
			return nil, "", err
		}
	} else if _, err := os.Stat(world.Path(stateDir)); errors.Is(err, os.ErrNotExist) {
		return nil, "", fmt.Errorf("no world log in %s: nothing has been logged yet (write an entry with 'cra log event' or 'cra log agent')", stateDir)
	}
	l, err := world.Open(stateDir)
	if err != nil {
		return nil, "", err
	}
	l.Now = d.now
	name := relPath(repo, l.Path())
	l.Malformed = func(r *world.Record) { logWarnMalformed(d, name, r) }
	return l, name, nil
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
	repo, err := findRepo(repoFlag)
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

// logRecordJSON is a line of the log as JSON output.
type logRecordJSON struct {
	Line int64 `json:"line,omitempty"`
	world.Entry
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
	if p.json {
		if err := encodeJSONLines(p.w, logRecordJSON{Line: r.Line, Entry: r.Entry}); err != nil {
			return err
		}
	} else {
		p.w.Write(r.Raw)
		p.w.WriteByte('\n')
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

// logEventOptions are the inputs of 'cra log event'.
type logEventOptions struct {
	logCommon
	source string
	id     string
	output string
	fsync  string
}

func newLogEventCmd(d *deps, runF func(context.Context, *deps, *logEventOptions) error) *cobra.Command {
	opts := &logEventOptions{}
	cmd := &cobra.Command{
		Use:   "event <source> <identifier> <output>",
		Short: "Append an event: a fact, not tracked",
		Long: `Append [now][event:SOURCE][IDENTIFIER] OUTPUT to the world log.

Sources: ` + logSourceNames() + `.
An [event:user] for a failed agent is a person's answer: it allows the
agent's retry. OUTPUT "-" reads the output from standard input.`,
		Example: `  cra log event bash git-status "clean"
  cra log event user T-12 "captcha solved: boats"
  go test ./... 2>&1 | cra log event bash go-test -`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.source, opts.id, opts.output = args[0], args[1], args[2]
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return logEventRun(cmd.Context(), d, opts)
		},
	}
	addLogCommon(cmd, &opts.logCommon)
	cmd.Flags().StringVar(&opts.fsync, "fsync", "", "when appends are fsynced: agent (lifecycle entries only), always, never (default: [world] fsync in config, else agent)")
	return cmd
}

func logEventRun(ctx context.Context, d *deps, opts *logEventOptions) error {
	src := world.Source(opts.source)
	if !src.Known() {
		return usageError{err: fmt.Errorf("unknown event source %q: use one of %s", opts.source, logSourceNames())}
	}
	if opts.id == "" {
		return usageError{err: errors.New("empty identifier: name what the event is about")}
	}
	l, output, err := openForAppend(d, opts.logCommon, opts.fsync, opts.output)
	if err != nil {
		return err
	}
	e, err := l.Event(ctx, src, opts.id, output)
	if err != nil {
		return err
	}
	return logPrintEntry(d, opts.json, e)
}

// openForAppend is what both appending commands do first: resolve the
// fsync policy, read the output ("-" is stdin), open the log.
func openForAppend(d *deps, c logCommon, fsync, rawOutput string) (*world.Log, string, error) {
	sync, err := logSyncPolicy(d, c.repo, fsync)
	if err != nil {
		return nil, "", err
	}
	output, err := logReadOutput(d, rawOutput)
	if err != nil {
		return nil, "", err
	}
	l, _, err := openWorldLog(d, c.repo, true)
	if err != nil {
		return nil, "", err
	}
	l.Sync = sync
	return l, output, nil
}

// logAgentOptions are the inputs of 'cra log agent'.
type logAgentOptions struct {
	logCommon
	status string
	id     string
	output string
	need   string
	fsync  string
}

func newLogAgentCmd(d *deps, runF func(context.Context, *deps, *logAgentOptions) error) *cobra.Command {
	opts := &logAgentOptions{}
	cmd := &cobra.Command{
		Use:   "agent <status> <session-id> <output>",
		Short: "Append an agent lifecycle step, if the lifecycle allows it",
		Long: `Append [now][agent:STATUS][SESSION-ID] OUTPUT | need: NEED to the world log.

Statuses: ` + logStatusNames() + `.
The step is checked against the agent's current status, read from the log;
an illegal one is refused, nothing is written, and the error names the
current status. --need on start gives the success criteria, kept with the
agent; on failed it says what a person must do. OUTPUT "-" reads the output
from standard input.`,
		Example: `  cra log agent start T-12 "add a --json flag" --need "tests pass"
  cra log agent active T-12 "running solve"
  cra log agent failed T-12 "captcha required" --need "solve the captcha"`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.status, opts.id, opts.output = args[0], args[1], args[2]
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return logAgentRun(cmd.Context(), d, opts)
		},
	}
	addLogCommon(cmd, &opts.logCommon)
	cmd.Flags().StringVar(&opts.need, "need", "", "success criteria (on start) or what a person must do (on failed)")
	cmd.Flags().StringVar(&opts.fsync, "fsync", "", "when appends are fsynced: agent (lifecycle entries only), always, never (default: [world] fsync in config, else agent)")
	return cmd
}

func logAgentRun(ctx context.Context, d *deps, opts *logAgentOptions) error {
	status := world.Status(opts.status)
	if !status.Valid() {
		return usageError{err: fmt.Errorf("unknown agent status %q: use one of %s", opts.status, logStatusNames())}
	}
	if opts.id == "" {
		return usageError{err: errors.New("empty session id")}
	}
	l, output, err := openForAppend(d, opts.logCommon, opts.fsync, opts.output)
	if err != nil {
		return err
	}
	e, err := l.Agent(ctx, status, opts.id, output, opts.need)
	if err != nil {
		return err
	}
	return logPrintEntry(d, opts.json, e)
}

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
	l, name, err := openWorldLog(d, opts.repo, false)
	if err != nil {
		return err
	}
	if opts.reset {
		if err := l.ResetMarker(opts.marker); err != nil {
			return err
		}
	}
	p := newLogRecordPrinter(d, name, opts.json)
	// Print everything before the marker moves: a reader that dies midway
	// reads the same lines again rather than missing them.
	if _, err := l.Check(ctx, opts.marker, p.print); err != nil {
		p.w.Flush()
		return err
	}
	return p.w.Flush()
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

// logQueryOptions are the inputs of 'cra log query'.
type logQueryOptions struct {
	logCommon
	logFilterFlags
	count   bool
	current bool
	limbo   time.Duration
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
included) is older than D. Both read the side index, .clean_room/world.log.idx,
and only the log written since; --status and --id narrow them.`,
		Example: `  cra log query --kind agent --status failed
  cra log query --source bash --since 2h --json
  cra log query --text "captcha" --count
  cra log query --current
  cra log query --limbo 30m`,
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
	if opts.limbo < 0 {
		return usageError{err: fmt.Errorf("--limbo %v: give a positive duration", opts.limbo)}
	}
	if agentView && (filter.Kind != "" || len(filter.Sources) > 0 || !filter.Since.IsZero() || !filter.Until.IsZero() || filter.Text != "") {
		return usageError{err: errors.New("--current and --limbo take only --status and --id")}
	}
	l, name, err := openWorldLog(d, opts.repo, false)
	if err != nil {
		return err
	}
	l.UseIndex = !opts.noIndex
	if agentView {
		return logPrintAgents(ctx, d, l, opts, filter, now)
	}
	if opts.count {
		n := 0
		err := l.Query(ctx, filter, func(r *world.Record) error {
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
	if err := l.Query(ctx, filter, p.print); err != nil {
		p.w.Flush()
		return err
	}
	return p.w.Flush()
}

func logPrintAgents(ctx context.Context, d *deps, l *world.Log, opts *logQueryOptions, filter world.Filter, now time.Time) error {
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
	if opts.count {
		if opts.json {
			return encodeJSONLines(d.out, map[string]int{"count": len(agents)})
		}
		_, err := fmt.Fprintln(d.out, len(agents))
		return err
	}
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
		rows = append(rows, []string{world.Escape(a.ID), string(a.Status), a.Since.Format("2006-01-02T15:04:05Z"),
			now.Sub(a.LastSeen).Round(time.Second).String(), clipRunes(out, 60)})
	}
	if err := writeTable(w, rows); err != nil {
		return err
	}
	return w.Flush()
}

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
	l, name, err := openWorldLog(d, opts.repo, false)
	if err != nil {
		return err
	}
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
	l, name, err := openWorldLog(d, opts.repo, false)
	if err != nil {
		return err
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
