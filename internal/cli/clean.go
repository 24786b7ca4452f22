package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/fleet"
	"github.com/cra-dev/cra/internal/run"
)

type cleanOptions struct {
	repo      string
	dryRun    bool
	olderThan time.Duration
	force     bool
	json      bool
}

func newCleanCmd(d *deps, runF func(context.Context, *deps, *cleanOptions) error) *cobra.Command {
	opts := &cleanOptions{}
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Remove the worktrees and cra/ branches of runs that are over",
		Long: `Remove the git worktrees (.clean_room/worktrees/) and cra/<id> branches
that runs left behind, once the world log says the run is over (finish,
verified, failed) or knows nothing of it. A board task keeps its worktree
and branch until it is finalized or blocked.

Work nobody merged stays: a branch with commits HEAD does not have, or a
worktree with uncommitted changes, is kept and named, unless --force. A
run still going is never touched. Every decision is printed.`,
		Example: `  cra clean --dry-run
  cra clean --older-than 168h
  cra clean --force`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return cleanRun(cmd.Context(), d, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.repo, "repo", ".", "repository root, or a directory inside it")
	f.BoolVar(&opts.dryRun, "dry-run", false, "say what would be removed, and remove nothing")
	f.DurationVar(&opts.olderThan, "older-than", 0, "only runs whose last entry is older than this, e.g. 168h")
	f.BoolVar(&opts.force, "force", false, "also remove unmerged branches and worktrees with uncommitted changes")
	f.BoolVar(&opts.json, "json", false, "print the decisions as JSON")
	return cmd
}

func cleanRun(ctx context.Context, d *deps, opts *cleanOptions) error {
	if opts.olderThan < 0 {
		return usageError{err: errors.New("--older-than must be >= 0")}
	}
	tb, err := openBoard(ctx, d, opts.repo, false)
	if err != nil {
		return err
	}
	if tb == nil {
		fmt.Fprintln(d.out, "nothing to clean: no .clean_room/ here")
		return nil
	}
	defer tb.Close()
	res, err := run.Clean(ctx, tb.ws, run.CleanOptions{DryRun: opts.dryRun, OlderThan: opts.olderThan, Force: opts.force, Now: d.now,
		Board: func(ctx context.Context, id string) (bool, bool, error) {
			_, folder, err := tb.Store.Get(ctx, id)
			if errors.Is(err, fleet.ErrNotFound) {
				return false, false, nil
			}
			return err == nil, folder.Terminal(), err
		}})
	if opts.json {
		if res == nil {
			res = []run.Cleaned{}
		}
		if jerr := encodeJSON(d.out, res); jerr != nil {
			return jerr
		}
		return err
	}
	removed := 0
	for _, c := range res {
		what := c.Branch
		if c.Worktree != "" {
			what = c.Worktree
			if c.Branch != "" {
				what += " and " + c.Branch
			}
		}
		fmt.Fprintf(d.out, "%s: %s\n", what, c.Why)
		if c.Removed {
			removed++
		}
	}
	if len(res) == 0 {
		fmt.Fprintln(d.out, "nothing to clean")
	} else if !opts.dryRun {
		fmt.Fprintf(d.out, "removed %d of %d\n", removed, len(res))
	}
	return err
}
