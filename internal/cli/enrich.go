package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/enrich"
	"github.com/cra-dev/cra/internal/world"
)

// maxEnrichConcurrency bounds --concurrency: more requests than this only
// queue up in the model server.
const maxEnrichConcurrency = 64

type enrichOptions struct {
	repo        string
	promote     bool
	concurrency int
	json        bool
	verbose     bool
}

func newEnrichCmd(d *deps, runF func(context.Context, *deps, *enrichOptions) error) *cobra.Command {
	opts := &enrichOptions{}
	cmd := &cobra.Command{
		Use:   "enrich [repo-path]",
		Short: "Describe each indexed file with the reasoning model",
		Long: `Ask the reasoning model to describe each indexed file as JSON: its purpose,
module, domain, concepts, public API surface and complexity notes. The
prompt shows the file's path, symbols, docstrings and the head of its
content, bounded by the reasoning model's context window.

Every reply is stored with its raw prompt and response in
.clean_room/raw.sqlite (enrichment_outputs). A malformed reply is retried
once with the error, then recorded and counted; it does not stop the run,
but a run in which every file asked about got a malformed reply exits 1.
A failed call (server down, model missing) stops it. Runs are resumable: a
file whose current content already has a valid description from the same
model is skipped, so re-running after an interruption only does the rest.

--promote then copies the newest valid description of each file's current
content into the index (curated file_metadata), where retrieval uses it
(Scope Tier 4). Retrieval works without enrichment.

Needs 'cra index' first, and models.reasoning, models.base_url and a
context window (models.reasoning_context_window or budget.context_window)
in .clean_room/config.toml.`,
		Example: `  cra enrich .
  cra enrich . --promote
  cra enrich ~/src/project --concurrency 4 --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.repo = "."
			if len(args) == 1 {
				opts.repo = args[0]
			}
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return enrichRun(cmd.Context(), d, opts)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.promote, "promote", false, "copy the newest valid descriptions into the index (file_metadata)")
	f.IntVar(&opts.concurrency, "concurrency", enrich.DefaultConcurrency, "files described at once (the server must serve that many in parallel)")
	f.BoolVar(&opts.json, "json", false, "print the run summary as JSON")
	f.BoolVarP(&opts.verbose, "verbose", "v", false, "print a line per file")
	return cmd
}

// enrichReport is the JSON output of 'cra enrich'.
type enrichReport struct {
	Enrich  *enrich.Result        `json:"enrich"`
	Promote *enrich.PromoteResult `json:"promote,omitempty"`
}

func enrichRun(ctx context.Context, d *deps, opts *enrichOptions) error {
	if opts.concurrency < 1 || opts.concurrency > maxEnrichConcurrency {
		return usageError{err: fmt.Errorf("--concurrency must be between 1 and %d", maxEnrichConcurrency)}
	}
	ws, err := openWorkspace(ctx, d, opts.repo, true)
	if err != nil {
		return err
	}
	defer ws.Close()
	// Models first, then the index (seed 001 §14.1, §14.2).
	router := ws.Router(ctx)
	if err := enrich.CheckModels(ctx, router); err != nil {
		return err
	}
	k, repo, err := ws.Index(ctx)
	if err != nil {
		return err
	}
	client, m, err := enrich.Model(ctx, router, d.logger)
	if err != nil {
		return err
	}
	raw, err := ws.Corpus(ctx)
	if err != nil {
		return err
	}

	e := enrich.New(k, raw, client, m)
	e.Concurrency = opts.concurrency
	progress := newTermProgress(d.errOut, "enriching")
	switch {
	case opts.verbose:
		e.Progress = func(p enrich.Progress) {
			fmt.Fprintf(d.errOut, "[%d/%d] %s: %s\n", p.Done, p.Total, p.Path, p.Status)
		}
	case isTerminal(d.errOut) && !opts.json:
		e.Progress = func(p enrich.Progress) { progress.report(p.Done, p.Total) }
	}
	res, runErr := e.Run(ctx, repo)
	progress.finish()
	stopped := runErr != nil
	if runErr == nil && res.Enriched == 0 && res.Skipped == 0 && res.Malformed > 0 {
		// No valid description at all, and every file asked about failed:
		// for a script ('cra enrich && …') that is a failed run, not a
		// partial one. Descriptions from an earlier run still count.
		runErr = fmt.Errorf("enrich: %s replied malformed JSON for every file it was asked about (%d): the model does not keep to the format; "+
			"try a larger models.reasoning, or read the replies in .clean_room/raw.sqlite (enrichment_outputs)", res.Model, res.Malformed)
	}
	report := enrichReport{Enrich: res}
	if runErr == nil && opts.promote {
		pr, err := enrich.PromoteIndex(ctx, ws, repo.ID)
		if err != nil {
			return err
		}
		report.Promote = &pr
	}
	if opts.json {
		if err := encodeJSON(d.out, report); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(d.out, enrichSummary(res))
		if report.Promote != nil {
			fmt.Fprintln(d.out, promoteSummary(report.Promote))
		}
	}
	for _, p := range res.Problems {
		if p.Status == enrich.StatusFailed {
			continue // the run's error says it
		}
		calls := ""
		if p.Calls > 0 {
			calls = fmt.Sprintf(" (%d call%s)", p.Calls, plural(p.Calls))
		}
		fmt.Fprintf(d.errOut, "warning: %s: %s: %s%s\n", p.Path, p.Status, p.Error, calls)
	}
	root, stateDir := ws.Root, ws.StateDir
	if runErr != nil {
		world.NoteEvent(ctx, d.errOut, stateDir, world.SourceEnrich, filepath.Base(root), "enrich failed: "+runErr.Error())
		if stopped && res.Calls > 0 {
			fmt.Fprintln(d.errOut, "the run stopped: every call so far is recorded, and a re-run resumes")
		}
		return runErr
	}
	world.NoteEvent(ctx, d.errOut, stateDir, world.SourceEnrich, filepath.Base(root), enrichSummary(res))
	return nil
}

// enrichSummary is the one line a run prints.
func enrichSummary(r *enrich.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "enriched %d of %d files with %s in %s: %d already enriched, %d malformed, %d empty",
		r.Enriched, r.Files, r.Model, r.Duration.Round(time.Millisecond), r.Skipped, r.Malformed, r.Empty)
	if r.Changed > 0 {
		fmt.Fprintf(&b, ", %d changed since the last index", r.Changed)
	}
	fmt.Fprintf(&b, "; %d call%s", r.Calls, plural(r.Calls))
	if r.MalformedReplies > 0 {
		reply := "replies"
		if r.MalformedReplies == 1 {
			reply = "reply"
		}
		fmt.Fprintf(&b, " (%d malformed %s)", r.MalformedReplies, reply)
	}
	if r.PromptTokens+r.CompletionTokens > 0 {
		fmt.Fprintf(&b, ", %d prompt + %d completion tokens", r.PromptTokens, r.CompletionTokens)
	}
	return b.String()
}

func promoteSummary(p *enrich.PromoteResult) string {
	s := fmt.Sprintf("promoted %d file%s to the index (file_metadata)", p.Promoted, plural(p.Promoted))
	if p.Missing > 0 {
		s += fmt.Sprintf("; %d without a valid description of their current content", p.Missing)
	}
	return s
}
