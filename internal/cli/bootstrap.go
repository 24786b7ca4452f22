package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/bootstrap"
	"github.com/cra-dev/cra/internal/run"
	"github.com/cra-dev/cra/internal/train"
	"github.com/cra-dev/cra/internal/workspace"
)

type bootstrapOptions struct {
	source     string // the repository whose history is read
	repo       string // the repository cra runs in: where the datasets go
	maxCommits int
	since      string
	budget     budgetFlags
	json       bool
	verbose    bool
	force      bool
}

func newBootstrapCmd(d *deps, runF func(context.Context, *deps, *bootstrapOptions) error) *cobra.Command {
	opts := &bootstrapOptions{}
	var finishBudget func()
	cmd := &cobra.Command{
		Use:   "bootstrap <repo-path>",
		Short: "Draw training data for every stage from a repository's history (no LLM)",
		Long: `Derive training pairs for each pipeline stage from the commits of a
repository (seed 001 §8.6, §16.4), before cra has any run of its own to
learn from.

A commit is kept when it is not a merge, changes 1 to 5 files and fewer
than 200 lines, every file one the indexer reads as text and at least one
in a language it parses (Python, TypeScript, JavaScript, Go), and its
subject has four words or more that say more than "fix", "wip" or "misc".
For each kept commit, oldest first, its parent is checked out in a scratch
worktree and indexed (incrementally), and one pair per stage is derived:
task analysis (the message → the TaskQuery the diff implies), scope (cra's
deterministic candidates, the changed files relevant, the files they
import supporting, the rest not), precision (the scoped files' symbols:
changed ones primary, ones the change uses supporting), execute_plan (a
plan derived from the diff) and execute_code (the edit blocks that make
the diff, kept only when applying them to the parent gives the commit's
files exactly). Each is built with the prompts cra sends at inference.

The bootstrapped repository is only read: its work tree, index and
branches are never touched; the scratch worktree is removed at the end,
also when the run fails or is interrupted. What is written goes to the
repository cra runs in (--repo, default the current directory):

  .clean_room/training/datasets/bootstrap-<name>-<UTC time>/<base model>/<stage>/
      train.jsonl valid.jsonl (chat JSONL: mlx-lm, axolotl, torchtune)
      meta.train.jsonl meta.valid.jsonl (commit, parent, gold files)
  .clean_room/training/bootstrap/<name>-<hash>/index/   the scratch index, kept for reruns
  .clean_room/raw.sqlite   a training_plans row (source synthetic: the
      repository and the filter) and one training_datasets row per stage

Each run writes a dataset directory of its own; an earlier run's files,
which an adapter may have been trained on, are never rewritten. A run
whose repository HEAD, bounds, filter and budget are an earlier run's
writes nothing and reports that run's datasets, so the same pairs are
never recorded twice (--force derives them again); when kept commits
failed in that run, it says how many and quotes the first: their pairs are
missing until, the cause fixed, --force derives them. The newest commits
form each stage's validation split.

Budget: --context-window and --reserved-tokens, or --budget-config FILE, or
[budget] in .clean_room/config.toml: the context packages and the execute
prompts are sized as a run sizes them.`,
		Example: `  cra bootstrap ~/src/click --max-commits 300 --context-window 32768 --reserved-tokens 4096
  cra bootstrap ../gin --since 2024-01-01 --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.source = args[0]
			finishBudget()
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return bootstrapRun(cmd.Context(), d, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.repo, "repo", ".", "repository cra runs in: the datasets and their records go to its .clean_room/")
	f.IntVar(&opts.maxCommits, "max-commits", 0, "examine the newest N commits only (0: the whole history)")
	f.StringVar(&opts.since, "since", "", "examine commits made on or after DATE (YYYY-MM-DD or RFC 3339)")
	f.BoolVar(&opts.json, "json", false, "print the report as JSON")
	f.BoolVar(&opts.force, "force", false, "derive the pairs again even when an earlier run drew them from the same commits with the same settings")
	f.BoolVarP(&opts.verbose, "verbose", "v", false, "a line per kept commit on stderr")
	finishBudget = addBudgetFlags(cmd, &opts.budget)
	return cmd
}

// parseSince reads --since: a date (midnight UTC) or an RFC 3339 time.
func parseSince(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, usageError{err: fmt.Errorf("--since %q: give a date as YYYY-MM-DD or a time as RFC 3339 (2024-01-31T12:00:00Z)", s)}
}

func bootstrapRun(ctx context.Context, d *deps, opts *bootstrapOptions) error {
	if opts.maxCommits < 0 {
		return usageError{err: fmt.Errorf("--max-commits must be >= 0, got %d", opts.maxCommits)}
	}
	since, err := parseSince(opts.since)
	if err != nil {
		return err
	}
	source, err := workspace.Dir(opts.source)
	if err != nil {
		return err
	}
	ws, err := openWorkspace(ctx, d, opts.repo, false)
	if err != nil {
		return err
	}
	defer ws.Close()
	budget, err := resolveBudget(opts.budget, ws.Config)
	if err != nil {
		return err
	}
	if _, err := workspace.EnsureStateDir(ws.Root); err != nil {
		return err
	}
	c, err := ws.Corpus(ctx)
	if err != nil {
		return err
	}
	// The scratch directory (and its index) is the repository's, whichever
	// of its directories names it; one that is no repository is Run's to
	// refuse.
	key := source
	if top, _, err := workspace.TopLevel(ctx, source); err == nil {
		key = top
	}
	bo := bootstrap.Options{
		Repo:        source,
		ScratchDir:  train.NewLayout(ws.Root).Bootstrap(scratchName(key)),
		DatasetsDir: train.NewLayout(ws.Root).Datasets(),
		Corpus:      c, TaskID: run.NewTaskID(), MaxCommits: opts.maxCommits, Since: since, Budget: budget, Force: opts.force,
	}
	// As a run sizes them: the stage prompts by the reasoning window, the
	// execute replies by max_tokens and half of reserved_tokens.
	bo.ReplyTokens = budget.ReservedTokens / 2
	if m := ws.Config; m != nil && m.Models != nil {
		if w := m.Models.ReasoningContextWindow; w != nil && *w > 0 {
			bo.PromptTokens = *w
		}
		if t := m.Models.MaxTokens; t != nil && *t > 0 {
			bo.ReplyTokens = min(bo.ReplyTokens, *t)
		}
	}
	if opts.verbose {
		bo.Progress = d.errOut
	}
	rep, err := bootstrap.Run(ctx, bo)
	if err != nil {
		return fmt.Errorf("bootstrap %s: %w", source, err)
	}
	if opts.json {
		return encodeJSON(d.out, rep)
	}
	printBootstrap(d, ws.Root, rep)
	return nil
}

// scratchName names a bootstrapped repository's scratch directory: its
// base name and a hash of its path, so two clones named alike differ.
func scratchName(path string) string {
	h := sha256.Sum256([]byte(path))
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ' ' {
			return '_'
		}
		return r
	}, filepath.Base(path)) + "-" + hex.EncodeToString(h[:4])
}

func printBootstrap(d *deps, root string, rep *bootstrap.Report) {
	fmt.Fprintf(d.out, "bootstrapped %s at %.12s: %d commit(s) examined, %d kept, in %s (%.2f kept commits/s)\n",
		rep.Repo, rep.Head, rep.Seen, rep.Kept, rep.Duration.Round(time.Millisecond), rep.CommitsPerSecond())
	if len(rep.Skipped) > 0 {
		var parts []string
		for _, r := range bootstrap.SkipReasons() {
			if n := rep.Skipped[r]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", r, n))
			}
		}
		fmt.Fprintf(d.out, "skipped: %s\n", strings.Join(parts, ", "))
	}
	if rep.Kept == 0 {
		fmt.Fprintln(d.out, "no commit to learn from: nothing written (try more history with --max-commits, or an earlier --since)")
		return
	}
	if rep.Reused {
		fmt.Fprintf(d.out, "already bootstrapped from the same commits with the same settings: nothing written (--force derives the pairs again)\n")
		if rep.Failed > 0 {
			// The run reused lacks these commits' pairs: a failure that
			// has since gone (a smudge filter, a full disk) calls for
			// --force, which the reuse would otherwise hide.
			fmt.Fprintf(d.out, "%d kept commit(s) failed in that run and have no pairs (fix the cause, then --force derives them); the first: %s\n", rep.Failed, rep.Errors[0])
		}
	} else {
		printBootstrapPairs(d, rep)
	}
	fmt.Fprintf(d.out, "datasets: %s (training plan %d)\n", relPath(root, rep.Dir), rep.PlanID)
	for _, ds := range rep.Datasets {
		fmt.Fprintf(d.out, "  %-24s %4d train %4d valid  (dataset %d)\n", ds.BaseModel+"/"+ds.Stage, ds.Train, ds.Valid, ds.ID)
	}
}

// printBootstrapPairs says what a run that derived the pairs drew.
func printBootstrapPairs(d *deps, rep *bootstrap.Report) {
	var pairs []string
	for _, s := range train.Stages() {
		pairs = append(pairs, fmt.Sprintf("%s %d", s, rep.Pairs[s]))
	}
	fmt.Fprintf(d.out, "pairs: %s\n", strings.Join(pairs, ", "))
	fmt.Fprintf(d.out, "execute_code: %d of %d commit(s) written as edit blocks reproduced exactly, %d with every SEARCH line in the context (kept)\n",
		rep.Code.Reproduced, rep.Code.Tried, rep.Code.InContext)
	for _, s := range train.Stages() {
		if len(rep.Missing[s]) == 0 {
			continue
		}
		var why []string
		for k, n := range rep.Missing[s] {
			why = append(why, fmt.Sprintf("%s %d", k, n))
		}
		sort.Strings(why)
		fmt.Fprintf(d.out, "  no %s pair: %s\n", s, strings.Join(why, ", "))
	}
	if rep.Failed > 0 {
		fmt.Fprintf(d.out, "%d kept commit(s) failed, e.g. %s\n", rep.Failed, rep.Errors[0])
	}
}
