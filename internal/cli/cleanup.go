package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cra-dev/cra/internal/fleet"
	"github.com/spf13/cobra"
)

type cleanupOptions struct {
	repo   string
	dryRun bool
	json   bool
}

func newCleanupCmd(d *deps, runF func(context.Context, *deps, *cleanupOptions) error) *cobra.Command {
	opts := &cleanupOptions{}
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Rewrite the knowledge index, add missing todos, collapse duplicate tasks",
		Long: `Run the cleanup pass (seed 000), which also runs after every supervisor
run and from the board's Clean Up button:

  1. the pre-pass: pending tasks and directives whose words are alike
     (case, punctuation and inflection aside) are proposed as duplicate
     groups; it decides nothing alone;
  2. the knowledge rewrite: the supervisor model rewrites
     docs/knowledge/_index.md under ## sections, each fact once, and lists
     the todos; a todo that matches no task becomes a pending task with
     source cleanup;
  3. the collapse: the supervisor model groups the pending tasks that ask
     for the same thing; a group whose tasks the pre-pass finds alike (in
     one of its groups, or alike above its floor) is applied: its kept
     task takes the canonical text, the others end as "duplicate of KEEP"
     in failed-blocked/, their text in the world log ('cra log query --id
     ID'), and tasks waiting for them wait for the kept task. Any other
     group is printed, and logged, as a suggestion for a person, never
     applied. 'cra answer ID "not a duplicate"' sends a dropped task back
     to pending.

Each call fails alone: a reply that is malformed twice changes nothing,
and the other call still runs. Every call is recorded in raw.sqlite. One
cleanup runs at a time.

--dry-run runs the pre-pass only: no model is asked, nothing is written.

With 'cra serve' running for the repository the pass runs in the daemon,
which runs one at a time with the board's Clean Up button and keeps the
last pass's report (GET /api/cleanup); its log says it answered "cra
cleanup". Without one it runs here. The report is the same either way.`,
		Example: `  cra cleanup --dry-run
  cra cleanup
  cra cleanup --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return cleanupRun(cmd.Context(), d, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.repo, "repo", ".", "repository root, or a directory inside it")
	f.BoolVar(&opts.dryRun, "dry-run", false, "print the pre-pass's duplicate groups; ask no model and write nothing")
	f.BoolVar(&opts.json, "json", false, "print the pass's report as JSON")
	return cmd
}

func cleanupRun(ctx context.Context, d *deps, opts *cleanupOptions) error {
	command := "cra cleanup"
	if opts.dryRun {
		command += " --dry-run"
	}
	b, err := openOps(ctx, d, opts.repo, false, command)
	if err != nil {
		return err
	}
	if b == nil {
		fmt.Fprintln(d.out, "nothing to clean up: no .clean_room/ here (run 'cra init' first)")
		return nil
	}
	defer b.Close()
	rep, err := b.Cleanup(ctx, opts.dryRun)
	if errors.Is(err, fleet.ErrCleanupRunning) {
		return fmt.Errorf("%w: wait for it to finish, then run 'cra cleanup' again", err)
	}
	if err != nil {
		return err
	}
	if opts.json {
		if err := encodeJSON(d.out, rep); err != nil {
			return err
		}
	} else {
		printCleanup(d, rep)
	}
	if rep.Rewrite.Failed() || rep.Collapse.Failed() {
		return silentError{code: exitFailure}
	}
	return nil
}

func printCleanup(d *deps, rep *fleet.CleanupReport) {
	w := d.out
	fmt.Fprintf(w, "pre-pass: %s of possible duplicates among %s\n", countNoun(len(rep.Groups), "group"), countNoun(rep.Pending, "pending task"))
	for _, g := range rep.Groups {
		rows := make([][]string, len(g.IDs))
		for i, id := range g.IDs {
			rows[i] = []string{id, g.Texts[i]}
		}
		writeColumns(w, "  ", rows)
	}
	if rep.DryRun {
		fmt.Fprintln(w, "dry run: no model was asked and nothing was written")
		return
	}
	switch {
	case rep.Rewrite.Failed():
		fmt.Fprintf(w, "knowledge rewrite failed: %s; nothing changed\n", rep.Rewrite.Err)
	case rep.Index != "":
		fmt.Fprintf(w, "rewrote %s (%s removed)\n", rep.Index, countNoun(rep.Removed, "duplicate line"))
	default:
		fmt.Fprintln(w, "knowledge index unchanged")
	}
	for _, a := range rep.Added {
		fmt.Fprintf(w, "added %s (%s): %s\n", a.ID, a.Priority, a.Title)
	}
	for _, i := range rep.Ignored {
		fmt.Fprintf(w, "  not added: %s (%s)\n", i.Line, i.Reason)
	}
	if rep.Collapse.Failed() {
		fmt.Fprintf(w, "collapse failed: %s; nothing changed\n", rep.Collapse.Err)
	}
	for _, m := range rep.Merged {
		fmt.Fprintf(w, "merged %s into %s: %s\n", strings.Join(m.Dropped, ", "), m.Keep, m.Canonical)
		if len(m.Relinked) > 0 {
			fmt.Fprintf(w, "  now waiting for %s: %s\n", m.Keep, strings.Join(m.Relinked, ", "))
		}
	}
	for _, s := range rep.Skipped {
		fmt.Fprintf(w, "  skipped: %s (%s)\n", s.Line, s.Reason)
	}
	for _, s := range rep.Suggested {
		fmt.Fprintf(w, "suggested, not applied: merge %s into %s as %q\n  %s; a person may merge them by hand\n",
			strings.Join(s.Drops, ", "), s.Keep, s.Canonical, s.Reason)
	}
	if !rep.Collapse.Failed() && len(rep.Merged) == 0 && len(rep.Skipped) == 0 && len(rep.Suggested) == 0 {
		fmt.Fprintln(w, "no duplicates collapsed")
	}
}
