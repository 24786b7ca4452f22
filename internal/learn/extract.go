package learn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/cra-dev/cra/internal/evidence"
	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/lang"
	"github.com/cra-dev/cra/internal/replay"
	"github.com/cra-dev/cra/internal/retrieve"
)

// ExtractOptions are an extraction's inputs.
type ExtractOptions struct {
	// Repo is the repository whose history is read, any directory of its
	// work tree; it is never written.
	Repo string
	// ScratchDir holds the replay's worktree (removed at the end) and its
	// index (kept, so a later extraction of newer commits is incremental).
	// Required.
	ScratchDir string
	// Name is Example.Repo; empty: the repository's directory name.
	Name string
	// Until is the revision whose history is read; empty is HEAD.
	Until string
	// Filter keeps the commits worth learning from; the zero Filter is
	// TrainingFilter().
	Filter replay.Filter
	// MaxCommits bounds the kept commits, the newest; 0 is all.
	MaxCommits int
	// Skip holds commits not to extract again (extracted before).
	Skip map[string]bool
	// Weights are the ranker's weights at extraction: they choose the
	// strongest candidates, whose scores propagate to their neighbours.
	// The zero value is retrieve.DefaultWeights.
	Weights retrieve.Weights
	// Candidates is how many ranked files an example keeps (0: 100, as
	// the retrieval harness ranks).
	Candidates int
	// Deadline, when set, is when no further commit is started: the
	// extraction ends with the examples it has.
	Deadline time.Time
	// Progress gets a line per commit; nil is silent.
	Progress io.Writer
}

