package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/cra-dev/cra/internal/index"
	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/learn"
	"github.com/cra-dev/cra/internal/retrieve"
)

// historyGrid is the history signal's settings -history-variants
// compares: the shipped one first, then each constant moved alone, then
// a few together.
func historyGrid() []retrieve.HistoryParams {
	d := retrieve.DefaultHistoryParams()
	out := []retrieve.HistoryParams{d}
	alone := func(set func(*retrieve.HistoryParams)) {
		v := d
		set(&v)
		out = append(out, v)
	}
	for _, k := range []int{3, 5, 20, 40} {
		alone(func(v *retrieve.HistoryParams) { v.K = k })
	}
	for _, a := range []float64{0, 0.25, 0.75, 1} {
		alone(func(v *retrieve.HistoryParams) { v.Alpha = a })
	}
	for _, m := range []int{6, 12, 25} {
		alone(func(v *retrieve.HistoryParams) { v.MaxFiles = m })
	}
	for _, h := range []float64{50, 200, 1000} {
		alone(func(v *retrieve.HistoryParams) { v.HalfLife = h })
	}
	for _, c := range []float64{0.5, 1, 2} {
		alone(func(v *retrieve.HistoryParams) { v.Confidence = c })
	}
	for _, k := range []int{5, 20} {
		for _, a := range []float64{0.5, 1} {
			for _, h := range []float64{0, 200} {
				out = append(out, retrieve.HistoryParams{K: k, Alpha: a, HalfLife: h})
			}
		}
	}
	return out
}

// historyWeights are the history weights each setting is measured at,
// the other weights hand-set.
func historyWeights() []float64 { return []float64{0.3, 0.6, 1.0, 1.5, 2.5} }

// variantResult is one setting at one history weight.
type variantResult struct {
	Params            retrieve.HistoryParams
	History           float64
	All, Valid        learn.Metrics
	Macro, ValidMacro float64 // Acc@5 averaged over repositories
	ByLang            map[string]float64
	MissingGoldScored int // gold files no candidate holds that the setting scores
}

func hpName(hp retrieve.HistoryParams) string {
	return fmt.Sprintf("k=%d a=%g max=%d half=%g conf=%g", hp.K, hp.Alpha, hp.MaxFiles, hp.HalfLife, hp.Confidence)
}

// historyVariants recomputes the history signal of the examples in -data
// under each setting of historyGrid, at each example's parent as
// markHistory does (eachPast), and reports the figures of the hand-set
// weights with the history weight at each of historyWeights, on every
// example and on the validation split (-valid); it also counts the gold
// files no candidate holds that the setting scores (what the signal
// could bring, as Rank lets it, and the cached examples cannot show).
func historyVariants(ctx context.Context, o options, stdout, stderr io.Writer) ([]variantResult, error) {
	grid := historyGrid()
	type marks struct {
		ex    []learn.Example
		ids   []map[string]int64
		score [][]map[int64]float64 // by example, by setting
	}
	var per []marks
	lang := map[string]string{}
	brought, missing := make([]int, len(grid)), 0
	for _, s := range manifest {
		if o.only != "" && s.Name != o.only {
			continue
		}
		lang[s.Name] = s.Lang
		ex, err := learn.ReadExamplesFile(filepath.Join(o.data, strings.ReplaceAll(s.Name, "/", "+")+".jsonl"))
		if err != nil {
			return nil, err
		}
		m := marks{ex: ex}
		if err := eachPast(ctx, filepath.Join(o.clones, s.Dir), ex, func(e *learn.Example, past []kb.PastCommit, ids map[string]int64) {
			v := retrieve.HistoryVariants(past, index.DefaultMaxCommitFiles, retrieve.Analyze(e.Task), grid)
			m.ids = append(m.ids, ids)
			m.score = append(m.score, v)
			in := map[string]bool{}
			for _, c := range e.Candidates {
				in[c.Path] = true
			}
			for _, g := range e.Gold {
				if in[g] {
					continue
				}
				missing++
				for vi := range grid {
					if v[vi][ids[g]] > 0 {
						brought[vi]++
					}
				}
			}
		}); err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		fmt.Fprintf(stderr, "%s: %d examples marked under %d settings\n", s.Name, len(ex), len(grid))
		per = append(per, m)
	}
	var all []learn.Example
	for _, m := range per {
		all = append(all, m.ex...)
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("no examples in %s", o.data)
	}
	_, valid := learn.SplitByTime(all, o.validShare)
	var out []variantResult
	for vi, hp := range grid {
		for _, m := range per {
			for ei := range m.ex {
				setHistory(&m.ex[ei], m.score[ei][vi], m.ids[ei])
			}
		}
		for _, h := range historyWeights() {
			wt := retrieve.HandSetWeights
			wt.History = h
			r := variantResult{Params: hp, History: h, All: learn.Evaluate(all, wt), Valid: learn.Evaluate(valid, wt),
				Macro: macroAcc5(all, wt, learn.Evaluate), ValidMacro: macroAcc5(valid, wt, learn.Evaluate),
				ByLang: map[string]float64{}, MissingGoldScored: brought[vi]}
			n := map[string]int{}
			for _, repo := range repos(all) {
				r.ByLang[lang[repo]] += learn.Evaluate(only(all, repo), wt).Acc5
				n[lang[repo]]++
			}
			for l := range r.ByLang {
				r.ByLang[l] /= float64(n[l])
			}
			out = append(out, r)
		}
	}
	fmt.Fprintf(stdout, "%d examples (%d validate: the newest %.0f%% of each repository); %d gold files not among the candidates\n", len(all), len(valid), 100*o.validShare, missing)
	w := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "setting\thistory\tmacro Acc@5\tPython\tGo\tTS/JS\tAcc@1\tAcc@10\tMRR\tvalid macro Acc@5\tvalid MRR\tmissing gold it scores\t")
	for _, r := range out {
		fmt.Fprintf(w, "%s\t%.1f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%d\t\n", hpName(r.Params), r.History, r.Macro,
			r.ByLang["Python"], r.ByLang["Go"], r.ByLang["TS/JS"], r.All.Acc1, r.All.Acc10, r.All.MRR, r.ValidMacro, r.Valid.MRR, r.MissingGoldScored)
	}
	w.Flush()
	best := slices.Clone(out)
	sort.SliceStable(best, func(i, j int) bool { return best[i].Macro > best[j].Macro })
	fmt.Fprintln(stdout, "\nbest by macro Acc@5 over every example:")
	for _, r := range best[:min(5, len(best))] {
		fmt.Fprintf(stdout, "  %.3f (valid %.3f) %s history=%.1f\n", r.Macro, r.ValidMacro, hpName(r.Params), r.History)
	}
	return out, nil
}
