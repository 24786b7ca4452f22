package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
)

// queryCoChangeOptions are the inputs of 'cra query cochange'.
type queryCoChangeOptions struct {
	queryOptions
	path     string
	minCount int
}

func newQueryCoChangeCmd(d *deps, runF func(context.Context, *deps, *queryCoChangeOptions) error) *cobra.Command {
	opts := &queryCoChangeOptions{}
	cmd := &cobra.Command{
		Use:   "cochange <path>",
		Short: "Show the files that change together with a file",
		Long: `Show the files that were changed in the same commits as a file, with the
number of such commits, most first. Counts come from the git history the
indexer mined; commits that touched very many files are left out as noise.`,
		Example: `  cra query cochange app/db.py
  cra query cochange app/db.py --min-count 3 --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.path = args[0]
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return queryCoChangeRun(cmd.Context(), d, opts)
		},
	}
	opts.addFlags(cmd)
	cmd.Flags().IntVar(&opts.minCount, "min-count", 1, "only files changed together in at least this many commits")
	return cmd
}

func queryCoChangeRun(ctx context.Context, d *deps, opts *queryCoChangeOptions) error {
	if opts.minCount < 1 {
		return usageError{err: errors.New("--min-count must be >= 1")}
	}
	ix, f, err := openQueryFile(ctx, opts.repo, opts.path)
	if err != nil {
		return err
	}
	defer ix.close()
	cs, err := ix.kb.CoChangeNeighbors(ctx, f.ID, opts.minCount)
	if err != nil {
		return err
	}
	if opts.json {
		return encodeJSON(d.out, cs)
	}
	if len(cs) == 0 {
		fmt.Fprintf(d.errOut, "no files changed together with %s in %s\n", f.Path, countNoun(opts.minCount, "commit")+" or more")
		return nil
	}
	rows := make([][]string, 0, len(cs))
	for _, c := range cs {
		rows = append(rows, []string{strconv.Itoa(c.Count), c.Path})
	}
	writeColumns(d.out, "", rows, 0)
	return nil
}
