package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/adapter"
	"github.com/cra-dev/cra/internal/index"
	"github.com/cra-dev/cra/internal/train"
	"github.com/cra-dev/cra/internal/workspace"
	"github.com/cra-dev/cra/internal/world"
)

type indexOptions struct {
	repo            string
	continueOnError bool
	json            bool
	verbose         bool
	lineStats       bool
	rebuild         bool
	historyDepth    *int
	maxCommitFiles  *int
}

func newIndexCmd(d *deps, runF func(context.Context, *deps, *indexOptions) error) *cobra.Command {
	opts := &indexOptions{}
	var depth, maxFiles int
	cmd := &cobra.Command{
		Use:   "index [repo-path]",
		Short: "Build or update the repository's knowledge base (no LLM)",
		Long: `Index a repository into .clean_room/curated.sqlite: files and content
hashes, symbols, docstrings, comments, import dependencies, Python symbol
references, and git history with co-change counts.

The run is incremental: only new or changed files are parsed, deleted files
lose their rows, and only commits since the last run are mined. It writes
in one transaction, so an interrupted run leaves the previous index intact.
In a git repository it indexes tracked and untracked-but-not-ignored files;
elsewhere it walks the tree and honours .gitignore. Binaries, files over
1 MiB, lockfiles, node_modules, vendor, dist, build and virtualenvs are
skipped and counted.

--rebuild sets the old index aside and builds a new one from scratch: the
fix for a damaged curated.sqlite ('cra doctor' checks it). Promoted
enrichment then needs 'cra enrich --promote' again, and the repository's
learned ranking weights 'cra tune' (quick: its examples are kept).

No configuration is needed; [index] history_depth and max_commit_files in
.clean_room/config.toml, or the flags, bound the history miner.`,
		Example: `  cra index .
  cra index ~/src/project --json
  cra index . --history-depth 500 --continue-on-error
  cra index . --rebuild`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.repo = "."
			if len(args) == 1 {
				opts.repo = args[0]
			}
			if cmd.Flags().Changed("history-depth") {
				opts.historyDepth = &depth
			}
			if cmd.Flags().Changed("max-commit-files") {
				opts.maxCommitFiles = &maxFiles
			}
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return indexRun(cmd.Context(), d, opts)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.continueOnError, "continue-on-error", false, "skip files that fail to read instead of stopping")
	f.BoolVar(&opts.json, "json", false, "print the run summary as JSON")
	f.BoolVarP(&opts.verbose, "verbose", "v", false, "list every skipped file and warning")
	f.IntVar(&depth, "history-depth", 0, fmt.Sprintf("commits of git history to mine, newest first (default %d; 0 disables)", index.DefaultHistoryDepth))
	f.BoolVar(&opts.rebuild, "rebuild", false, "set the index aside (as curated.sqlite.damaged) and build it anew: the fix for a damaged index; the active adapters raw.sqlite records come back")
	f.BoolVar(&opts.lineStats, "line-stats", false, "also mine insertions/deletions per commit (slower: git computes every diff)")
	f.IntVar(&maxFiles, "max-commit-files", 0, fmt.Sprintf("leave commits touching more files out of co-change (default %d)", index.DefaultMaxCommitFiles))
	return cmd
}

func indexRun(ctx context.Context, d *deps, opts *indexOptions) error {
	repo, err := workspace.Dir(opts.repo)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(d, repo)
	if err != nil {
		return err
	}
	noteSubdirectory(ctx, d, repo)
	stateDir, err := workspace.EnsureStateDir(repo)
	if err != nil {
		return err
	}
	if opts.rebuild {
		aside, err := index.SetAside(stateDir)
		if err != nil {
			return err
		}
		if aside != "" {
			fmt.Fprintf(d.errOut, "set the old index aside as %s; building a new one\n", relPath(repo, aside))
		}
	}
	b := index.NewBuilderIn(stateDir)
	b.Waiting = func(pid int) {
		fmt.Fprintf(d.errOut, "waiting for another cra (pid %d) that is writing the index…\n", pid)
	}
	b.ApplyConfig(cfg)
	if opts.historyDepth != nil {
		if *opts.historyDepth < 0 {
			return usageError{err: fmt.Errorf("--history-depth must be >= 0")}
		}
		b.HistoryDepth = *opts.historyDepth
	}
	if opts.maxCommitFiles != nil {
		if *opts.maxCommitFiles < 2 {
			return usageError{err: fmt.Errorf("--max-commit-files must be >= 2")}
		}
		b.MaxCommitFiles = *opts.maxCommitFiles
	}
	b.ContinueOnError = opts.continueOnError
	b.LineStats = opts.lineStats
	progress := newTermProgress(d.errOut, "parsing")
	if isTerminal(d.errOut) && !opts.json {
		b.Progress = func(p index.Progress) { progress.report(p.Done, p.Total) }
	}
	res, err := b.Run(ctx, repo)
	progress.finish()
	if err != nil {
		world.NoteEvent(ctx, d.errOut, stateDir, world.SourceIndex, filepath.Base(repo), "index failed: "+err.Error())
		return fmt.Errorf("index %s: %w", repo, err)
	}
	world.NoteEvent(ctx, d.errOut, stateDir, world.SourceIndex, filepath.Base(repo), summaryLine(res))
	// Every run, not only a new index's: a restore that failed (or was
	// interrupted) is tried again by the next. It costs a query of
	// raw.sqlite when nothing is to restore (about 4 ms on django).
	restoreAdapters(ctx, d, repo)
	if opts.json {
		return encodeJSON(d.out, res)
	}
	fmt.Fprintln(d.out, summaryLine(res))
	printDetails(d, res, opts.verbose)
	return nil
}

