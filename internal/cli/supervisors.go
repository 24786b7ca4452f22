package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/fleet"
)

func newSupervisorsCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "supervisors",
		Short: "Run the code_style, design and internaliser supervisors, or show their triggers",
		Long: `Seed 003's supervisors read the recent work and keep the knowledge store
(docs/knowledge/) and the board's directives:

  code_style    conventions/: naming, formatting, error handling; cleanup directives
  design        design/: architecture and data model; functional directives
  internaliser  lessons/ and domain/: what was learned; items for a person's review

They use the supervisor model role ([models.supervisor], else the
reasoning model). 'cra serve' runs them when their triggers say so:
code_style every 5 completions (recycler verdicts), the internaliser every
3, all three on a milestone complete, design on a re-plan or an aborted
task, and all of them when the urgency reaches 1.0 (+0.3 a verdict that is
not full_complete, +1.0 a task blocked, +0.2 churn, +0.5 design's drift).
A run that finds what the previous one found doubles that supervisor's
interval. Without a reachable model they are skipped with a warning.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newSupervisorsRunCmd(d, nil), newSupervisorsStatusCmd(d, nil))
	return cmd
}

type supervisorsOptions struct {
	repo string
	only []string
	json bool
}

func newSupervisorsRunCmd(d *deps, runF func(context.Context, *deps, *supervisorsOptions) error) *cobra.Command {
	opts := &supervisorsOptions{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the supervisors now, whatever their triggers",
		Long: `Run the enabled supervisors now (or only those named with --only), in
the order code_style, design, internaliser. Each gets about 5k tokens of
input (the remit, the milestones, the verified and pending tasks, the
latest reviews, the knowledge, and for code_style the files changed
recently) and answers in seed 003's JSON schema, checked strictly; a
malformed reply is asked again once, then discarded with a warning and
nothing changes. Documents are written in the store's format (a
supervisor's first run in empty folders is a bootstrap run that
establishes baselines); directives become board tasks of kind directive.
Aged and surplus cleanup directives are dropped afterwards, their text
kept in the log. Every run is in .clean_room/supervisors.jsonl and the
world log ([event:supervisor]), every model call in raw.sqlite.`,
		Example: `  cra supervisors run
  cra supervisors run --only code_style --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return supervisorsRunRun(cmd.Context(), d, opts)
		},
	}
	cmd.Flags().StringVar(&opts.repo, "repo", ".", "repository root, or a directory inside it")
	cmd.Flags().StringSliceVar(&opts.only, "only", nil, "run only these supervisors (code_style, design, internaliser)")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the report as JSON")
	return cmd
}

// newSupervisorRunner returns the supervisors of an opened board, their
// lines to out: what 'cra supervisors' uses (the daemon's come from the
// fleet too).
func newSupervisorRunner(ctx context.Context, d *deps, tb *taskBoard, out io.Writer) (*fleet.SupervisorRunner, error) {
	return tb.fleet.Supervisors(ctx, out)
}

func supervisorsRunRun(ctx context.Context, d *deps, opts *supervisorsOptions) error {
	var only []fleet.Supervisor
	for _, n := range opts.only {
		s, err := fleet.ParseSupervisor(strings.TrimSpace(n))
		if err != nil {
			return usageError{err: fmt.Errorf("--only: %w", err)}
		}
		only = append(only, s)
	}
	tb, err := openBoard(ctx, d, opts.repo, true)
	if err != nil {
		return err
	}
	defer tb.Close()
	var out io.Writer = d.out
	if opts.json {
		out = d.errOut
	}
	r, err := newSupervisorRunner(ctx, d, tb, out)
	if err != nil {
		return err
	}
	rep, err := r.Run(ctx, only)
	if err != nil {
		return err
	}
	if len(rep.Runs) == 0 {
		return fmt.Errorf("no supervisor ran: [supervisors] in .clean_room/config.toml disables them all; name the ones to run anyway with --only (%s), or enable them", strings.Join(supervisorNames(), ", "))
	}
	// A run the model skipped or whose reply was discarded is a failure
	// to report, as 'cra cleanup' reports a failed call.
	failed := slices.ContainsFunc(rep.Runs, func(rec fleet.SupervisorRecord) bool { return !rec.Ran() })
	if opts.json {
		if err := encodeJSON(d.out, rep); err != nil {
			return err
		}
		if failed {
			return silentError{code: exitFailure}
		}
		return nil
	}
	for _, rec := range rep.Runs {
		for _, w := range rec.Written {
			if w.Change != "" {
				fmt.Fprintf(d.out, "  wrote %s/%s (%s, %s)\n", fleet.KnowledgeDir, w.Path, w.Change, w.Status)
			}
		}
		for _, why := range rec.Refused {
			fmt.Fprintf(d.out, "  refused %s\n", why)
		}
		for _, id := range rec.Directives {
			fmt.Fprintf(d.out, "  directive %s\n", id)
		}
	}
	if failed {
		fmt.Fprintln(d.errOut, "cra: a supervisor did not run (see above) and changed nothing: check the model with 'cra doctor', then run 'cra supervisors run' again")
		return silentError{code: exitFailure}
	}
	return nil
}

