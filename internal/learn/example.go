// Package learn fits the ranker's fusion (retrieve.Weights) to a
// repository's history: every past commit is a ranking problem, its
// message the task and the files it changed the answer (issue 33).
//
// Extract replays commits at their parents (replay.Replay: a scratch
// worktree and an incremental scratch index whose history stops at the
// parent) and keeps, per commit, the candidates retrieve.Ranker gives
// there with their signals and which of them the commit changed: an
// Example. Nothing the commit itself wrote is seen, neither by the
// index nor by the ranker.
//
// Fit learns weights from examples with a listwise (softmax) or pairwise
// (RankNet) objective over retrieve.Weights.Fuse, the very function Rank
// scores with, regularised towards prior weights. bench/learn fits the
// global weights on public repositories' histories; Tune fits one
// repository's own on its recent history, keeps them only where they
// beat the global ones on its newer commits, and Store records them in
// the curated DB, where retrieve.WeightsFor finds them.
package learn

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
)

// Example is one past commit as a ranking problem.
type Example struct {
	Repo   string    `json:"repo"`
	Commit string    `json:"commit"`
	Parent string    `json:"parent"`
	Date   time.Time `json:"date"` // the commit's author date
	Task   string    `json:"task"` // the message without its trailers
	// Gold are the files the commit changed that existed at the parent in
	// a language cra parses (tests included): what a retrieval for the
	// task should find. Lines are their old-side changed lines, as
	// [first, last] ranges (a pure insertion counts the lines on either
	// side of it).
	Gold  []string            `json:"gold"`
	Lines map[string][][2]int `json:"lines,omitempty"`
	// Unranked counts the gold files not among the candidates: no
	// weighting can find them.
	Unranked int `json:"unranked,omitempty"`
	// Candidates are the ranker's candidates at the parent, in its order.
	Candidates []Row `json:"candidates"`
}

// Row is one candidate file of an Example.
type Row struct {
	Path string `json:"path"`
	// Gold: the commit changed it (see Example.Gold). Changed: it changed
	// but is not code (a changelog, a config), so it is no answer.
	Gold    bool `json:"gold,omitempty"`
	Changed bool `json:"changed,omitempty"`
	Test    bool `json:"test,omitempty"`
	Code    bool `json:"code,omitempty"`
	// Prose is retrieve.Candidate.Prose; Recalled: only plain BM25 recall
	// brought it (no fused score: it ranks after every fused one).
	Prose int `json:"prose,omitempty"`
	// Decl: the file only declares types (lang.DeclarationOnly), a
	// source file, not a test; retrieve.Candidate.DeclFile, which leaves
	// out a file the task names (Fit works that out again from the
	// signals, so examples that mark every such file serve too).
	Decl     bool               `json:"decl,omitempty"`
	Recalled bool               `json:"recalled,omitempty"`
	Signals  map[string]float64 `json:"signals,omitempty"`
}

// ReadExamples reads JSONL examples, one a line; blank lines are skipped.
func ReadExamples(r io.Reader) ([]Example, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
	var out []Example
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var e Example
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("example line %d: %w", n, err)
		}
		if e.Commit == "" {
			return nil, fmt.Errorf("example line %d: no commit", n)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read examples: %w", err)
	}
	return out, nil
}

// ReadExamplesFile reads a JSONL file of examples; a missing file has
// none.
func ReadExamplesFile(path string) ([]Example, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ex, err := ReadExamples(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ex, nil
}

// WriteExample appends one example as a JSONL line.
func WriteExample(w io.Writer, e Example) error {
	data, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("write example %.12s: %w", e.Commit, err)
	}
	_, err = w.Write(append(data, '\n'))
	return err
}
