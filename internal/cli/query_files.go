package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/kb"
)

// queryFilesOptions are the inputs of 'cra query files'.
type queryFilesOptions struct {
	queryOptions
	language string
	vendored bool
}

func newQueryFilesCmd(d *deps, runF func(context.Context, *deps, *queryFilesOptions) error) *cobra.Command {
	opts := &queryFilesOptions{}
	cmd := &cobra.Command{
		Use:   "files",
		Short: "List the indexed files",
		Long: `List the indexed files with their language and line count, by path.
Files the parser recovered from syntax errors are marked: their symbols
and imports may be incomplete. With --vendored, only the files that are
vendored copies of other projects, generated or minified, each with why:
retrieval leaves them out of context packages unless the task names them.`,
		Example: `  cra query files
  cra query files --language typescript
  cra query files --vendored
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
	cmd.Flags().BoolVar(&opts.vendored, "vendored", false, "only vendored, generated and minified files, with the reason")
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
	if opts.vendored {
		return queryVendored(ctx, d, ix, files, opts)
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

// vendoredFile is a row of 'cra query files --vendored --json'.
type vendoredFile struct {
	kb.File
	Vendored string `json:"vendored"`
}

// queryVendored lists the files (of the --language asked) that are
// vendored, generated or minified.
func queryVendored(ctx context.Context, d *deps, ix *queryIndex, files []kb.File, opts *queryFilesOptions) error {
	vs, err := ix.kb.VendoredFiles(ctx, ix.repo.ID)
	if err != nil {
		return err
	}
	why := make(map[int64]string, len(vs))
	for _, v := range vs {
		why[v.ID] = v.Reason
	}
	out := []vendoredFile{}
	for _, f := range files {
		if r := why[f.ID]; r != "" {
			out = append(out, vendoredFile{f, r})
		}
	}
	if opts.json {
		return encodeJSON(d.out, out)
	}
	if len(out) == 0 {
		fmt.Fprintln(d.errOut, "no vendored, generated or minified files")
		return nil
	}
	rows := make([][]string, 0, len(out))
	for _, f := range out {
		rows = append(rows, []string{f.Path, f.Language, countNoun(f.Lines, "line"), f.Vendored})
	}
	writeColumns(d.out, "", rows, 2)
	return nil
}
