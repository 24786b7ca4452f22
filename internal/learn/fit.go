package learn

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/cra-dev/cra/internal/retrieve"
)

// Losses Fit knows.
const (
	// LossSoftmax is listwise: for each changed file, the softmax
	// cross-entropy of it against the files that did not change (the
	// changed others left out), so every gold file is pulled towards the
	// top, as Acc@k asks.
	LossSoftmax = "softmax"
	// LossPairwise is RankNet's: the logistic loss of every (changed,
	// unchanged) pair's score difference.
	LossPairwise = "pairwise"
	// LossCutoff aims at Acc@5 itself: every changed file must score
	// above the unchanged file that would push the last of them out of
	// the top 5 (the (6−g)-th best of the unchanged, for g changed files);
	// the logistic loss of each changed file against that one.
	LossCutoff = "cutoff"
)

// cutoffK is the k of LossCutoff's Acc@k.
const cutoffK = 5

// FitConfig says how Fit learns.
type FitConfig struct {
	// Loss is LossSoftmax or LossPairwise.
	Loss string `json:"loss"`
	// L2 pulls each weight towards Prior's: L2 · Σ (w − prior)², against
	// a loss averaged over commits.
	L2 float64 `json:"l2"`
	// Prior is where the weights start and what L2 pulls them to.
	Prior retrieve.Weights `json:"prior"`
	// Iterations of full-batch Adam (0: 300); Rate its step (0: 0.02).
	Iterations int     `json:"iterations"`
	Rate       float64 `json:"rate"`
	// Fixed names signals whose weights stay at Prior's (say "implied"
	// and "metadata", which commits replayed without a model or
	// enrichment never show; "prose" and "test_demotion" too).
	Fixed []string `json:"fixed,omitempty"`
	// TestsChanged labels a changed test file as changed, not gold, when
	// the commit's message does not speak of tests (the files Rank
	// demotes, retrieve.Candidate.TestFile): it is left out of the loss
	// like a changed changelog, so the fusion learns to find the source a
	// task describes, as issue-style tasks (SWE-bench) grade it, rather
	// than the tests a commit changed with it. Evaluate still counts
	// every gold file; EvaluateSources counts as this labels.
	TestsChanged bool `json:"tests_changed,omitempty"`
}

// The parameters are the signals' weights, then the prose weight, the
// test demotion, the declaration demotion, then the log of the
// temperature (the scale of the scores the loss sees, which the ranking
// ignores and the regulariser leaves free).
const (
	proseParam = 14
	testParam  = 15
	declParam  = 16
	tempParam  = 17
	nParams    = 18
)

// maxTestDemotion bounds the learned test demotion: a test file keeps at
// least a tenth of its score, so a test the task singles out can still
// rank.
const maxTestDemotion = 0.9

// maxDeclDemotion bounds the learned declaration demotion likewise: a
// types file keeps at least a tenth of its score.
const maxDeclDemotion = 0.9

// row is a candidate as Fit reads it.
type row struct {
	x        [14]float64
	prose    int
	testFile bool // retrieve.Candidate.TestFile: the test demotion scales it
	declFile bool // retrieve.Candidate.DeclFile: the declaration demotion scales it
	recalled bool
	gold     bool
	path     string
}

// query is an example as Fit reads it.
type query struct {
	weight   float64 // its share of the loss
	rows     []row
	gold     int // gold files in all, unranked ones included
	repo     string
	commit   string
	positive []int
	negative []int
}

func init() {
	if len(retrieve.Signals) != 14 {
		panic(fmt.Sprintf("learn: retrieve has %d signals, the learner knows 14", len(retrieve.Signals)))
	}
}

// queries prepares examples: each repository weighs the same in all, and
// each of its commits the same within it, so a long history does not
// drown the others. With testsChanged a gold test file the task does not
// speak of is neither gold nor a negative (FitConfig.TestsChanged).
//
// Which candidates the test demotion scales is worked out here, as Rank
// does (a parsed file, retrieve.IsTestPath, a task that is not
// retrieve.TaskQuery.AboutTests), so examples drawn before the demotion
// existed serve as they are.
func queries(examples []Example, testsChanged bool) []query {
	perRepo := map[string]int{}
	for _, e := range examples {
		perRepo[e.Repo]++
	}
	out := make([]query, 0, len(examples))
	for _, e := range examples {
		q := query{weight: 1 / float64(perRepo[e.Repo]*len(perRepo)), gold: len(e.Gold), repo: e.Repo, commit: e.Commit}
		aboutTests := retrieve.Analyze(e.Task).AboutTests()
		if testsChanged && !aboutTests {
			for _, g := range e.Gold {
				if retrieve.IsTestPath(g) {
					q.gold--
				}
			}
		}
		for _, c := range e.Candidates {
			r := row{prose: c.Prose, recalled: c.Recalled, gold: c.Gold, path: c.Path,
				testFile: !c.Recalled && !aboutTests && c.Code && retrieve.IsTestPath(c.Path),
				declFile: !c.Recalled && c.Decl && c.Signals["mention"] == 0 && c.Signals["plan"] == 0}
			for i, n := range retrieve.Signals {
				r.x[i] = c.Signals[n]
				if n == "mention" {
					r.x[i] += c.Signals["plan"]
				}
			}
			switch {
			case c.Gold && testsChanged && r.testFile:
				r.gold = false // changed: neither an answer nor a wrong one
			case c.Gold:
				q.positive = append(q.positive, len(q.rows))
			case !c.Changed:
				q.negative = append(q.negative, len(q.rows))
			}
			q.rows = append(q.rows, r)
		}
		out = append(out, q)
	}
	return out
}

