package cli

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/workspace"
)

// queryOptions are the flags every 'cra query' subcommand has.
type queryOptions struct {
	repo string
	json bool
}

func (o *queryOptions) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.repo, "repo", ".", "repository root, or a directory inside it")
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON instead of text")
}

func newQueryCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "query",
		Short: "Look things up in the knowledge base (no LLM)",
		Long: `Read the index that 'cra index' built in .clean_room/curated.sqlite: the
files, symbols, dependency edges, git co-change and history of the
repository. This is the same read-only API retrieval uses,
so what 'cra query' shows is what the pipeline can see.

Every subcommand takes --repo (default: the current directory, or the
nearest parent holding .clean_room/) and --json. File paths may be given
relative to the current directory or to the repository root.`,
		Example: `  cra query overview
  cra query files --language python
  cra query symbols 'Session*' --kind class
  cra query deps app/db.py --direction imported_by --depth 2
  cra query cochange app/db.py --min-count 3
  cra query context app/db.py --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(
		newQueryFilesCmd(d, nil),
		newQuerySymbolsCmd(d, nil),
		newQueryDepsCmd(d, nil),
		newQueryCoChangeCmd(d, nil),
		newQueryContextCmd(d, nil),
		newQueryOverviewCmd(d, nil),
	)
	return cmd
}

// queryIndex is the read-only knowledge base of one repository.
type queryIndex struct {
	ws   *workspace.Workspace
	kb   *kb.KnowledgeBase
	repo kb.Repo
	root string // absolute repository root
}

// openQueryIndex resolves --repo and opens its index read-only, after the
// curated preflight check (seed 001 §14.2): an unindexed repository is an
// error that says to run 'cra index'. The config is not read.
func openQueryIndex(ctx context.Context, repoFlag string) (*queryIndex, error) {
	ws, err := workspace.Open(ctx, repoFlag, workspace.Options{NoConfig: true})
	if err != nil {
		return nil, err
	}
	k, r, err := ws.Index(ctx)
	if err != nil {
		ws.Close()
		return nil, err
	}
	return &queryIndex{ws: ws, kb: k, repo: r, root: ws.Root}, nil
}

func (ix *queryIndex) close() { ix.ws.Close() }

// openQueryFile opens the index and finds the file a path argument names
// in it (see file); the caller closes the index.
func openQueryFile(ctx context.Context, repoFlag, path string) (*queryIndex, kb.File, error) {
	ix, err := openQueryIndex(ctx, repoFlag)
	if err != nil {
		return nil, kb.File{}, err
	}
	f, err := ix.file(ctx, path)
	if err != nil {
		ix.close()
		return nil, kb.File{}, err
	}
	return ix, f, nil
}

// file finds the indexed file named by a path argument: relative to the
// working directory when that lands inside the repository (as git reads
// paths), else relative to the repository root.
func (ix *queryIndex) file(ctx context.Context, arg string) (kb.File, error) {
	var candidates []string
	if abs, err := filepath.Abs(arg); err == nil {
		if rel, err := filepath.Rel(ix.root, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			candidates = append(candidates, filepath.ToSlash(rel))
		}
	}
	if !filepath.IsAbs(arg) {
		candidates = append(candidates, path.Clean(filepath.ToSlash(arg)))
	}
	for _, c := range candidates {
		f, err := ix.kb.FileByPath(ctx, ix.repo.ID, c)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, kb.ErrNotFound) {
			return kb.File{}, err
		}
	}
	return kb.File{}, fmt.Errorf("no indexed file %q: run 'cra query files' to list them", arg)
}

func lineSpan(start, end int) string {
	if end <= start {
		return strconv.Itoa(start)
	}
	return fmt.Sprintf("%d-%d", start, end)
}
