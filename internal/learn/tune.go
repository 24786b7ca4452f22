package learn

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/cra-dev/cra/internal/atomicfile"
	"github.com/cra-dev/cra/internal/flock"
	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/retrieve"
)

// ScratchDir is where 'cra tune' keeps its state in a repository's state
// directory (.clean_room/): the replay's scratch index, kept so that the
// next tune replays only the commits made since, and the examples drawn.
func ScratchDir(stateDir string) string { return filepath.Join(stateDir, "tune") }

// ExamplesVersion names what an example holds: a change to the ranker's
// signals or to Extract makes older cached examples useless, and a tune
// that finds another version draws them again.
const ExamplesVersion = 1

// TuneOptions are a tune's inputs.
type TuneOptions struct {
	// Repo is the repository's top level; only read.
	Repo string
	// ScratchDir holds the replay and the cached examples (ScratchDir of
	// the state directory). Required.
	ScratchDir string
	// DB is the curated DB, read-write, and RepoID the repository's row:
	// the fit is stored there.
	DB     *sql.DB
	RepoID int64
	// Config bounds the fit; Config.MaxCommits is also how many of the
	// newest commits are drawn.
	Config RepoConfig
	// Budget bounds the drawing of new examples (0: 10 minutes); the fit
	// then uses what it has.
	Budget time.Duration
	// Progress gets the extraction's lines; nil is silent.
	Progress io.Writer
}

// TuneResult is what a tune did.
type TuneResult struct {
	Head     string         `json:"head"`
	Extract  *ExtractReport `json:"extract"`
	Examples int            `json:"examples"`
	Fit      RepoFit        `json:"fit"`
	Duration time.Duration  `json:"duration_ns"`
}

// ErrTuneBusy is another tune of the same repository, running.
var ErrTuneBusy = errors.New("tune busy")

// cacheMeta says how the cached examples were drawn.
type cacheMeta struct {
	Version int              `json:"version"`
	Weights retrieve.Weights `json:"weights"`
}

// Tune learns the repository's own weights from its recent history and
// stores them with their verdict (see FitRepo and Store). It draws the
// examples of the newest Config.MaxCommits qualifying commits at HEAD,
// reusing those drawn by earlier tunes, so a rerun replays only new
// commits; it judges the weights against retrieve.DefaultWeights.
func Tune(ctx context.Context, opts TuneOptions) (*TuneResult, error) {
	start := time.Now()
	if opts.ScratchDir == "" || opts.DB == nil {
		return nil, errors.New("tune: a scratch directory and the curated DB are required")
	}
	cfg := opts.Config.withDefaults()
	if opts.Budget <= 0 {
		opts.Budget = 10 * time.Minute
	}
	if err := os.MkdirAll(opts.ScratchDir, 0o755); err != nil {
		return nil, err
	}
	lk, ok, err := flock.TryLock(filepath.Join(opts.ScratchDir, "tune.lock"))
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", opts.ScratchDir, err)
	}
	if !ok {
		return nil, fmt.Errorf("%w: another 'cra tune' of %s is running; wait for it", ErrTuneBusy, opts.Repo)
	}
	defer lk.Close()

	head, err := gitx.Head(ctx, opts.Repo)
	if err != nil {
		return nil, err
	}
	if head == "" {
		return nil, fmt.Errorf("tune: %s has no commits: there is no history to learn from", opts.Repo)
	}
	global := retrieve.DefaultWeights
	examples, err := cachedExamples(opts.ScratchDir, global)
	if err != nil {
		return nil, err
	}
	skip := map[string]bool{}
	for _, e := range examples {
		skip[e.Commit] = true
	}
	file := filepath.Join(opts.ScratchDir, "examples.jsonl")
	f, err := os.OpenFile(file, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rep, err := Extract(ctx, ExtractOptions{
		Repo: opts.Repo, ScratchDir: opts.ScratchDir, MaxCommits: cfg.MaxCommits, Skip: skip,
		Weights: global, Deadline: start.Add(opts.Budget), Progress: opts.Progress,
	}, func(e Example) error {
		examples = append(examples, e)
		return WriteExample(f, e)
	})
	if err != nil {
		return nil, err
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	ancestors, err := gitx.Ancestors(ctx, opts.Repo, head)
	if err != nil {
		return nil, err
	}
	h := Through(examples, head, ancestors)
	res := &TuneResult{Head: head, Extract: rep, Examples: h.Len()}
	res.Fit, err = FitRepo(h, global, cfg)
	if err != nil {
		return res, err
	}
	res.Duration = time.Since(start)
	if err := Store(ctx, opts.DB, opts.RepoID, res.Fit, head, res.Duration); err != nil {
		return res, err
	}
	return res, nil
}

// cachedExamples reads the examples earlier tunes drew, when they were
// drawn as this tune would draw them (ExamplesVersion, the weights);
// otherwise it clears them and returns none.
func cachedExamples(dir string, w retrieve.Weights) ([]Example, error) {
	metaFile, file := filepath.Join(dir, "examples.meta.json"), filepath.Join(dir, "examples.jsonl")
	want := cacheMeta{Version: ExamplesVersion, Weights: w}
	var have cacheMeta
	if data, err := os.ReadFile(metaFile); err == nil && json.Unmarshal(data, &have) == nil && have == want {
		return ReadExamplesFile(file)
	}
	if err := os.Remove(file); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	data, err := json.Marshal(want)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Write(metaFile, data, 0o644); err != nil {
		return nil, err
	}
	return nil, nil
}