// params are a point of the search: the weights in Signals' order, the
// prose weight, the test demotion, the log temperature.
type params []float64

func paramsOf(w retrieve.Weights) params {
	p := make(params, nParams)
	for i, n := range retrieve.Signals {
		p[i], _ = w.Get(n)
	}
	p[proseParam] = w.Prose
	p[testParam] = w.TestDemotion
	p[declParam] = w.DeclDemotion
	return p
}

func (p params) weights() retrieve.Weights {
	var w retrieve.Weights
	for i, n := range retrieve.Signals {
		w.Set(n, p[i])
	}
	w.Prose = p[proseParam]
	w.TestDemotion = p[testParam]
	w.DeclDemotion = p[declParam]
	return w
}

// score is a row's fused score (retrieve.Weights.Fuse) before the
// temperature.
func (p params) score(r *row) float64 {
	v := 0.0
	for i := range r.x {
		v += p[i] * r.x[i]
	}
	for range r.prose {
		v *= p[proseParam]
	}
	if r.testFile {
		v *= 1 - p[testParam]
	}
	if r.declFile {
		v *= 1 - p[declParam]
	}
	return v
}

// Fit learns weights from examples (see FitConfig). It is deterministic:
// full-batch steps over the examples in their order.
func Fit(examples []Example, cfg FitConfig) (retrieve.Weights, error) {
	if cfg.Loss != LossSoftmax && cfg.Loss != LossPairwise && cfg.Loss != LossCutoff {
		return retrieve.Weights{}, fmt.Errorf("fit: unknown loss %q: want %s, %s or %s", cfg.Loss, LossSoftmax, LossPairwise, LossCutoff)
	}
	if err := cfg.Prior.Validate(); err != nil {
		return retrieve.Weights{}, fmt.Errorf("fit: prior: %w", err)
	}
	qs := queries(examples, cfg.TestsChanged)
	usable := 0
	for _, q := range qs {
		if len(q.positive) > 0 && len(q.negative) > 0 {
			usable++
		}
	}
	if usable == 0 {
		return retrieve.Weights{}, errors.New("fit: no example ranks a changed file among unchanged ones: nothing to learn from")
	}
	iters, rate := cfg.Iterations, cfg.Rate
	if iters <= 0 {
		iters = 300
	}
	if rate <= 0 {
		rate = 0.02
	}
	fixed := make([]bool, nParams)
	for _, n := range cfg.Fixed {
		found := false
		for i, s := range retrieve.Signals {
			if s == n {
				fixed[i], found = true, true
			}
		}
		if n == "prose" {
			fixed[proseParam], found = true, true
		}
		if n == "test_demotion" {
			fixed[testParam], found = true, true
		}
		if n == "decl_demotion" {
			fixed[declParam], found = true, true
		}
		if !found {
			return retrieve.Weights{}, fmt.Errorf("fit: cannot fix unknown signal %q", n)
		}
	}
	prior := paramsOf(cfg.Prior)
	p := paramsOf(cfg.Prior)
	m, v := make([]float64, nParams), make([]float64, nParams)
	const b1, b2, eps = 0.9, 0.999, 1e-8
	for t := 1; t <= iters; t++ {
		_, g := objective(qs, p, prior, cfg)
		for i := range p {
			if fixed[i] {
				continue
			}
			m[i] = b1*m[i] + (1-b1)*g[i]
			v[i] = b2*v[i] + (1-b2)*g[i]*g[i]
			mh := m[i] / (1 - math.Pow(b1, float64(t)))
			vh := v[i] / (1 - math.Pow(b2, float64(t)))
			p[i] -= rate * mh / (math.Sqrt(vh) + eps)
		}
		project(p)
	}
	w := p.weights()
	// The test pairing by history (and its choice among partners) and the
	// history signal's damping are no weights of the fusion but decide
	// the test and history signals the examples were read with: they
	// stay the prior's.
	w.PairHistory = cfg.Prior.PairHistory
	w.HistoryDamping = cfg.Prior.HistoryDamping
	w.PairMatch = cfg.Prior.PairMatch
	if err := w.Validate(); err != nil {
		return retrieve.Weights{}, fmt.Errorf("fit: %w", err)
	}
	return round(w), nil
}

