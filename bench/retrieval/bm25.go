package main

import (
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/cra-dev/cra/internal/terms"
	"github.com/cra-dev/cra/internal/tokens"
)

// BM25 parameters of the baseline (the usual Okapi defaults).
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// bm25Doc is a file of the baseline's corpus: the term frequencies of its
// content and path, tokenised by internal/terms like cra's own index.
type bm25Doc struct {
	Path   string
	TF     map[string]int
	Len    int  // terms, with repetitions
	Tokens int  // the whole file's size in budget tokens (chars/4)
	Code   bool // in a language cra parses
}

func newBM25Doc(path, content string) *bm25Doc {
	d := &bm25Doc{Path: path, TF: map[string]int{}, Tokens: tokens.Estimate(content)}
	count := func(t string) {
		d.TF[t]++
		d.Len++
	}
	terms.Each(content, count)
	terms.Each(path, count)
	return d
}

// bm25Hit is a ranked file.
type bm25Hit struct {
	Doc   *bm25Doc
	Score float64
}

// bm25Rank scores every document against the query terms (with their
// repetitions: a term said twice weighs twice) and returns all of them,
// best first, ties by path:
//
//	score(D) = Σ_{t∈Q} idf(t) · f(t,D)·(k1+1) / (f(t,D) + k1·(1 − b + b·|D|/avgdl))
//	idf(t)   = ln(1 + (N − n(t) + 0.5) / (n(t) + 0.5))
//
// the Lucene form of the idf, which stays positive for common terms.
func bm25Rank(docs []*bm25Doc, query []string) []bm25Hit {
	qtf := map[string]int{}
	for _, t := range query {
		qtf[t]++
	}
	var total int
	df := make(map[string]int, len(qtf))
	for _, d := range docs {
		total += d.Len
		for t := range qtf {
			if d.TF[t] > 0 {
				df[t]++
			}
		}
	}
	n := float64(len(docs))
	avgdl := 1.0
	if len(docs) > 0 && total > 0 {
		avgdl = float64(total) / n
	}
	idf := make(map[string]float64, len(qtf))
	for t := range qtf {
		idf[t] = math.Log(1 + (n-float64(df[t])+0.5)/(float64(df[t])+0.5))
	}
	// The terms in order: a sum over a map's order differs in its last
	// bits from run to run, and so would near-ties' ranks.
	terms := slices.Sorted(maps.Keys(qtf))
	hits := make([]bm25Hit, len(docs))
	for i, d := range docs {
		var s float64
		norm := bm25K1 * (1 - bm25B + bm25B*float64(d.Len)/avgdl)
		for _, t := range terms {
			q := qtf[t]
			f := float64(d.TF[t])
			if f == 0 {
				continue
			}
			s += float64(q) * idf[t] * f * (bm25K1 + 1) / (f + norm)
		}
		hits[i] = bm25Hit{Doc: d, Score: s}
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].Doc.Path < hits[j].Doc.Path
	})
	return hits
}

// packWhole is the baseline's context package: whole files in rank order,
// each taken if it fits in what is left of the budget; a file too big for
// the rest is passed over and smaller ones after it still go in. Only
// files that match the query (score > 0) are considered.
func packWhole(hits []bm25Hit, budget int) pack {
	p := pack{}
	left := budget
	for _, h := range hits {
		if h.Score <= 0 || left <= 0 {
			break
		}
		if h.Doc.Tokens <= left {
			p[h.Doc.Path] = []lineRange{wholeFile}
			left -= h.Doc.Tokens
		}
	}
	return p
}

func hitPaths(hits []bm25Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Doc.Path
	}
	return out
}
