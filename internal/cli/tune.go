package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/learn"
	"github.com/cra-dev/cra/internal/workspace"
)

type tuneOptions struct {
	repo       string
	maxCommits int
	budget     time.Duration
	forget     bool
	json       bool
	verbose    bool
}

func newTuneCmd(d *deps, runF func(context.Context, *deps, *tuneOptions) error) *cobra.Command {
	opts := &tuneOptions{}
	cmd := &cobra.Command{
		Use:   "tune [repo-path]",
		Short: "Learn the repository's own ranking weights from its history (no LLM)",
		Long: `Learn how much each of the ranker's signals (full-text relevance, the
names and symbols a task mentions, imports, co-change, tests, ...) is
worth in this repository, from its own history: every recent commit is a
retrieval task, its message the task and the files it changed the
answer.

For each of the newest --max-commits commits that look like a task (not
a merge, up to 6 files and fewer than 400 changed lines, some code, a
subject of four words or more), its parent is checked out in a scratch
worktree and indexed there, and the files cra ranks for the message are
kept with their signals: nothing the commit wrote is seen. The weights
are fitted on the older 70% of those commits, pulled towards cra's
global weights, and judged on the newest 30%: retrieval uses them only
when they rank the changed files better there than the global weights
do (Acc@5, then the mean reciprocal rank). Either way the verdict and
its figures are stored in .clean_room/curated.sqlite, and 'cra query
overview' shows which weights retrieval uses and why.

The examples and the scratch index stay in .clean_room/tune/, so a
later tune replays only the commits made since. --budget bounds the
replay; the fit uses what it has. --forget removes the repository's
weights: retrieval goes back to the global ones.`,
		Example: `  cra tune
  cra tune ~/src/project --max-commits 500 --budget 20m
  cra tune --forget`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.repo = "."
			if len(args) == 1 {
				opts.repo = args[0]
			}
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return tuneRun(cmd.Context(), d, opts)
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.maxCommits, "max-commits", 300, "learn from the newest N qualifying commits")
	f.DurationVar(&opts.budget, "budget", 10*time.Minute, "time to spend replaying new commits; the fit uses what was drawn")
	f.BoolVar(&opts.forget, "forget", false, "remove the repository's learned weights: rank with the global ones")
	f.BoolVar(&opts.json, "json", false, "print the result as JSON")
	f.BoolVarP(&opts.verbose, "verbose", "v", false, "progress of the replay on stderr")
	return cmd
}

func tuneRun(ctx context.Context, d *deps, opts *tuneOptions) error {
	if opts.maxCommits < 10 {
		return usageError{err: fmt.Errorf("--max-commits must be at least 10, got %d", opts.maxCommits)}
	}
	if opts.budget <= 0 {
		return usageError{err: fmt.Errorf("--budget must be positive, got %s", opts.budget)}
	}
	ws, err := openWorkspace(ctx, d, opts.repo, false)
	if err != nil {
		return err
	}
	defer ws.Close()
	_, repo, err := ws.Index(ctx)
	if err != nil {
		return err
	}
	db, err := ws.OpenIndexWriter(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	if opts.forget {
		had, err := learn.Forget(ctx, db, repo.ID)
		if err != nil {
			return err
		}
		if opts.json {
			return encodeJSON(d.out, map[string]bool{"forgotten": had})
		}
		if had {
			fmt.Fprintln(d.out, "forgot the repository's learned weights: retrieval ranks with the global ones")
		} else {
			fmt.Fprintln(d.out, "the repository had no learned weights: retrieval ranks with the global ones")
		}
		return nil
	}
	to := learn.TuneOptions{Repo: ws.Root, ScratchDir: learn.ScratchDir(ws.StateDir), DB: db, RepoID: repo.ID,
		Config: learn.RepoConfig{MaxCommits: opts.maxCommits}, Budget: opts.budget}
	if opts.verbose {
		to.Progress = d.errOut
	}
	res, err := learn.Tune(ctx, to)
	if errors.Is(err, learn.ErrTooFewCommits) {
		return fmt.Errorf("tune %s: %w: retrieval keeps the global weights (a longer --budget or more history gives more)", ws.Root, err)
	}
	if err != nil {
		return fmt.Errorf("tune %s: %w", ws.Root, err)
	}
	if opts.json {
		return encodeJSON(d.out, res)
	}
	printTune(d, ws, res)
	return nil
}

func printTune(d *deps, ws *workspace.Workspace, res *learn.TuneResult) {
	x := res.Extract
	fmt.Fprintf(d.out, "learned from %d commit(s) at %.12s in %s (%d replayed now, %d drawn before", res.Examples, res.Head,
		res.Duration.Round(time.Second), x.Examples, x.Skipped)
	if x.Stopped {
		fmt.Fprint(d.out, "; the --budget ran out before every commit was replayed")
	}
	fmt.Fprintln(d.out, ")")
	fit := res.Fit
	fmt.Fprintf(d.out, "validation, %d newest commits: Acc@5 %.2f, MRR %.3f with the repository's weights; %.2f, %.3f with the global ones\n",
		len(fit.Valid), fit.ValidRepo.Acc5, fit.ValidRepo.MRR, fit.ValidGlobal.Acc5, fit.ValidGlobal.MRR)
	if fit.Use {
		fmt.Fprintln(d.out, "retrieval now ranks with the repository's weights ('cra tune --forget' goes back to the global ones)")
	} else {
		fmt.Fprintln(d.out, "retrieval keeps the global weights: the repository's did not rank its newest commits' files better")
	}
}