// project keeps the weights where a ranking can use them: no negative
// weight (a signal is evidence for a file, never against it), a prose
// weight in [0.02, 1] (prose is never preferred to code), a test demotion
// in [0, maxTestDemotion] (a test is never preferred to its source for
// being a test) and a bounded temperature.
func project(p params) {
	for i := range retrieve.Signals {
		p[i] = max(p[i], 0)
	}
	p[proseParam] = min(max(p[proseParam], 0.02), 1)
	p[testParam] = min(max(p[testParam], 0), maxTestDemotion)
	p[declParam] = min(max(p[declParam], 0), maxDeclDemotion)
	p[tempParam] = min(max(p[tempParam], -3), 5)
}

// round keeps three significant decimals: the weights are written into
// source and the database, and more digits than the data supports would
// only look precise.
func round(w retrieve.Weights) retrieve.Weights {
	for _, n := range append(retrieve.Signals[:len(retrieve.Signals):len(retrieve.Signals)], "prose", "test_demotion", "decl_demotion") {
		v, _ := w.Get(n)
		w.Set(n, math.Round(v*1000)/1000)
	}
	return w
}

// objective is the loss over qs at p and its gradient.
func objective(qs []query, p, prior params, cfg FitConfig) (float64, params) {
	g := make(params, nParams)
	loss := 0.0
	temp := math.Exp(p[tempParam])
	var s, dl, en []float64
	for qi := range qs {
		q := &qs[qi]
		if len(q.positive) == 0 || len(q.negative) == 0 {
			continue
		}
		s, dl, en = s[:0], dl[:0], en[:0]
		for j := range q.rows {
			s = append(s, temp*p.score(&q.rows[j]))
			// dl[j] is the derivative of the query's loss by s[j].
			dl = append(dl, 0)
		}
		switch cfg.Loss {
		case LossSoftmax:
			top := math.Inf(-1)
			for _, j := range q.negative {
				top = max(top, s[j])
			}
			for _, j := range q.positive {
				top = max(top, s[j])
			}
			negSum := 0.0
			for _, j := range q.negative {
				e := math.Exp(s[j] - top)
				en = append(en, e)
				negSum += e
			}
			// Each positive's softmax against the negatives: the
			// negatives' share of the derivative adds up over them.
			k := 1 / float64(len(q.positive))
			negShare := 0.0
			for _, j := range q.positive {
				ep := math.Exp(s[j] - top)
				z := ep + negSum
				loss += q.weight * k * (math.Log(z) - (s[j] - top))
				dl[j] += q.weight * k * (ep/z - 1)
				negShare += q.weight * k / z
			}
			for i, n := range q.negative {
				dl[n] += negShare * en[i]
			}
		case LossPairwise:
			k := 1 / float64(len(q.positive)*len(q.negative))
			for _, i := range q.positive {
				for _, j := range q.negative {
					d := s[i] - s[j]
					loss += q.weight * k * softplus(-d)
					sg := q.weight * k * sigmoid(-d)
					dl[i] -= sg
					dl[j] += sg
				}
			}
		case LossCutoff:
			if len(q.positive) >= cutoffK {
				break // no ranking puts them all in the top k
			}
			// The negative whose place the last positive must take.
			cut := cutoffNegative(q.negative, s, cutoffK-len(q.positive))
			k := 1 / float64(len(q.positive))
			for _, i := range q.positive {
				d := s[i] - s[cut]
				loss += q.weight * k * softplus(-d)
				sg := q.weight * k * sigmoid(-d)
				dl[i] -= sg
				dl[cut] += sg
			}
		}
		for j := range q.rows {
			if dl[j] == 0 {
				continue
			}
			r := &q.rows[j]
			scale := temp
			for range r.prose {
				scale *= p[proseParam]
			}
			if r.testFile {
				// s = (1 − d)·u, so ∂s/∂d = −u, u the score before the
				// demotion (d stays below 1: project).
				g[testParam] -= dl[j] * scale * dot(p, r) * declFactor(p, r)
				scale *= 1 - p[testParam]
			}
			if r.declFile {
				// Likewise: s = (1 − e)·u', u' the score scaled by all
				// but the declaration demotion.
				g[declParam] -= dl[j] * scale * dot(p, r)
				scale *= 1 - p[declParam]
			}
			for i := range r.x {
				g[i] += dl[j] * scale * r.x[i]
			}
			if r.prose > 0 && p[proseParam] > 0 {
				g[proseParam] += dl[j] * float64(r.prose) * s[j] / p[proseParam]
			}
			g[tempParam] += dl[j] * s[j]
		}
	}
	for i := 0; i < tempParam; i++ {
		d := p[i] - prior[i]
		loss += cfg.L2 * d * d
		g[i] += 2 * cfg.L2 * d
	}
	return loss, g
}

