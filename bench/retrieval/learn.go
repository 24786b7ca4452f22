package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/learn"
	"github.com/cra-dev/cra/internal/retrieve"
)

// Weights the harness measures cra with (-weights).
const (
	weightsDefault = "default"  // retrieve.DefaultWeights: what cra ships
	weightsHandSet = "hand-set" // retrieve.HandSetWeights
	weightsLearned = "learned"  // retrieve.LearnedWeights: bench/learn's global fit
	// weightsRepo are the repository's own, learned from its commits
	// before the task's base as 'cra tune' learns them, where they beat
	// DefaultWeights on the newest of those commits; DefaultWeights else.
	weightsRepo = "repo"
)

var weightNames = []string{weightsDefault, weightsHandSet, weightsLearned, weightsRepo, "file:FILE"}

// parseWeights reads -weights: names of weightNames, and file:FILE, the
// JSON of retrieve.Weights in FILE (bench/learn -json writes it), whose
// row is named "file:" and the file's name without its extension.
func parseWeights(list string) ([]string, map[string]retrieve.Weights, error) {
	var out []string
	files := map[string]retrieve.Weights{}
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		found := false
		for _, k := range weightNames {
			found = found || k == n
		}
		if path, ok := strings.CutPrefix(n, "file:"); ok && path != "" {
			w, err := readWeights(path)
			if err != nil {
				return nil, nil, fmt.Errorf("-weights: %w", err)
			}
			n = "file:" + strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
			if _, dup := files[n]; !dup {
				files[n] = w
			}
			found = true
		}
		if !found {
			return nil, nil, fmt.Errorf("-weights: unknown weights %q: want some of %s", n, strings.Join(weightNames, ", "))
		}
		for _, o := range out {
			if o == n {
				return nil, nil, fmt.Errorf("-weights: %s given twice", n)
			}
		}
		out = append(out, n)
	}
	return out, files, nil
}

// readWeights reads weights as JSON, refusing unknown fields and weights
// a ranking cannot use.
func readWeights(path string) (retrieve.Weights, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return retrieve.Weights{}, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var w retrieve.Weights
	if err := dec.Decode(&w); err != nil {
		return retrieve.Weights{}, fmt.Errorf("%s: %w (want the JSON of retrieve.Weights, as bench/learn -json writes it)", path, err)
	}
	if err := w.Validate(); err != nil {
		return retrieve.Weights{}, fmt.Errorf("%s: %w", path, err)
	}
	return w, nil
}

// fixedWeights are the weights of a name that does not depend on the
// task: a file's (files, from parseWeights) or a built-in name's.
func fixedWeights(name string, files map[string]retrieve.Weights) retrieve.Weights {
	if w, ok := files[name]; ok {
		return w
	}
	switch name {
	case weightsHandSet:
		return retrieve.HandSetWeights
	case weightsLearned:
		return retrieve.LearnedWeights
	}
	return retrieve.DefaultWeights
}

// repoLearner learns one repository's own weights for each of its tasks
// from the examples of its history (cached in -learn), as 'cra tune'
// would have learned them at the task's base.
type repoLearner struct {
	clone    string
	examples []learn.Example
	fits     map[string]fitResult // by the history's newest commit and length
	// Extract is what drawing the examples took (the cache's misses);
	// Fit the fits of every task.
	Extract time.Duration
	Fit     time.Duration
}

// newRepoLearner brings the repository's cache of examples up to date:
// the newest -learn-commits qualifying commits reachable from until (the
// newest task's base), each ranked at its parent with the hand-set
// weights, so the cache holds whatever DefaultWeights are.
func newRepoLearner(ctx context.Context, o *options, name, clone, until string, progress io.Writer) (*repoLearner, error) {
	key := strings.ReplaceAll(name, "/", "+")
	if err := os.MkdirAll(o.learnDir, 0o755); err != nil {
		return nil, err
	}
	file := filepath.Join(o.learnDir, key+".jsonl")
	have, err := learn.ReadExamplesFile(file)
	if err != nil {
		return nil, err
	}
	skip := map[string]bool{}
	for _, e := range have {
		skip[e.Commit] = true
	}
	f, err := os.OpenFile(file, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	start := time.Now()
	_, err = learn.Extract(ctx, learn.ExtractOptions{
		Repo: clone, ScratchDir: filepath.Join(o.learnDir, key+".scratch"), Name: name, Until: until,
		MaxCommits: o.learnCommits, Skip: skip, Weights: retrieve.HandSetWeights, Progress: progress,
	}, func(e learn.Example) error {
		have = append(have, e)
		return learn.WriteExample(f, e)
	})
	if err != nil {
		return nil, fmt.Errorf("learn from %s: %w", name, err)
	}
	return &repoLearner{clone: clone, examples: have, fits: map[string]fitResult{}, Extract: time.Since(start)}, nil
}

// taskFit is what the repository's weights were for one task.
type taskFit struct {
	Use    bool   `json:"use"`
	Reason string `json:"reason"`
	// Train and Valid count the commits learned from and judged on; Newest
	// is the newest of them, strictly before the task's base.
	Train  int    `json:"train"`
	Valid  int    `json:"valid"`
	Newest string `json:"newest,omitempty"`
	Error  string `json:"error,omitempty"`
}

// weightsFor returns the repository's weights for a task whose base is
// checkout: learned from learn.Before the base only (the history made
// before it, which holds neither the base nor any later commit), kept
// where they beat DefaultWeights on the newest of those commits.
func (l *repoLearner) weightsFor(ctx context.Context, checkout string) (retrieve.Weights, taskFit, error) {
	anc, err := gitx.Ancestors(ctx, l.clone, checkout)
	if err != nil {
		return retrieve.Weights{}, taskFit{}, err
	}
	out, err := gitOut(ctx, l.clone, "show", "-s", "--format=%aI", checkout+"^{commit}")
	if err != nil {
		return retrieve.Weights{}, taskFit{}, err
	}
	date, err := time.Parse(time.RFC3339, strings.TrimSpace(out))
	if err != nil {
		return retrieve.Weights{}, taskFit{}, fmt.Errorf("date of %s: %w", short(checkout), err)
	}
	return l.fitBefore(learn.Before(l.examples, checkout, date, anc))
}

// fitBefore fits the repository's weights on a history, reusing the fit
// of an earlier task with the same history.
func (l *repoLearner) fitBefore(h learn.History) (retrieve.Weights, taskFit, error) {
	commits := h.Commits()
	key := fmt.Sprint(len(commits))
	if len(commits) > 0 {
		key += commits[len(commits)-1]
	}
	r, ok := l.fits[key]
	if !ok {
		start := time.Now()
		r.fit, r.err = learn.FitRepo(h, retrieve.DefaultWeights, learn.RepoConfig{MaxCommits: 300})
		l.Fit += time.Since(start)
		if r.err != nil && !errors.Is(r.err, learn.ErrTooFewCommits) {
			return retrieve.Weights{}, taskFit{}, r.err
		}
		l.fits[key] = r
	}
	fit, err := r.fit, r.err
	tf := taskFit{Use: fit.Use, Reason: fit.Reason, Train: len(fit.Train), Valid: len(fit.Valid)}
	if len(fit.Valid) > 0 {
		tf.Newest = fit.Valid[len(fit.Valid)-1]
	}
	if err != nil || !fit.Use {
		if err != nil {
			tf.Error = err.Error()
		}
		return retrieve.DefaultWeights, tf, nil
	}
	return fit.Weights, tf, nil
}

// fitResult is a history's fit, or why there is none.
type fitResult struct {
	fit learn.RepoFit
	err error
}
