package retrieve

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/cra-dev/cra/internal/index"
	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/terms"
)

// The history signal (Weights.History): the files changed by the past
// commits whose messages are most like the task, as BugLocator scores the
// files fixed for similar bug reports. Two constants, set by reasoning and
// not fitted to any task:
const (
	// historyK is how many of the most similar past commits lend their
	// files score. A task has a handful of real precedents (the earlier
	// fix of the same bug, the feature it extends); past the first ten,
	// a commit shares only a common word or two with it, and its files,
	// summed over many such commits, would favour the files that change
	// most, which the churn signal already weighs.
	historyK = 10
	// historyAlpha damps a commit's share by its size: each file it changed
	// gets sim / files^historyAlpha. A square root, not BugLocator's plain
	// division: a typical fix changes its source, its test and a changelog,
	// and each of them is a fair answer, so a three-file commit still gives
	// each file 0.58 of its similarity, while a 40-file sweep gives 0.16.
	historyAlpha = 0.5
)

// BM25 constants of the commit-message search, Lucene's defaults, as the
// harness's baseline has them.
const historyK1, historyB = 1.2, 0.75

// pastIndex is the mined commits' messages as a BM25 index: read once per
// Ranker, so every task ranked through it pays for it once.
type pastIndex struct {
	docs     []pastDoc
	postings map[string][]posting // by term, by document ascending
	avgLen   float64
	changes  map[int64]int // by file, the commits counted here that changed it (HistoryParams.FileDamping)
}

type pastDoc struct {
	files   []int64 // the indexed files it changed, ascending
	changed int     // files it changed in all, deleted or renamed ones included
	length  int     // its terms
	subject string  // its first line, for the reasons
	age     int     // its position among the commits given (HistoryParams.HalfLife)
}

type posting struct {
	doc int32
	tf  int32
}

// pastCommits returns the repository's past commits as a BM25 index, read
// once.
func (r *Ranker) pastCommits(ctx context.Context) (*pastIndex, error) {
	if r.past != nil {
		return r.past, nil
	}
	commits, maxFiles, err := r.kb.PastCommits(ctx, r.repoID)
	if err != nil {
		return nil, fmt.Errorf("rank: %w", err)
	}
	r.past = newPastIndex(commits, maxFiles)
	return r.past, nil
}

// newPastIndex indexes the messages of commits, leaving out those that
// changed more than maxFiles files (DefaultMaxCommitFiles for 0).
func newPastIndex(commits []kb.PastCommit, maxFiles int) *pastIndex {
	if maxFiles <= 0 {
		maxFiles = index.DefaultMaxCommitFiles
	}
	px := &pastIndex{postings: map[string][]posting{}, changes: map[int64]int{}}
	total := 0
	for age, c := range commits {
		// A commit over max_commit_files (a sweep, a vendoring) says
		// nothing about which files a task needs, as co-change has it; one
		// whose files are all gone has nothing to give.
		if c.FilesChanged > maxFiles || len(c.Files) == 0 {
			continue
		}
		for _, f := range c.Files {
			px.changes[f]++
		}
		text := emailRe().ReplaceAllString(trailerRe().ReplaceAllString(c.Message, ""), "")
		tf := map[string]int{}
		var order []string
		n := 0
		terms.Each(text, func(t string) {
			if tf[t] == 0 {
				order = append(order, t)
			}
			tf[t]++
			n++
		})
		if n == 0 {
			continue
		}
		d := int32(len(px.docs))
		for _, t := range order {
			px.postings[t] = append(px.postings[t], posting{doc: d, tf: int32(tf[t])})
		}
		subject, _, _ := strings.Cut(strings.TrimSpace(c.Message), "\n")
		px.docs = append(px.docs, pastDoc{files: c.Files, changed: max(c.FilesChanged, len(c.Files)), length: n, subject: subject, age: age})
		total += n
	}
	if len(px.docs) > 0 {
		px.avgLen = float64(total) / float64(len(px.docs))
	}
	return px
}

// similar returns the historyK past commits most like the task's terms by
// BM25, best first (ties by the commit's order in the index), with their
// similarity; none when no commit shares a term.
func (px *pastIndex) similar(keywords []string) ([]int32, []float64) {
	return px.similarWith(keywords, historyK, 0)
}

// similarWith is similar with k commits, leaving out those that changed
// more than maxFiles files (0: none left out beyond the index's bound).
func (px *pastIndex) similarWith(keywords []string, k, maxFiles int) ([]int32, []float64) {
	if len(px.docs) == 0 {
		return nil, nil
	}
	score := map[int32]float64{}
	seen := map[string]bool{}
	for _, k := range keywords {
		ps := px.postings[k]
		if len(ps) == 0 || seen[k] {
			continue
		}
		seen[k] = true
		idf := idf(len(px.docs), len(ps))
		for _, p := range ps {
			tf := float64(p.tf)
			norm := historyK1 * (1 - historyB + historyB*float64(px.docs[p.doc].length)/px.avgLen)
			score[p.doc] += idf * tf * (historyK1 + 1) / (tf + norm)
		}
	}
	docs := make([]int32, 0, len(score))
	for d, s := range score {
		if s > 0 && (maxFiles <= 0 || px.docs[d].changed <= maxFiles) {
			docs = append(docs, d)
		}
	}
	sort.Slice(docs, func(i, j int) bool {
		if si, sj := score[docs[i]], score[docs[j]]; si != sj {
			return si > sj
		}
		return docs[i] < docs[j]
	})
	docs = docs[:min(len(docs), k)]
	sims := make([]float64, len(docs))
	for i, d := range docs {
		sims[i] = score[d]
	}
	return docs, sims
}