// declFactor is the declaration demotion's scaling of a row: 1 − e for a
// declaration-only file, 1 otherwise.
func declFactor(p params, r *row) float64 {
	if r.declFile {
		return 1 - p[declParam]
	}
	return 1
}

// dot is a row's weighted sum of signals, before any scaling.
func dot(p params, r *row) float64 {
	v := 0.0
	for i := range r.x {
		v += p[i] * r.x[i]
	}
	return v
}

// cutoffNegative returns the negative row with the n-th highest score
// (1-based), or the lowest when there are fewer; ties by row order.
func cutoffNegative(neg []int, s []float64, n int) int {
	order := slices.Clone(neg)
	sort.SliceStable(order, func(a, b int) bool { return s[order[a]] > s[order[b]] })
	return order[min(n, len(order))-1]
}

func softplus(x float64) float64 {
	if x > 30 {
		return x
	}
	return math.Log1p(math.Exp(x))
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// Metrics are a ranking's figures over examples. A commit whose changed
// file is not among the candidates counts as a miss.
type Metrics struct {
	Commits int     `json:"commits"`
	Acc1    float64 `json:"acc1"`
	Acc5    float64 `json:"acc5"`
	Acc10   float64 `json:"acc10"`
	// MRR is the mean reciprocal rank of the first changed file found.
	MRR float64 `json:"mrr"`
	// Recall5 is the mean share of changed files in the top 5.
	Recall5 float64 `json:"recall5"`
}

// Evaluate ranks each example's candidates with w as Rank orders them
// (fused score, best first, ties by path; the files only recall brought
// after them, in their order) and measures the ranking.
func Evaluate(examples []Example, w retrieve.Weights) Metrics {
	return evaluate(examples, w, false)
}

// EvaluateSources is Evaluate with the gold of FitConfig.TestsChanged: a
// changed test file the task does not speak of is no answer (a commit
// that changed only such tests is left out), as issue-style tasks grade a
// ranking.
func EvaluateSources(examples []Example, w retrieve.Weights) Metrics {
	return evaluate(examples, w, true)
}

func evaluate(examples []Example, w retrieve.Weights, testsChanged bool) Metrics {
	m := Metrics{}
	p := paramsOf(w)
	for _, q := range queries(examples, testsChanged) {
		if q.gold == 0 {
			continue
		}
		m.Commits++
		ranks := rankOf(q, p)
		worst, first, in5 := 0, 0, 0
		for _, r := range ranks {
			worst = max(worst, r)
			if first == 0 || r < first {
				first = r
			}
			if r <= 5 {
				in5++
			}
		}
		if len(ranks) < q.gold {
			worst = math.MaxInt // a gold file not among the candidates
		}
		if worst <= 1 {
			m.Acc1++
		}
		if worst <= 5 {
			m.Acc5++
		}
		if worst <= 10 {
			m.Acc10++
		}
		if first > 0 {
			m.MRR += 1 / float64(first)
		}
		m.Recall5 += float64(in5) / float64(q.gold)
	}
	if m.Commits > 0 {
		n := float64(m.Commits)
		m.Acc1, m.Acc5, m.Acc10, m.MRR, m.Recall5 = m.Acc1/n, m.Acc5/n, m.Acc10/n, m.MRR/n, m.Recall5/n
	}
	return m
}

// rankOf returns the 1-based ranks of q's gold rows under p.
func rankOf(q query, p params) []int {
	type scoredRow struct {
		i     int
		score float64
	}
	var fused, recalled []scoredRow
	for i := range q.rows {
		if q.rows[i].recalled {
			recalled = append(recalled, scoredRow{i, 0})
		} else {
			fused = append(fused, scoredRow{i, p.score(&q.rows[i])})
		}
	}
	sort.SliceStable(fused, func(a, b int) bool {
		if fused[a].score != fused[b].score {
			return fused[a].score > fused[b].score
		}
		return q.rows[fused[a].i].path < q.rows[fused[b].i].path
	})
	var ranks []int
	for pos, r := range append(fused, recalled...) {
		if q.rows[r.i].gold {
			ranks = append(ranks, pos+1)
		}
	}
	return ranks
}

// Better reports whether a beats b: a higher Acc@5, or the same with a
// higher MRR.
func (a Metrics) Better(b Metrics) bool {
	if a.Acc5 != b.Acc5 {
		return a.Acc5 > b.Acc5
	}
	return a.MRR > b.MRR
}
