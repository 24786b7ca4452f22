package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/kb"
)

// queryDepsOptions are the inputs of 'cra query deps'.
type queryDepsOptions struct {
	queryOptions
	path      string
	direction string
	depth     int
}

func newQueryDepsCmd(d *deps, runF func(context.Context, *deps, *queryDepsOptions) error) *cobra.Command {
	opts := &queryDepsOptions{}
	cmd := &cobra.Command{
		Use:   "deps <path>",
		Short: "Show a file's import dependencies",
		Long: `Show the files a file imports and the files that import it, from the
dependency edges the indexer resolved (imports within the repository;
standard library and third-party imports are not edges).

With --depth 1 (the default) each line is one edge: imports or imported
by, the other file, and the edge kind (import or type_ref). With a larger
depth the walk goes on breadth-first and each line is a file reached: its
distance, how it is linked to the file one step nearer, and that file.
The walk stops after 200 files.`,
		Example: `  cra query deps app/db.py
  cra query deps app/db.py --direction imported_by --depth 3
  cra query deps src/index.ts --direction imports --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.path = args[0]
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return queryDepsRun(cmd.Context(), d, opts)
		},
	}
	opts.addFlags(cmd)
	cmd.Flags().StringVar(&opts.direction, "direction", kb.Both, "imports, imported_by or both")
	cmd.Flags().IntVar(&opts.depth, "depth", 1, "how many edges to follow")
	return cmd
}

func queryDepsRun(ctx context.Context, d *deps, opts *queryDepsOptions) error {
	switch opts.direction {
	case kb.Imports, kb.ImportedBy, kb.Both:
	default:
		return usageError{err: fmt.Errorf("--direction %q: want imports, imported_by or both", opts.direction)}
	}
	if opts.depth < 1 {
		return usageError{err: errors.New("--depth must be >= 1")}
	}
	ix, f, err := openQueryFile(ctx, opts.repo, opts.path)
	if err != nil {
		return err
	}
	defer ix.close()
	g, err := ix.kb.DependencyWalk(ctx, []int64{f.ID}, opts.direction, opts.depth)
	if err != nil {
		return err
	}
	if opts.json {
		return encodeJSON(d.out, g)
	}
	rows, right := depEdgeRows(f.ID, opts.direction, g), []int(nil)
	if opts.depth > 1 {
		rows, right = depWalkRows(opts.direction, g), []int{0}
	}
	if len(rows) == 0 {
		fmt.Fprintf(d.errOut, "no dependency edges (%s) for %s\n", opts.direction, f.Path)
		return nil
	}
	writeColumns(d.out, "", rows, right...)
	if g.Truncated {
		fmt.Fprintf(d.errOut, "stopped after %d files: lower --depth or narrow --direction\n", kb.DefaultNodeLimit)
	}
	return nil
}

// depEdgeRows lists the edges of file: "imports PATH KIND" and
// "imported by PATH KIND".
func depEdgeRows(file int64, direction string, g *kb.DependencyGraph) [][]string {
	var imports, importers [][]string
	for _, e := range g.Edges {
		if e.SourceID == file && direction != kb.ImportedBy {
			imports = append(imports, []string{"imports", e.TargetPath, e.Kind})
		}
		if e.TargetID == file && direction != kb.Imports {
			importers = append(importers, []string{"imported by", e.SourcePath, e.Kind})
		}
	}
	return append(imports, importers...)
}

// depWalkRows lists the files a walk reached: distance, how each is linked
// to a file one step nearer, the file, and that nearer file when it is not
// the start.
func depWalkRows(direction string, g *kb.DependencyGraph) [][]string {
	dist := map[int64]int{}
	for _, n := range g.Nodes {
		dist[n.FileID] = n.Distance
	}
	var rows [][]string
	for _, n := range g.Nodes {
		if n.Distance == 0 {
			continue
		}
		relation, via := "", ""
		for _, e := range g.Edges {
			if direction != kb.ImportedBy && e.TargetID == n.FileID && dist[e.SourceID] == n.Distance-1 {
				relation, via = "imports", e.SourcePath
				break
			}
			if direction != kb.Imports && e.SourceID == n.FileID && dist[e.TargetID] == n.Distance-1 {
				relation, via = "imported by", e.TargetPath
				break
			}
		}
		row := []string{strconv.Itoa(n.Distance), relation, n.Path}
		if n.Distance > 1 {
			row = append(row, "via "+via)
		}
		rows = append(rows, row)
	}
	return rows
}
