package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/run"
	"github.com/cra-dev/cra/internal/workspace"
)

// queryOverviewOptions are the inputs of 'cra query overview'.
type queryOverviewOptions struct {
	queryOptions
}

func newQueryOverviewCmd(d *deps, runF func(context.Context, *deps, *queryOverviewOptions) error) *cobra.Command {
	opts := &queryOverviewOptions{}
	cmd := &cobra.Command{
		Use:   "overview",
		Short: "Summarise the indexed repository",
		Long: `Summarise the index in one screen: files and lines by language, symbols
by kind, dependency edges, the mined history, enrichment domains, the
most connected files, the files most often changed together, files
parsed with syntax errors, and the ranking weights retrieval uses (the
global ones, or the repository's own from 'cra tune') and why.`,
		Example: `  cra query overview
  cra query overview --repo ~/src/project --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return queryOverviewRun(cmd.Context(), d, opts)
		},
	}
	opts.addFlags(cmd)
	return cmd
}

func queryOverviewRun(ctx context.Context, d *deps, opts *queryOverviewOptions) error {
	ix, err := openQueryIndex(ctx, opts.repo)
	if err != nil {
		return err
	}
	defer ix.close()
	o, err := ix.kb.RepoOverview(ctx, ix.repo.ID)
	if err != nil {
		return err
	}
	weights, err := run.WeightsFor(ctx, ix.kb, ix.repo.ID)
	if err != nil {
		return err
	}
	if opts.json {
		return encodeJSON(d.out, struct {
			*kb.RepoOverview
			Weights run.WeightChoice `json:"ranking_weights"`
		}{o, weights})
	}
	printOverview(d.out, o, weights)
	return nil
}

// weightsLine says which ranking weights retrieval uses and why.
func weightsLine(c run.WeightChoice) string {
	if c.Source == run.WeightsRepository {
		return "the repository's own: " + c.Reason
	}
	return "global: " + c.Reason
}

// printOverview writes the one-screen report of 'cra query overview'.
func printOverview(w io.Writer, o *kb.RepoOverview, weights run.WeightChoice) {
	repo := o.Repo.Path
	if o.Repo.RemoteURL != "" {
		repo += " (" + o.Repo.RemoteURL + ")"
	}
	var langs, kinds, domains []string
	for _, l := range o.Languages {
		langs = append(langs, fmt.Sprintf("%s %d", l.Language, l.Files))
	}
	for _, k := range o.SymbolKinds {
		kinds = append(kinds, fmt.Sprintf("%s %d", k.Name, k.Count))
	}
	for _, dm := range o.Domains {
		domains = append(domains, fmt.Sprintf("%s %d", dm.Name, dm.Count))
	}
	history := "none mined"
	if o.Commits > 0 {
		first, last := headBytes(o.FirstCommitAt, len(time.DateOnly)), headBytes(o.LastCommitAt, len(time.DateOnly))
		history = fmt.Sprintf("%s, %s", countNoun(o.Commits, "commit"), first)
		if last != first {
			history += " to " + last
		}
	}
	enrichment := "none (" + workspace.EnrichmentMissing + ")"
	if o.EnrichedFiles > 0 {
		enrichment = countNoun(o.EnrichedFiles, "file")
		if len(domains) > 0 {
			enrichment += "; domains: " + strings.Join(domains, ", ")
		}
	}
	warnings := "none"
	if o.SyntaxWarnings > 0 {
		warnings = countNoun(o.SyntaxWarnings, "file") + " parsed with syntax errors (marked in 'cra query files')"
	}
	writeColumns(w, "", [][]string{
		{"repository", repo},
		{"indexed", o.Repo.IndexedAt},
		{"files", withBreakdown(fmt.Sprintf("%d, %s", o.Files, countNoun(o.Lines, "line")), langs)},
		{"symbols", withBreakdown(strconv.Itoa(o.Symbols), kinds)},
		{"dependencies", countNoun(o.DependencyEdges, "file-to-file edge")},
		{"history", history},
		{"enrichment", enrichment},
		{"warnings", warnings},
		{"ranking weights", weightsLine(weights)},
	})
	if len(o.MostConnected) > 0 {
		fmt.Fprintln(w, "\nmost connected files (imported by, imports)")
		rows := make([][]string, 0, len(o.MostConnected))
		for _, c := range o.MostConnected {
			rows = append(rows, []string{strconv.Itoa(c.ImportedBy), strconv.Itoa(c.Imports), c.Path})
		}
		writeColumns(w, "  ", rows, 0, 1)
	}
	// A pair that changed together once says little (every file of a first
	// commit is such a pair): the text shows repeated pairs only, --json all.
	var rows [][]string
	for _, p := range o.TopCoChanges {
		if p.Count >= 2 {
			rows = append(rows, []string{strconv.Itoa(p.Count), p.PathA, p.PathB})
		}
	}
	if len(rows) > 0 {
		fmt.Fprintln(w, "\nmost often changed together (commits)")
		writeColumns(w, "  ", rows, 0)
	}
}

// withBreakdown appends " (a 1, b 2)" to total when there are parts.
func withBreakdown(total string, parts []string) string {
	if len(parts) == 0 {
		return total
	}
	return total + " (" + strings.Join(parts, ", ") + ")"
}