// supervisorNames are the supervisors' names, for messages.
func supervisorNames() []string {
	var names []string
	for _, s := range fleet.Supervisors() {
		names = append(names, string(s))
	}
	return names
}

func newSupervisorsStatusCmd(d *deps, runF func(context.Context, *deps, *supervisorsOptions) error) *cobra.Command {
	opts := &supervisorsOptions{}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the supervisors' counters, urgency, intervals and run log",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return supervisorsStatusRun(cmd.Context(), d, opts)
		},
	}
	cmd.Flags().StringVar(&opts.repo, "repo", ".", "repository root, or a directory inside it")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	return cmd
}

func supervisorsStatusRun(ctx context.Context, d *deps, opts *supervisorsOptions) error {
	tb, err := openBoard(ctx, d, opts.repo, false)
	if err != nil {
		return err
	}
	if tb == nil {
		fmt.Fprintln(d.out, "no supervisors yet: no .clean_room/ here (run 'cra init')")
		return nil
	}
	defer tb.Close()
	r, err := newSupervisorRunner(ctx, d, tb, nil)
	if err != nil {
		return err
	}
	st, err := r.Status(ctx)
	if err != nil {
		return err
	}
	if opts.json {
		return encodeJSON(d.out, st)
	}
	fmt.Fprintf(d.out, "urgency: %.1f of %.1f", st.Urgency, fleet.UrgencyThreshold)
	if !st.UrgencySince.IsZero() {
		fmt.Fprintf(d.out, " (since %s)", st.UrgencySince.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(d.out, "\npending cleanup directives: %d of %d\n", st.PendingCleanup, st.Cap)
	if st.Polish {
		fmt.Fprintln(d.out, "polish phase: every planned task is verified; only cleanup directives run")
	}
	rows := [][]string{{"SUPERVISOR", "ENABLED", "COMPLETIONS", "INTERVAL", "LAST RUN", "DUE"}}
	for _, s := range st.Supervisors {
		iv := "-"
		if s.Interval > 0 {
			iv = fmt.Sprint(s.Interval)
			if s.Interval != s.Base {
				iv += fmt.Sprintf(" (base %d)", s.Base)
			}
		}
		last := "never"
		if !s.LastRun.IsZero() {
			last = s.LastRun.UTC().Format(time.RFC3339)
		}
		due := strings.Join(s.Due, "; ")
		if due == "" {
			due = "-"
		}
		rows = append(rows, []string{string(s.Name), fmt.Sprint(s.Enabled), fmt.Sprint(s.Completions), iv, last, due})
	}
	if err := writeTable(d.out, rows); err != nil {
		return err
	}
	if len(st.Runs) > 0 {
		fmt.Fprintln(d.out, "runs:")
	}
	for _, rec := range st.Runs {
		fmt.Fprintf(d.out, "  %s %s: %s\n", rec.Started.UTC().Format(time.RFC3339), rec.Supervisor, clipRunes(fleet.DescribeSupervisorRun(&rec), 160))
	}
	return nil
}
