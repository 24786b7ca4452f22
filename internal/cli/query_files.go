package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// queryFilesOptions are the inputs of 'cra query files'.
type queryFilesOptions struct {
	queryOptions
	language string
}

func newQueryFilesCmd(d *deps, runF func(context.Context, *deps, *queryFilesOptions) error) *cobra.Command {
	opts := &queryFilesOptions{}
	cmd := &cobra.Command{
		Use:   "files",
		Short: "List the indexed files",
		Long: `List the indexed files with their language and line count, by path.
Files the parser recovered from syntax errors are marked: their symbols
and imports may be incomplete.`,
		Example: `  cra query files
  cra query files --language typescript
  cra query files --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return queryFilesRun(cmd.Context(), d, opts)
		},
	}
	opts.addFlags(cmd)
	cmd.Flags().StringVar(&opts.language, "language", "", "only files of this language, e.g. python, typescript, go ('cra query overview' lists them)")
	return cmd
}

func queryFilesRun(ctx context.Context, d *deps, opts *queryFilesOptions) error {
	language := strings.ToLower(opts.language)
	ix, err := openQueryIndex(ctx, opts.repo)
	if err != nil {
		return err
	}
	defer ix.close()
	files, err := ix.kb.Files(ctx, ix.repo.ID, language)
	if err != nil {
		return err
	}
	if opts.json {
		return encodeJSON(d.out, files)
	}
	if len(files) == 0 {
		if language == "" {
			fmt.Fprintln(d.errOut, "no indexed files")
			return nil
		}
		// Name the languages there are, so a typo is plain to see.
		all, err := ix.kb.Files(ctx, ix.repo.ID, "")
		if err != nil {
			return err
		}
		var langs []string
		for _, f := range all {
			if !slices.Contains(langs, f.Language) {
				langs = append(langs, f.Language)
			}
		}
		slices.Sort(langs)
		fmt.Fprintf(d.errOut, "no indexed %s files (indexed languages: %s)\n", language, strings.Join(langs, ", "))
		return nil
	}
	rows := make([][]string, 0, len(files))
	for _, f := range files {
		row := []string{f.Path, f.Language, countNoun(f.Lines, "line")}
		if f.SyntaxErrors > 0 {
			row = append(row, countNoun(f.SyntaxErrors, "syntax error"))
		}
		rows = append(rows, row)
	}
	writeColumns(d.out, "", rows, 2)
	return nil
}