// ExtractReport is what an extraction did.
type ExtractReport struct {
	Seen     int `json:"commits_seen"`
	Kept     int `json:"commits_kept"`
	Skipped  int `json:"commits_already_extracted"`
	Examples int `json:"examples"`
	// NoGold counts kept commits none of whose changed code existed at the
	// parent (only new files: nothing to find).
	NoGold int `json:"no_gold"`
	// Failed counts the commits whose parent could not be checked out or
	// indexed; Errors quotes the first few.
	Failed int      `json:"failed"`
	Errors []string `json:"errors,omitempty"`
	// Stopped: the deadline came before every kept commit was visited.
	Stopped  bool          `json:"stopped,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	Index    time.Duration `json:"index_ns"`
}

// TrainingFilter keeps commits shaped like the tasks retrieval is
// measured on (bench/retrieval/mkset): one parent, up to six files and
// fewer than 400 changed lines, some code, a subject that describes the
// change.
func TrainingFilter() replay.Filter {
	f := replay.DefaultFilter()
	f.MaxFiles, f.MaxLines = 6, 400
	return f
}

// ErrNoScratch is an extraction without a scratch directory.
var ErrNoScratch = errors.New("extract: a scratch directory is required")

// Extract replays the kept commits of opts.Repo, oldest first, each at its
// parent, and calls emit with each commit's Example.
func Extract(ctx context.Context, opts ExtractOptions, emit func(Example) error) (*ExtractReport, error) {
	start := time.Now()
	if opts.ScratchDir == "" {
		return nil, ErrNoScratch
	}
	if opts.Filter.MaxFiles == 0 {
		opts.Filter = TrainingFilter()
	}
	if opts.Weights == (retrieve.Weights{}) {
		opts.Weights = retrieve.DefaultWeights
	}
	if err := opts.Weights.Validate(); err != nil {
		return nil, err
	}
	if opts.Candidates <= 0 {
		opts.Candidates = 100
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	top, _, err := gitx.TopLevel(ctx, opts.Repo)
	if err != nil {
		return nil, err
	}
	if opts.Name == "" {
		opts.Name = filepath.Base(top)
	}
	rep := &ExtractReport{}
	commits, err := keptCommits(ctx, top, opts, rep)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(opts.Progress, "%s: %d commit(s) examined, %d kept, %d to extract\n", opts.Name, rep.Seen, rep.Kept, len(commits))
	i := 0
	err = replay.Replay(ctx, top, opts.ScratchDir, commits, func(ctx context.Context, s *replay.Step, err error) error {
		i++
		rep.Index += s.Index
		if !opts.Deadline.IsZero() && time.Now().After(opts.Deadline) {
			rep.Stopped = true
			return errStop
		}
		var e *Example
		if err == nil {
			e, err = example(ctx, top, opts, s)
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			rep.Failed++
			if len(rep.Errors) < 10 {
				rep.Errors = append(rep.Errors, fmt.Sprintf("%.12s: %v", s.Commit.Hash, err))
			}
			fmt.Fprintf(opts.Progress, "[%d/%d] %.12s failed: %v\n", i, len(commits), s.Commit.Hash, err)
			return nil
		}
		if e == nil {
			rep.NoGold++
			return nil
		}
		rep.Examples++
		if i%25 == 0 || i == len(commits) {
			fmt.Fprintf(opts.Progress, "[%d/%d] %s %.12s (%s elapsed)\n", i, len(commits), opts.Name, s.Commit.Hash, time.Since(start).Round(time.Second))
		}
		return emit(*e)
	})
	rep.Duration = time.Since(start)
	if errors.Is(err, errStop) {
		err = nil
	}
	if err != nil {
		return rep, err
	}
	return rep, nil
}

// errStop ends a replay at the deadline.
var errStop = errors.New("deadline")

// keptCommits lists the commits to extract, oldest first: the newest
// MaxCommits the filter keeps, less those in Skip.
func keptCommits(ctx context.Context, top string, opts ExtractOptions, rep *ExtractReport) ([]gitx.Commit, error) {
	var kept []gitx.Commit
	stop := errors.New("enough")
	err := gitx.Log(ctx, top, gitx.LogOptions{LineStats: true, Merges: true, Until: opts.Until}, func(c gitx.Commit) error {
		rep.Seen++
		if opts.Filter.Check(c) != "" {
			return nil
		}
		rep.Kept++
		if opts.Skip[c.Hash] {
			rep.Skipped++
		} else {
			kept = append(kept, c)
		}
		if opts.MaxCommits > 0 && rep.Kept >= opts.MaxCommits {
			return stop
		}
		return nil
	})
	if err != nil && !errors.Is(err, stop) {
		return nil, err
	}
	slices.Reverse(kept)
	return kept, nil
}

// example ranks the files for s's commit at its parent and labels them
// with what the commit changed; nil when none of its changed code
// existed at the parent.
func example(ctx context.Context, top string, opts ExtractOptions, s *replay.Step) (*Example, error) {
	c := s.Commit
	date, err := time.Parse(time.RFC3339, c.Timestamp)
	if err != nil {
		return nil, fmt.Errorf("commit %.12s: date %q: %w", c.Hash, c.Timestamp, err)
	}
	e := &Example{Repo: opts.Name, Commit: c.Hash, Parent: c.Parents[0], Date: date.UTC(), Task: replay.TaskText(c.Message)}
	gold, changed := map[string]bool{}, map[string]bool{}
	for _, f := range c.Files {
		if fi, err := os.Stat(filepath.Join(s.Root, filepath.FromSlash(f.Path))); err != nil || !fi.Mode().IsRegular() {
			continue // added by the commit: nothing to find at the parent
		}
		if l, ok := lang.Detect(f.Path); ok && lang.Parsed(string(l)) {
			gold[f.Path] = true
		} else {
			changed[f.Path] = true
		}
	}
	if len(gold) == 0 {
		return nil, nil
	}
	e.Gold = slices.Sorted(maps.Keys(gold))
	if e.Lines, err = changedLines(ctx, top, c, gold); err != nil {
		return nil, err
	}
	rk := retrieve.NewRanker(s.KB, s.RepoID)
	rk.Root, rk.Weights, rk.ExtraFacts = s.Root, opts.Weights, true
	cands, err := rk.Rank(ctx, retrieve.Analyze(e.Task), opts.Candidates)
	if err != nil {
		return nil, fmt.Errorf("rank %.12s: %w", c.Hash, err)
	}
	found := 0
	for _, cd := range cands {
		r := Row{Path: cd.Path, Gold: gold[cd.Path], Changed: changed[cd.Path], Test: evidence.IsTestFile(cd.Path),
			Code: lang.Parsed(cd.Language), Prose: cd.Prose, Decl: cd.DeclFile, Signals: map[string]float64{}}
		for k, v := range cd.Signals {
			if k == "recall" {
				r.Recalled = true
				continue
			}
			r.Signals[k] = v
		}
		if r.Gold {
			found++
		}
		e.Candidates = append(e.Candidates, r)
	}
	e.Unranked = len(gold) - found
	return e, nil
}

// changedLines are the old-side lines c changed in each gold file, as the
// retrieval harness counts them: a removed or replaced line counts
// itself, a pure insertion the lines on either side of it.
func changedLines(ctx context.Context, top string, c gitx.Commit, gold map[string]bool) (map[string][][2]int, error) {
	files, err := gitx.DiffHunks(ctx, top, c.Parents[0], c.Hash)
	if err != nil {
		return nil, err
	}
	out := map[string][][2]int{}
	for _, f := range files {
		if !gold[f.OldPath] {
			continue
		}
		for _, h := range f.Hunks {
			switch {
			case h.OldLines > 0:
				out[f.OldPath] = append(out[f.OldPath], [2]int{h.OldStart, h.OldStart + h.OldLines - 1})
			case h.OldStart == 0:
				out[f.OldPath] = append(out[f.OldPath], [2]int{1, 1})
			default:
				out[f.OldPath] = append(out[f.OldPath], [2]int{h.OldStart, h.OldStart + 1})
			}
		}
	}
	return out, nil
}
