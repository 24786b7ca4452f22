package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/index"
	"github.com/cra-dev/cra/internal/kb"
)

// querySymbolsOptions are the inputs of 'cra query symbols'.
type querySymbolsOptions struct {
	queryOptions
	pattern string
	kind    string
	limit   int
}

func newQuerySymbolsCmd(d *deps, runF func(context.Context, *deps, *querySymbolsOptions) error) *cobra.Command {
	opts := &querySymbolsOptions{}
	cmd := &cobra.Command{
		Use:   "symbols <pattern>",
		Short: "Find symbols by name",
		Long: `Find the functions, classes, methods and other definitions whose name
matches pattern, ignoring case.

A pattern without '*' matches anywhere in the name; exact matches come
first, then names that start with it, then the rest. A pattern with '*'
is a glob over the whole name: 'Session*' finds names that start with
Session, '*_test' names that end with _test, '*' every symbol.

Each line shows the qualified name (Class.method), the kind and the
location as path:start-end.`,
		Example: `  cra query symbols connect
  cra query symbols 'Session*' --kind class
  cra query symbols '*' --kind interface --limit 200`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.pattern = args[0]
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return querySymbolsRun(cmd.Context(), d, opts)
		},
	}
	opts.addFlags(cmd)
	cmd.Flags().StringVar(&opts.kind, "kind", "", "only symbols of this kind: "+strings.Join(symbolKinds, ", "))
	cmd.Flags().IntVar(&opts.limit, "limit", kb.DefaultSymbolLimit, "show at most this many symbols")
	return cmd
}

// symbolKinds is the symbol vocabulary of seed 001 §4.5.
var symbolKinds = []string{index.KindFunction, index.KindClass, index.KindMethod, index.KindInterface,
	index.KindTypeAlias, index.KindEnum, index.KindVariable}

func querySymbolsRun(ctx context.Context, d *deps, opts *querySymbolsOptions) error {
	if opts.kind != "" && !slices.Contains(symbolKinds, opts.kind) {
		return usageError{err: fmt.Errorf("--kind %q: want one of %s", opts.kind, strings.Join(symbolKinds, ", "))}
	}
	if opts.limit < 1 {
		return usageError{err: errors.New("--limit must be >= 1")}
	}
	ix, err := openQueryIndex(ctx, opts.repo)
	if err != nil {
		return err
	}
	defer ix.close()
	// One more than shown tells whether the limit cut the list.
	syms, err := ix.kb.SearchSymbolsByName(ctx, ix.repo.ID, opts.pattern, opts.kind, opts.limit+1)
	if err != nil {
		return err
	}
	more := len(syms) > opts.limit
	if more {
		syms = syms[:opts.limit]
	}
	if opts.json {
		return encodeJSON(d.out, syms)
	}
	if len(syms) == 0 {
		fmt.Fprintf(d.errOut, "no symbols match %q\n", opts.pattern)
		return nil
	}
	rows := make([][]string, 0, len(syms))
	for _, s := range syms {
		rows = append(rows, []string{s.QualifiedName(), s.Kind, s.Path + ":" + lineSpan(s.StartLine, s.EndLine)})
	}
	writeColumns(d.out, "", rows)
	if more {
		fmt.Fprintf(d.errOut, "showing the first %d matches: narrow the pattern, add --kind, or raise --limit\n", opts.limit)
	}
	return nil
}
