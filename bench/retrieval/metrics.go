package main

import (
	"math"
	"sort"
	"time"
)

// ks are the cut-offs of Acc@k and Recall@k.
var ks = [...]int{1, 5, 10}

// budgets are the token budgets of the package-level recall.
var budgets = [...]int{8192, 32768}

// gold is a gold file with the old-side lines its change touched. Nil
// Ranges: the change has no line information (binary, mode only), and any
// content of the file counts.
type gold struct {
	Path   string      `json:"path"`
	Ranges []lineRange `json:"ranges,omitempty"`
}

// pack is what a context package holds, per file: the line spans of its
// items. A whole file is one span of every line.
type pack map[string][]lineRange

// wholeFile is the span of an item that covers its entire file.
var wholeFile = lineRange{1, math.MaxInt}

// covered reports whether the package holds relevant content of g: an
// item of g's file overlapping one of its changed ranges (or, without
// ranges, any item of the file).
func (p pack) covered(g gold) bool {
	spans, ok := p[g.Path]
	if !ok {
		return false
	}
	if g.Ranges == nil {
		return len(spans) > 0
	}
	for _, s := range spans {
		for _, r := range g.Ranges {
			if s.overlaps(r) {
				return true
			}
		}
	}
	return false
}

// ranksOf returns the 1-based position of each gold path in ranked, 0 when
// absent.
func ranksOf(ranked []string, golds []gold) []int {
	pos := make(map[string]int, len(ranked))
	for i, p := range ranked {
		if _, dup := pos[p]; !dup {
			pos[p] = i + 1
		}
	}
	out := make([]int, len(golds))
	for i, g := range golds {
		out[i] = pos[g.Path]
	}
	return out
}

// score is one method's result on one task.
type score struct {
	// Ranks are the gold files' positions (1-based; 0: not ranked), in
	// the order of the task's gold list.
	Ranks []int `json:"ranks"`
	// Covered8k and Covered32k say, per gold file, whether the package
	// of that budget holds its relevant content.
	Covered8k  []bool `json:"covered_8k"`
	Covered32k []bool `json:"covered_32k"`
	// Top are the first ranked paths, for reading failures.
	Top []string `json:"top"`
	// Packed8k lists the files of the 8k package.
	Packed8k []string `json:"packed_8k"`
	// GoldSpans8k are, per gold file in the 8k package, the line spans of
	// its items there: what a miss did include instead.
	GoldSpans8k map[string][]lineRange `json:"gold_spans_8k,omitempty"`
	// Signals are cra's ranking signals of the top files and the gold
	// files it ranked: why a file stood where it did.
	Signals map[string]map[string]float64 `json:"signals,omitempty"`
	// Latency is Analyze+Rank+Assemble(8k) for cra, scoring and
	// packing for BM25.
	Latency time.Duration `json:"latency_ns"`
}

// evaluate scores a ranking and the packages of both budgets.
func evaluate(golds []gold, ranked []string, p8, p32 pack) score {
	s := score{Ranks: ranksOf(ranked, golds)}
	for _, g := range golds {
		s.Covered8k = append(s.Covered8k, p8.covered(g))
		s.Covered32k = append(s.Covered32k, p32.covered(g))
	}
	s.Top = ranked[:min(len(ranked), 10)]
	for _, g := range golds {
		if spans, ok := p8[g.Path]; ok {
			if s.GoldSpans8k == nil {
				s.GoldSpans8k = map[string][]lineRange{}
			}
			s.GoldSpans8k[g.Path] = spans
		}
	}
	return s
}

// allWithin reports whether every rank is in 1..k (Acc@k).
func allWithin(ranks []int, k int) bool {
	for _, r := range ranks {
		if r < 1 || r > k {
			return false
		}
	}
	return len(ranks) > 0
}

// shareWithin is the share of ranks in 1..k (the task's Recall@k).
func shareWithin(ranks []int, k int) float64 {
	if len(ranks) == 0 {
		return 0
	}
	n := 0
	for _, r := range ranks {
		if r >= 1 && r <= k {
			n++
		}
	}
	return float64(n) / float64(len(ranks))
}

func shareTrue(bs []bool) float64 {
	if len(bs) == 0 {
		return 0
	}
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return float64(n) / float64(len(bs))
}

// Summary is one method's metrics over a set of tasks. Every share is a
// mean over tasks (macro average), so a task with four gold files weighs
// as much as a task with one.
type Summary struct {
	Tasks int     `json:"tasks"`
	Acc1  float64 `json:"acc_at_1"`
	Acc5  float64 `json:"acc_at_5"`
	Acc10 float64 `json:"acc_at_10"`
	R1    float64 `json:"recall_at_1"`
	R5    float64 `json:"recall_at_5"`
	R10   float64 `json:"recall_at_10"`
	R8k   float64 `json:"recall_8k_tokens"`
	R32k  float64 `json:"recall_32k_tokens"`
	// LatencyP50 and LatencyP95 are over the tasks' Latency.
	LatencyP50 time.Duration `json:"latency_p50_ns"`
	LatencyP95 time.Duration `json:"latency_p95_ns"`
}

// summarize averages scores.
func summarize(scores []score) Summary {
	s := Summary{Tasks: len(scores)}
	if len(scores) == 0 {
		return s
	}
	var lat []time.Duration
	for _, sc := range scores {
		acc := [3]*float64{&s.Acc1, &s.Acc5, &s.Acc10}
		rec := [3]*float64{&s.R1, &s.R5, &s.R10}
		for i, k := range ks {
			if allWithin(sc.Ranks, k) {
				*acc[i]++
			}
			*rec[i] += shareWithin(sc.Ranks, k)
		}
		s.R8k += shareTrue(sc.Covered8k)
		s.R32k += shareTrue(sc.Covered32k)
		lat = append(lat, sc.Latency)
	}
	n := float64(len(scores))
	for _, v := range []*float64{&s.Acc1, &s.Acc5, &s.Acc10, &s.R1, &s.R5, &s.R10, &s.R8k, &s.R32k} {
		*v /= n
	}
	s.LatencyP50 = median(lat)
	s.LatencyP95 = percentile(lat, 95)
	return s
}

// median is the middle value, the mean of the two middle ones for an even
// count; 0 for none.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := sorted(ds)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// percentile is the nearest-rank percentile: the smallest value with at
// least p% of the values at or below it; 0 for none.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := sorted(ds)
	i := int(math.Ceil(p*float64(len(s))/100)) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func sorted(ds []time.Duration) []time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s
}
