package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"

	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/index"
	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/learn"
	"github.com/cra-dev/cra/internal/retrieve"
)

// markHistory sets the history signal (retrieve.HistoryScores) of the
// candidates of examples extracted before it existed, each as the index
// at the example's parent would have it: the commits are the parent and
// its ancestors, the newest index.DefaultHistoryDepth non-merge ones as
// the indexer mines them (never the example's commit nor anything after
// it), each linked to the files it changed that exist at the parent.
// Commits over index.DefaultMaxCommitFiles count nothing, as in Rank.
// Only the candidates there are get a score: a file history alone would
// bring has no other signals in the cache (Rank with Ranker.ExtraFacts at
// weight 0 does the same). It returns how many candidate rows got a
// score.
func markHistory(ctx context.Context, clone string, examples []learn.Example) (marked int, err error) {
	err = eachPast(ctx, clone, examples, func(e *learn.Example, past []kb.PastCommit, ids map[string]int64) {
		scores := retrieve.HistoryScores(past, index.DefaultMaxCommitFiles, retrieve.Analyze(e.Task))
		marked += setHistory(e, scores, ids)
	})
	return marked, err
}

// setHistory sets the history signal of e's candidates from scores (by
// the ids of the files at the parent) and returns how many got one.
func setHistory(e *learn.Example, scores map[int64]float64, ids map[string]int64) (marked int) {
	for ci := range e.Candidates {
		c := &e.Candidates[ci]
		delete(c.Signals, "history")
		if c.Recalled {
			continue // only BM25 recall brought it: Rank gives it no signals
		}
		if v := scores[ids[c.Path]]; v > 0 && ids[c.Path] != 0 {
			if c.Signals == nil {
				c.Signals = map[string]float64{}
			}
			c.Signals["history"] = v
			marked++
		}
	}
	return marked
}

// eachPast calls fn for each example with the commits the index at its
// parent would have mined, newest first: the parent and its ancestors,
// the newest index.DefaultHistoryDepth non-merge ones (never the
// example's commit nor anything after it), each linked to the files it
// changed that exist at the parent, by the ids in ids.
func eachPast(ctx context.Context, clone string, examples []learn.Example, fn func(e *learn.Example, past []kb.PastCommit, ids map[string]int64)) error {
	if len(examples) == 0 {
		return nil
	}
	// The whole history once, merges included so that ancestry can be
	// walked; the examples' parents are all in it.
	var log []gitx.Commit
	if err := gitx.Log(ctx, clone, gitx.LogOptions{Merges: true, Until: newestParent(ctx, clone, examples)}, func(c gitx.Commit) error {
		log = append(log, c)
		return nil
	}); err != nil {
		return err
	}
	at := make(map[string]int, len(log))
	for i, c := range log {
		at[c.Hash] = i
	}
	for ei := range examples {
		e := &examples[ei]
		if _, ok := at[e.Parent]; !ok {
			return fmt.Errorf("example %.12s: parent %.12s is not in the history of %s", e.Commit, e.Parent, clone)
		}
		// The parent's ancestors (itself included), in the log's order.
		in := make([]bool, len(log))
		stack := []int{at[e.Parent]}
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if in[i] {
				continue
			}
			in[i] = true
			for _, p := range log[i].Parents {
				if j, ok := at[p]; ok && !in[j] {
					stack = append(stack, j)
				}
			}
		}
		tree, err := exec.CommandContext(ctx, "git", "-C", clone, "ls-tree", "-r", "--full-tree", "--name-only", e.Parent).Output()
		if err != nil {
			return fmt.Errorf("ls-tree %.12s: %w", e.Parent, err)
		}
		ids := map[string]int64{}
		for _, p := range strings.Split(strings.TrimSpace(string(tree)), "\n") {
			ids[p] = int64(len(ids) + 1)
		}
		var past []kb.PastCommit
		for i, c := range log {
			if !in[i] || len(c.Parents) > 1 {
				continue
			}
			if c.Hash == e.Commit {
				// The walk from the parent cannot reach it; a history
				// that says otherwise is broken, and would leak.
				return fmt.Errorf("example %.12s is an ancestor of its own parent", e.Commit)
			}
			pc := kb.PastCommit{ID: int64(len(past) + 1), Message: c.Message, FilesChanged: len(c.Files)}
			for _, f := range c.Files {
				if id, ok := ids[f.Path]; ok {
					pc.Files = append(pc.Files, id)
				}
			}
			past = append(past, pc)
			if len(past) == index.DefaultHistoryDepth {
				break
			}
		}
		fn(e, past, ids)
	}
	return nil
}

// newestParent is the example parent every other is an ancestor of, or
// HEAD when none is (the log then starts there).
func newestParent(ctx context.Context, clone string, examples []learn.Example) string {
	best := examples[0].Parent
	for _, e := range examples[1:] {
		if gitx.IsAncestor(ctx, clone, best, e.Parent) {
			best = e.Parent
		}
	}
	for _, e := range examples {
		if !gitx.IsAncestor(ctx, clone, e.Parent, best) {
			return "HEAD"
		}
	}
	return best
}