// ceiling is the BM25 similarity of a commit of average length holding
// each of the task's terms the index knows once: what a commit that says
// all the task says would score.
func (px *pastIndex) ceiling(keywords []string) float64 {
	seen := map[string]bool{}
	total := 0.0
	for _, k := range keywords {
		ps := px.postings[k]
		if len(ps) == 0 || seen[k] {
			continue
		}
		seen[k] = true
		total += idf(len(px.docs), len(ps))
	}
	return total
}

// historyScores scores each file the historyK most similar past commits
// changed: the sum of sim(c) / files(c)^historyAlpha over them, divided
// by the best file's, so the best is 1. It also names, for each file, the
// most similar commit that changed it.
func (px *pastIndex) historyScores(keywords []string) (map[int64]float64, map[int64]string) {
	return px.historyScoresWith(keywords, DefaultHistoryParams())
}

// HistoryParams are the history signal's constants, apart so that a
// learner can compare other settings on past commits (bench/learn
// -history-variants); Rank uses DefaultHistoryParams.
type HistoryParams struct {
	K        int     // the most similar past commits that count (historyK)
	Alpha    float64 // a commit's share is sim / files^Alpha (historyAlpha)
	MaxFiles int     // commits that changed more files count nothing (0: only the index's bound)
	// HalfLife, in commits, halves a commit's share for every HalfLife
	// commits between it and the newest (0: no recency). It needs the
	// commits newest first (their position is their age).
	HalfLife float64
	// Confidence scales every score by (sim of the best commit / the
	// task's own best possible sim)^Confidence, so that a task whose
	// nearest past commit shares only a common word or two gets little
	// (0: the best file gets 1 whatever the similarity).
	Confidence float64
	// FileDamping divides a file's score by the number of past commits
	// that changed it (those under the files bound) to the power
	// FileDamping, as a term's weight falls with the documents that hold
	// it: a hub that most commits change is among the similar commits'
	// files whatever the task, and says less about it than a file only
	// a few commits changed (0: no damping). Weights.HistoryDamping.
	FileDamping float64
}

// DefaultHistoryParams are the constants Rank uses.
func DefaultHistoryParams() HistoryParams {
	return HistoryParams{K: historyK, Alpha: historyAlpha}
}

func (px *pastIndex) historyScoresWith(keywords []string, hp HistoryParams) (map[int64]float64, map[int64]string) {
	docs, sims := px.similarWith(keywords, hp.K, hp.MaxFiles)
	score := map[int64]float64{}
	why := map[int64]string{}
	for i, d := range docs {
		doc := px.docs[d]
		share := sims[i] / math.Pow(float64(doc.changed), hp.Alpha)
		if hp.HalfLife > 0 {
			share *= math.Exp2(-float64(doc.age) / hp.HalfLife)
		}
		for _, f := range doc.files {
			score[f] += share
			if why[f] == "" {
				why[f] = doc.subject
			}
		}
	}
	if hp.FileDamping > 0 {
		for f, v := range score {
			score[f] = v / math.Pow(float64(max(px.changes[f], 1)), hp.FileDamping)
		}
	}
	best := 0.0
	for _, v := range score {
		best = max(best, v)
	}
	if best > 0 {
		scale := 1 / best
		if hp.Confidence > 0 && len(sims) > 0 {
			if ceil := px.ceiling(keywords); ceil > 0 {
				scale *= math.Pow(min(1, sims[0]/ceil), hp.Confidence)
			}
		}
		for f := range score {
			score[f] *= scale
		}
	}
	return score, why
}

// historySignal gives the files the past commits most like the task
// changed their history score (pastIndex.historyScores). With enter, a
// file no other signal found becomes a candidate; without, only the
// candidates so far are scored (Ranker.ExtraFacts at weight 0: the
// signal is recorded and the ranking left as it was).
func (r *Ranker) historySignal(ctx context.Context, q TaskQuery, enter bool, all map[int64]*scored, byID map[int64]*rankFile, get func(*rankFile) *scored) error {
	px, err := r.pastCommits(ctx)
	if err != nil {
		return err
	}
	hp := DefaultHistoryParams()
	hp.FileDamping = r.Weights.HistoryDamping
	scores, why := px.historyScoresWith(q.Keywords, hp)
	for id, v := range scores {
		f := byID[id]
		if f == nil || !enter && all[id] == nil {
			continue
		}
		subject := why[id]
		if len(subject) > 60 {
			subject = strings.ToValidUTF8(subject[:60], "") + "…"
		}
		get(f).add("history", v, fmt.Sprintf("changed by a past commit like the task (%q)", subject))
	}
	return nil
}

// HistoryScores is the history signal as Rank computes it, from the
// commits given (kb.PastCommits' rows: the commits mined at the index's
// HEAD, the files each changed by id) rather than the index: a learner
// recomputes it with it for examples cached before the signal existed,
// each at its commit's parent.
func HistoryScores(commits []kb.PastCommit, maxFiles int, q TaskQuery) map[int64]float64 {
	s, _ := newPastIndex(commits, maxFiles).historyScores(q.Keywords)
	return s
}

// HistoryVariants is HistoryScores under each of several settings, the
// commits indexed once: a learner compares settings on past commits with
// it (bench/learn -history-variants).
func HistoryVariants(commits []kb.PastCommit, maxFiles int, q TaskQuery, hps []HistoryParams) []map[int64]float64 {
	px := newPastIndex(commits, maxFiles)
	out := make([]map[int64]float64, len(hps))
	for i, hp := range hps {
		out[i], _ = px.historyScoresWith(q.Keywords, hp)
	}
	return out
}
