package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/fleet"
	"github.com/cra-dev/cra/internal/world"
)

// taskShowOptions are the inputs of 'cra task show'.
type taskShowOptions struct {
	taskCommon
	id string
}

func newTaskShowCmd(d *deps, runF func(context.Context, *deps, *taskShowOptions) error) *cobra.Command {
	opts := &taskShowOptions{}
	cmd := &cobra.Command{
		Use:   "show <id>",
		Short: "Show a task: every field, its folder and its world-log lines",
		Example: `  cra task show t-1a2b3c4d
  cra task show t-1a2b3c4d --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.id = args[0]
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return taskShowRun(cmd.Context(), d, opts)
		},
	}
	addTaskCommon(cmd, &opts.taskCommon)
	return cmd
}

// taskShowJSON is 'cra task show --json': the task, its folder and its
// log entries.
type taskShowJSON struct {
	taskJSON
	Log []world.Entry `json:"log"`
	// Reviews are the recycler's reviews of the task's runs, oldest
	// first.
	Reviews []fleet.Review `json:"reviews"`
}

func taskShowRun(ctx context.Context, d *deps, opts *taskShowOptions) error {
	b, err := openTaskOps(ctx, d, opts.repo, opts.id, "cra task show")
	if err != nil {
		return err
	}
	defer b.Close()
	v, err := b.Show(ctx, opts.id)
	if err != nil {
		return err
	}
	t, folder, entries, reviews := v.Task, v.Folder, v.Entries, v.Reviews
	if len(entries) == 0 {
		entries = nil // "log": null, as ever
	}
	if bad := v.BadReviews; bad > 0 {
		fmt.Fprintf(d.errOut, "warning: %d line%s of %s could not be read and %s skipped\n", bad, plural(bad), v.ReviewFile, map[bool]string{true: "was", false: "were"}[bad == 1])
	}
	if opts.json {
		return encodeJSON(d.out, taskShowJSON{taskJSON: taskJSON{Task: t, Folder: folder}, Log: entries, Reviews: reviews})
	}
	// The task's output, notes and evidence are an agent's and a
	// model's words: shown, never obeyed by the terminal.
	out := terminalSafe(d.out)
	if err := writeTask(out, t, folder, entries); err != nil {
		return err
	}
	if err := writeReviews(out, reviews); err != nil {
		return err
	}
	return writeEvidence(out, v.EvidenceText)
}

// writeEvidence prints the latest review's evidence as the reviewer saw
// it: what validation found, test by test where it could tell.
func writeEvidence(w io.Writer, text string) error {
	if strings.TrimSpace(text) == "" {
		return nil
	}
	fmt.Fprintln(w, "evidence (latest review):")
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if _, err := fmt.Fprintf(w, "  %s\n", line); err != nil {
			return err
		}
	}
	return nil
}

// writeReviews prints the recycler's reviews, oldest first: the verdict,
// why the evidence lowered it, and the note.
func writeReviews(w io.Writer, reviews []fleet.Review) error {
	if len(reviews) == 0 {
		return nil
	}
	fmt.Fprintln(w, "reviews:")
	for _, rv := range reviews {
		verdict := string(rv.Classification)
		if rv.Model != "" && rv.Model != rv.Classification {
			verdict = fmt.Sprintf("%s (the model said %s)", rv.Classification, rv.Model)
		}
		fmt.Fprintf(w, "  run %d, %s, %s: %s → %s, streaks %d/%d\n", rv.Run, rv.Folder, rv.Time.UTC().Format(time.RFC3339), verdict, rv.Action, rv.After.Completion, rv.After.Failure)
		if rv.Withdrawn != "" {
			fmt.Fprintf(w, "    not carried out: %s\n", rv.Withdrawn)
		}
		for _, why := range rv.Lowered {
			fmt.Fprintf(w, "    lowered: %s\n", why)
		}
		if rv.Fallback != "" {
			fmt.Fprintf(w, "    conservative note: %s\n", rv.Fallback)
		}
		if rv.Need != "" {
			fmt.Fprintf(w, "    need: %s\n", rv.Need)
		}
		for _, line := range strings.Split(rv.Note.String(), "\n") {
			if _, err := fmt.Fprintf(w, "    %s\n", line); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeTask prints a task as "field: value" lines, the long texts indented
// below their field, then its log lines.
func writeTask(w io.Writer, t *fleet.Task, folder fleet.Folder, entries []world.Entry) error {
	var rows [][]string
	add := func(name, value string) {
		if value != "" {
			rows = append(rows, []string{name + ":", value})
		}
	}
	when := func(tm time.Time) string {
		if tm.IsZero() {
			return ""
		}
		return tm.UTC().Format(time.RFC3339)
	}
	add("id", t.ID)
	add("title", t.Title)
	add("folder", string(folder))
	add("kind", string(t.Kind))
	add("priority", string(t.Priority))
	add("type", t.Type)
	add("milestone", t.Milestone)
	add("after", strings.Join(t.After, ", "))
	add("agent", t.Agent)
	add("created_at", when(t.CreatedAt))
	add("updated_at", when(t.UpdatedAt))
	add("runs", fmt.Sprint(t.Runs))
	add("consecutive_completion_claims", fmt.Sprint(t.ConsecutiveCompletionClaims))
	add("consecutive_failures", fmt.Sprint(t.ConsecutiveFailures))
	add("processor_auto_requeue", fmt.Sprint(t.ProcessorAutoRequeue))
	if t.EndpointFailures > 0 {
		add("endpoint_failures", fmt.Sprint(t.EndpointFailures))
		add("retry_after", when(t.RetryAfter))
	}
	if r := t.Results; r != nil {
		if r.ExitCode != nil {
			add("results.exit_code", fmt.Sprint(*r.ExitCode))
		}
		add("results.started_at", when(r.StartedAt))
		add("results.finished_at", when(r.FinishedAt))
		if r.DurationMS > 0 {
			add("results.duration_ms", fmt.Sprint(r.DurationMS))
		}
		add("results.branch", r.Branch)
		add("results.commit", r.Commit)
		add("results.diff_stat", r.DiffStat)
		add("results.validation", r.Validation)
		add("results.classification", r.Classification)
		add("results.tokens", r.Usage.String())
	}
	writeColumns(w, "", rows)
	for _, long := range []struct{ name, text string }{
		{"need", t.Need}, {"description", t.Description}, {"notes", t.Notes}, {"results.output", outputOf(t)},
	} {
		if long.text == "" {
			continue
		}
		fmt.Fprintf(w, "%s:\n", long.name)
		for _, line := range strings.Split(long.text, "\n") {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
	fmt.Fprintln(w, "log:")
	if len(entries) == 0 {
		fmt.Fprintln(w, "  (none: run 'cra task rebuild' to log a task dropped in by hand)")
	}
	for _, e := range entries {
		line, err := world.Format(e)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "  %s\n", line); err != nil {
			return err
		}
	}
	return nil
}

func outputOf(t *fleet.Task) string {
	if t.Results == nil {
		return ""
	}
	return t.Results.Output
}
