package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/kb"
)

// queryContextOptions are the inputs of 'cra query context'.
type queryContextOptions struct {
	queryOptions
	path string
}

func newQueryContextCmd(d *deps, runF func(context.Context, *deps, *queryContextOptions) error) *cobra.Command {
	opts := &queryContextOptions{}
	cmd := &cobra.Command{
		Use:   "context <path>",
		Short: "Show everything the index knows about a file",
		Long: fmt.Sprintf(`Show a file's symbols, docstrings, rationale comments, imports both
ways, co-change neighbours (the %d strongest), recent commits (the %d
newest) and, when enrichment was promoted, its purpose, domain and
concepts: the file's part of what retrieval assembles.`, kb.DefaultCoChangeLimit, kb.DefaultCommitLimit),
		Example: `  cra query context app/db.py
  cra query context app/db.py --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.path = args[0]
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return queryContextRun(cmd.Context(), d, opts)
		},
	}
	opts.addFlags(cmd)
	return cmd
}

func queryContextRun(ctx context.Context, d *deps, opts *queryContextOptions) error {
	ix, f, err := openQueryFile(ctx, opts.repo, opts.path)
	if err != nil {
		return err
	}
	defer ix.close()
	c, err := ix.kb.FileContext(ctx, f.ID)
	if err != nil {
		return err
	}
	if opts.json {
		return encodeJSON(d.out, c)
	}
	w := d.out
	head := []string{c.File.Path, c.File.Language, countNoun(c.File.Lines, "line"), countNoun(int(c.File.SizeBytes), "byte")}
	if c.File.SyntaxErrors > 0 {
		head = append(head, countNoun(c.File.SyntaxErrors, "syntax error"))
	}
	fmt.Fprintln(w, strings.Join(head, "  "))
	if m := c.Metadata; m != nil {
		var meta [][]string
		for _, kv := range [][2]string{{"purpose", m.Purpose}, {"domain", m.Domain}, {"module", m.Module},
			{"concepts", strings.Join(m.Concepts, ", ")}, {"api", strings.Join(m.PublicAPISurface, ", ")}, {"notes", m.ComplexityNotes}} {
			if kv[1] != "" {
				meta = append(meta, []string{kv[0], clipRunes(firstLine(kv[1]), 100)})
			}
		}
		writeColumns(w, "", meta)
	}

	section := func(name string, rows [][]string, right ...int) {
		if len(rows) == 0 {
			fmt.Fprintf(w, "%s (none)\n", name)
			return
		}
		fmt.Fprintf(w, "%s (%d)\n", name, len(rows))
		writeColumns(w, "  ", rows, right...)
	}
	var rows [][]string
	for _, s := range c.Symbols {
		rows = append(rows, []string{s.QualifiedName(), s.Kind, lineSpan(s.StartLine, s.EndLine)})
	}
	section("symbols", rows)
	rows = nil
	for _, ds := range c.Docstrings {
		owner := ds.Symbol
		if ds.SymbolID == 0 {
			owner = "(module)"
		}
		rows = append(rows, []string{owner, clipRunes(firstSentence(ds.Content), 80)})
	}
	section("docstrings", rows)
	rows = nil
	for _, cm := range c.RationaleComments {
		rows = append(rows, []string{strconv.Itoa(cm.Line), clipRunes(firstLine(cm.Content), 100)})
	}
	section("rationale comments", rows, 0)
	rows = nil
	for _, e := range c.Imports {
		rows = append(rows, []string{e.TargetPath, e.Kind})
	}
	section("imports", rows)
	rows = nil
	for _, e := range c.ImportedBy {
		rows = append(rows, []string{e.SourcePath, e.Kind})
	}
	section("imported by", rows)
	rows = nil
	for _, cc := range c.CoChanges {
		rows = append(rows, []string{strconv.Itoa(cc.Count), cc.Path})
	}
	section("changed together with", rows, 0)
	rows = nil
	for _, cm := range c.RecentCommits {
		rows = append(rows, []string{headBytes(cm.Hash, 7), headBytes(cm.Timestamp, len(time.DateOnly)), cm.Author, clipRunes(firstLine(cm.Message), 72)})
	}
	section("recent commits", rows)
	return nil
}
