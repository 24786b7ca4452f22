package cli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/lang"
	"github.com/cra-dev/cra/internal/preflight"
	"github.com/cra-dev/cra/internal/store"
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

type queryFilesOptions struct {
	queryOptions
	language string
}

type querySymbolsOptions struct {
	queryOptions
	pattern string
	kind    string
	limit   int
}

type queryDepsOptions struct {
	queryOptions
	path      string
	direction string
	depth     int
}

type queryCoChangeOptions struct {
	queryOptions
	path     string
	minCount int
}

type queryContextOptions struct {
	queryOptions
	path string
}

type queryOverviewOptions struct {
	queryOptions
}

func newQueryCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "query",
		Short: "Look things up in the knowledge base (no LLM)",
		Long: `Read the index that 'cra index' built in .clean_room/curated.sqlite: the
files, symbols, dependency edges, git co-change and history of the
repository. This is the same read-only API retrieval uses (seed 001 §12),
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

func newQueryOverviewCmd(d *deps, runF func(context.Context, *deps, *queryOverviewOptions) error) *cobra.Command {
	opts := &queryOverviewOptions{}
	cmd := &cobra.Command{
		Use:   "overview",
		Short: "Summarise the indexed repository",
		Long: `Summarise the index in one screen: files and lines by language, symbols
by kind, dependency edges, the mined history, enrichment domains, the
most connected files, the files most often changed together, and files
parsed with syntax errors.`,
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

// symbolKinds is the symbol vocabulary of seed 001 §4.5.
var symbolKinds = []string{lang.KindFunction, lang.KindClass, lang.KindMethod, lang.KindInterface,
	lang.KindTypeAlias, lang.KindEnum, lang.KindVariable}

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
	if opts.json {
		return encodeJSON(d.out, o)
	}
	printOverview(d.out, o)
	return nil
}

// printOverview writes the one-screen report of 'cra query overview'.
func printOverview(w io.Writer, o *kb.RepoOverview) {
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
	enrichment := "none (" + preflight.EnrichmentMissing + ")"
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

// queryIndex is the read-only knowledge base of one repository.
type queryIndex struct {
	db   *sql.DB
	kb   *kb.KnowledgeBase
	repo kb.Repo
	root string // absolute repository root
}

// openQueryIndex resolves --repo and opens its index read-only, after the
// curated preflight check (seed 001 §14.2): an unindexed repository is an
// error that says to run 'cra index'.
func openQueryIndex(ctx context.Context, repoFlag string) (*queryIndex, error) {
	root, err := findRepo(repoFlag)
	if err != nil {
		return nil, err
	}
	f := store.NewFactory(filepath.Join(root, config.Dir))
	if err := preflight.CheckCurated(ctx, f, root); err != nil {
		return nil, err
	}
	db, err := f.Open(ctx, store.Curated, "", true)
	if err != nil {
		return nil, err
	}
	k := kb.New(db)
	r, err := k.Repo(ctx, root)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", root, err)
	}
	return &queryIndex{db: db, kb: k, repo: r, root: root}, nil
}

func (ix *queryIndex) close() { ix.db.Close() }

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

// withBreakdown appends " (a 1, b 2)" to total when there are parts.
func withBreakdown(total string, parts []string) string {
	if len(parts) == 0 {
		return total
	}
	return total + " (" + strings.Join(parts, ", ") + ")"
}
