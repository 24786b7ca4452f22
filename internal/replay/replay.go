package replay

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/index"
	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
)

// Step is one commit of a replay, seen as it stood before the commit:
// the scratch worktree Root holds its first parent's tree, and the
// scratch index (KB, RepoID) describes that tree, with the history mined
// up to the parent and no further. Nothing the commit itself changed is
// in either.
type Step struct {
	Commit gitx.Commit
	Root   string
	KB     *kb.KnowledgeBase
	RepoID int64
	// Index is the time the incremental index run of the parent took.
	Index time.Duration
}

// Replay visits commits at their first parents, in the order given
// (oldest first keeps each index run incremental and the mined history
// growing): it checks each parent out, detached, in the scratch worktree
// scratchDir/worktree of the repository top, indexes it into the scratch
// curated DB under scratchDir/index, and calls each with the step. The
// scratch index is kept, so a later replay of newer commits indexes
// incrementally; the worktree is removed however Replay returns.
//
// A checkout or an index run that fails costs its commit only: each is
// called with the error (and a step holding just the commit) and decides.
// An error each returns ends the replay and is Replay's. The caller holds
// whatever lock keeps two replays out of one scratch directory.
func Replay(ctx context.Context, top, scratchDir string, commits []gitx.Commit, each func(ctx context.Context, s *Step, err error) error) (err error) {
	if len(commits) == 0 {
		return nil
	}
	for _, c := range commits {
		if len(c.Parents) == 0 {
			return fmt.Errorf("replay: commit %.12s has no parent to check out", c.Hash)
		}
	}
	wt := filepath.Join(scratchDir, "worktree")
	// Removed also when the add fails: a git killed in the middle of it
	// (a cancellation) leaves the worktree registered, and locked.
	defer func() {
		if rerr := gitx.RemoveDetachedWorktree(context.WithoutCancel(ctx), top, wt); rerr != nil {
			err = errors.Join(err, fmt.Errorf("remove the scratch worktree %s: %w (remove it with 'git worktree remove --force --force %s')", wt, rerr, wt))
		}
	}()
	if err := gitx.AddDetachedWorktree(ctx, top, wt, commits[0].Parents[0]); err != nil {
		return fmt.Errorf("scratch worktree: %w", err)
	}
	factory := store.NewFactory(statedir.At(filepath.Join(scratchDir, "index")))
	b := index.NewBuilder(factory)
	var db *sql.DB
	defer func() {
		if db != nil {
			db.Close()
		}
	}()
	for _, c := range commits {
		if err := ctx.Err(); err != nil {
			return err
		}
		s := &Step{Commit: c, Root: wt}
		parent := c.Parents[0]
		if err := gitx.CheckoutDetached(ctx, wt, parent); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err := each(ctx, s, fmt.Errorf("check out %.12s: %w", parent, err)); err != nil {
				return err
			}
			continue
		}
		t := time.Now()
		res, err := b.Run(ctx, wt)
		s.Index = time.Since(t)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err := each(ctx, s, fmt.Errorf("index %.12s: %w", parent, err)); err != nil {
				return err
			}
			continue
		}
		if db == nil {
			if db, err = factory.Open(ctx, store.Curated, "", true); err != nil {
				return err
			}
		}
		s.KB, s.RepoID = kb.New(db), res.RepoID
		if err := each(ctx, s, nil); err != nil {
			return err
		}
	}
	return nil
}