// restoreAdapters gives a new index back the active adapters raw.sqlite
// records (adapter.Restore), and says which. A failure is a warning: the
// index itself was built, and the next run tries again.
func restoreAdapters(ctx context.Context, d *deps, repo string) {
	var restored []train.AdapterRecord
	ws, err := workspace.Open(ctx, repo, workspace.Options{Exact: true, NoConfig: true, Logger: d.logger})
	if err == nil {
		defer ws.Close()
		restored, err = adapter.Restore(ctx, ws)
	}
	if err != nil {
		fmt.Fprintf(d.errOut, "warning: %v (the next 'cra index' tries again)\n", err)
	}
	for _, a := range restored {
		fmt.Fprintf(d.errOut, "restored active adapter %s for stage %s from raw.sqlite\n", a.ModelTag, a.Stage)
	}
}

// noteSubdirectory says so when a first index of repo starts inside a
// repository indexed or versioned higher up: a deliberate sub-project
// index, or a 'cra index .' run from the wrong directory. The other
// commands use the nearest .clean_room/ above them, which becomes this one.
func noteSubdirectory(ctx context.Context, d *deps, repo string) {
	if workspace.HasState(repo) {
		return // indexed here before
	}
	// workspace.Find returns the nearest directory above holding .clean_room/, or
	// the one it started from when none does.
	if up, err := workspace.Find(filepath.Dir(repo)); err == nil && workspace.HasState(up) {
		fmt.Fprintf(d.errOut, "note: %s is inside %s, which has its own index; indexing this directory apart (for that one, run 'cra index %s')\n", repo, up, up)
		return
	}
	if top, prefix, err := workspace.TopLevel(ctx, repo); err == nil && prefix != "" {
		fmt.Fprintf(d.errOut, "note: %s is a subdirectory of the git repository %s; indexing it apart (for the whole repository, run 'cra index %s')\n", repo, top, top)
	}
}

// summaryLine is the one line a run prints.
func summaryLine(r *index.Result) string {
	var b strings.Builder
	// Added, changed and unchanged add up to the files indexed; parsed is
	// the share of the added and changed that is in a parsed language.
	fmt.Fprintf(&b, "indexed %d files in %s: %d added, %d changed, %d deleted, %d unchanged (%d parsed)",
		r.Indexed, r.Duration.Round(time.Millisecond), r.Added, r.Changed, r.Deleted, r.Unchanged, r.Parsed)
	if r.Reextracted {
		b.WriteString("; every file read again for a newer extractor")
	}
	if n := len(r.SkipList); n > 0 {
		reasons := make([]string, 0, len(r.Skipped))
		for k, v := range r.Skipped {
			reasons = append(reasons, fmt.Sprintf("%s %d", k, v))
		}
		sort.Strings(reasons)
		fmt.Fprintf(&b, "; skipped %d (%s)", n, strings.Join(reasons, ", "))
	}
	if n := len(r.Warnings); n > 0 {
		fmt.Fprintf(&b, "; %d warning%s", n, plural(n))
	}
	if r.Vendored > 0 {
		fmt.Fprintf(&b, "; %d vendored or generated", r.Vendored)
	}
	fmt.Fprintf(&b, "; %d symbols, %d dependencies, %d references", r.Symbols, r.Dependencies, r.References)
	switch r.History {
	case "none":
		if r.Git {
			b.WriteString("; no git history")
		} else {
			b.WriteString("; not a git repository")
		}
	case "up to date":
		fmt.Fprintf(&b, "; history up to date (%d commit%s)", r.Commits, plural(r.Commits))
	default:
		fmt.Fprintf(&b, "; history %s: %d new commit%s (%d total)", r.History, r.NewCommits, plural(r.NewCommits), r.Commits)
	}
	return b.String()
}

// printDetails lists warnings (and with -v skipped files) on stderr.
func printDetails(d *deps, r *index.Result, verbose bool) {
	const shown = 10
	for i, w := range r.Warnings {
		if i == shown && !verbose {
			fmt.Fprintf(d.errOut, "warning: ... and %d more (use -v to list all)\n", len(r.Warnings)-shown)
			break
		}
		if w.Path == "" {
			fmt.Fprintf(d.errOut, "warning: %s\n", w.Message)
		} else {
			fmt.Fprintf(d.errOut, "warning: %s: %s\n", w.Path, w.Message)
		}
	}
	if verbose {
		for _, s := range r.SkipList {
			fmt.Fprintf(d.errOut, "skipped: %s: %s\n", s.Path, s.Reason)
		}
	}
}
