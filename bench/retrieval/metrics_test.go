package main

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestRanksOf(t *testing.T) {
	ranked := []string{"a.py", "b.py", "c.py", "a.py"}
	golds := []gold{{Path: "c.py"}, {Path: "z.py"}, {Path: "a.py"}}
	if diff := cmp.Diff([]int{3, 0, 1}, ranksOf(ranked, golds)); diff != "" {
		t.Errorf("ranksOf (-want +got):\n%s", diff)
	}
}

func TestAllWithinShareWithin(t *testing.T) {
	tests := []struct {
		ranks []int
		k     int
		all   bool
		share float64
	}{
		{[]int{1}, 1, true, 1},
		{[]int{2}, 1, false, 0},
		{[]int{1, 2}, 1, false, 0.5},
		{[]int{1, 2}, 5, true, 1},
		{[]int{3, 0}, 10, false, 0.5}, // 0: not ranked at all
		{[]int{4, 6, 11}, 5, false, 1.0 / 3},
		{nil, 5, false, 0},
	}
	for _, tc := range tests {
		if got := allWithin(tc.ranks, tc.k); got != tc.all {
			t.Errorf("allWithin(%v, %d) = %v, want %v", tc.ranks, tc.k, got, tc.all)
		}
		if got := shareWithin(tc.ranks, tc.k); math.Abs(got-tc.share) > 1e-9 {
			t.Errorf("shareWithin(%v, %d) = %v, want %v", tc.ranks, tc.k, got, tc.share)
		}
	}
}

func TestCovered(t *testing.T) {
	p := pack{
		"core.py":  {{10, 20}, {40, 40}}, // a symbol and a one-line signature
		"utils.py": {wholeFile},
		"types.py": {{100, 120}},
	}
	tests := []struct {
		name string
		g    gold
		want bool
	}{
		{"range inside an item", gold{"core.py", []lineRange{{12, 13}}}, true},
		{"range touching an item's last line", gold{"core.py", []lineRange{{20, 25}}}, true},
		{"range touching an item's first line", gold{"core.py", []lineRange{{5, 10}}}, true},
		{"range between items", gold{"core.py", []lineRange{{21, 39}}}, false},
		{"second range hits", gold{"core.py", []lineRange{{1, 2}, {40, 41}}}, true},
		{"insertion between two lines, one of them in an item", gold{"core.py", []lineRange{{20, 21}}}, true},
		{"insertion just after an item", gold{"core.py", []lineRange{{41, 42}}}, false},
		{"whole file covers any range", gold{"utils.py", []lineRange{{9000, 9001}}}, true},
		{"no line information: any item", gold{"types.py", nil}, true},
		{"file not in the package", gold{"missing.py", []lineRange{{1, 1}}}, false},
		{"file not in the package, no ranges", gold{"missing.py", nil}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.covered(tc.g); got != tc.want {
				t.Errorf("covered(%v) = %v, want %v", tc.g, got, tc.want)
			}
		})
	}
}

func TestEvaluateAndSummarize(t *testing.T) {
	// Task 1: one gold file, ranked first, covered in both packages.
	g1 := []gold{{"a.py", []lineRange{{5, 5}}}}
	s1 := evaluate(g1, []string{"a.py", "b.py"}, pack{"a.py": {{1, 9}}}, pack{"a.py": {wholeFile}})
	s1.Latency = 10 * time.Millisecond
	// Task 2: two gold files at ranks 3 and 7; at 8k only the first's
	// signature is in, away from its change; at 32k both.
	g2 := []gold{{"c.py", []lineRange{{50, 60}}}, {"d.py", []lineRange{{1, 2}}}}
	ranked2 := []string{"x", "y", "c.py", "z", "w", "v", "d.py", "u", "t", "s", "r"}
	s2 := evaluate(g2, ranked2, pack{"c.py": {{10, 10}}}, pack{"c.py": {{50, 50}}, "d.py": {wholeFile}})
	s2.Latency = 30 * time.Millisecond
	// Task 3: nothing found.
	s3 := evaluate([]gold{{"e.py", nil}}, nil, pack{}, pack{})
	s3.Latency = 20 * time.Millisecond

	want := score{Ranks: []int{3, 7}, Covered8k: []bool{false, false}, Covered32k: []bool{true, true}, Top: ranked2[:10], Latency: 30 * time.Millisecond,
		GoldSpans8k: map[string][]lineRange{"c.py": {{10, 10}}}} // what the 8k package held of c.py instead
	if diff := cmp.Diff(want, s2); diff != "" {
		t.Errorf("evaluate (-want +got):\n%s", diff)
	}

	got := summarize([]score{s1, s2, s3})
	wantSum := Summary{
		Tasks: 3,
		Acc1:  1.0 / 3, Acc5: 1.0 / 3, Acc10: 2.0 / 3,
		R1: 1.0 / 3, R5: (1 + 0.5) / 3, R10: 2.0 / 3,
		R8k: 1.0 / 3, R32k: 2.0 / 3,
		LatencyP50: 20 * time.Millisecond, LatencyP95: 30 * time.Millisecond,
	}
	if diff := cmp.Diff(wantSum, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("summarize (-want +got):\n%s", diff)
	}
	if got := summarize(nil); got != (Summary{}) {
		t.Errorf("summarize(nil) = %+v, want zero", got)
	}
}

func TestMedianPercentile(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		var out []time.Duration
		for _, v := range vs {
			out = append(out, time.Duration(v)*time.Millisecond)
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // 100..1, unsorted on purpose
	}
	tests := []struct {
		name     string
		in       []time.Duration
		p50, p95 time.Duration
	}{
		{"none", nil, 0, 0},
		{"one", ms(7), 7 * time.Millisecond, 7 * time.Millisecond},
		{"odd", ms(5, 1, 3), 3 * time.Millisecond, 5 * time.Millisecond},
		{"even", ms(4, 1, 3, 2), 2500 * time.Microsecond, 4 * time.Millisecond},
		{"twenty: p95 is the 19th", ms(20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 10500 * time.Microsecond, 19 * time.Millisecond},
		{"hundred", ms(hundred...), 50500 * time.Microsecond, 95 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := median(tc.in); got != tc.p50 {
				t.Errorf("median = %v, want %v", got, tc.p50)
			}
			if got := percentile(tc.in, 95); got != tc.p95 {
				t.Errorf("p95 = %v, want %v", got, tc.p95)
			}
		})
	}
}

func TestSetReportsAndOverall(t *testing.T) {
	hit := score{Ranks: []int{1}, Covered8k: []bool{true}, Covered32k: []bool{true}}
	miss := score{Ranks: []int{0}, Covered8k: []bool{false}, Covered32k: []bool{false}}
	variant := func(name, text string, cra score) *variantResult {
		return &variantResult{Name: name, Text: text, CRA: cra, BM25All: miss, BM25Code: hit}
	}
	h := &harness{
		opts: &options{sets: []setSpec{{Name: "commits", Path: "commits.jsonl", Tasks: make([]Task, 3)}, {Name: "swe", Path: "swe.jsonl", Tasks: make([]Task, 1)}}},
		results: []*taskResult{
			{Set: "commits", ID: "c1", Variants: []*variantResult{variant(variantMessage, "fix(core): x", hit), variant(variantStripped, "x", miss)}},
			{Set: "commits", ID: "c2", Variants: []*variantResult{variant(variantMessage, "y", miss), variant(variantStripped, "y", miss)}},
			{Set: "commits", ID: "c3", Skipped: "no gold file exists at the checkout"},
			{Set: "swe", ID: "s1", Variants: []*variantResult{variant(variantIssue, "issue", hit)}},
		},
	}
	sets := h.setReports()
	if len(sets) != 2 {
		t.Fatalf("got %d set reports, want 2", len(sets))
	}
	c := sets[0]
	if c.Tasks != 3 || c.Scored != 2 || len(c.Skipped) != 1 || c.ScopeStripped != 1 {
		t.Errorf("commits: got tasks %d scored %d skipped %d stripped %d, want 3 2 1 1", c.Tasks, c.Scored, len(c.Skipped), c.ScopeStripped)
	}
	if len(c.Variants) != 2 || c.Variants[0].CRA.R1 != 0.5 || c.Variants[1].CRA.R1 != 0 || c.Variants[1].BM25Code.R1 != 1 {
		t.Errorf("commits variants: got %+v", c.Variants)
	}
	if s := sets[1]; len(s.Variants) != 1 || s.Variants[0].Name != variantIssue || s.Variants[0].CRA.Tasks != 1 {
		t.Errorf("swe: got %+v", s.Variants)
	}
	// Overall: the SWE-bench task counts in both rows with its only text.
	all := h.overall()
	if len(all) != 2 || all[0].Name != "as written" || all[1].Name != "scope stripped" {
		t.Fatalf("overall: got %+v", all)
	}
	if all[0].CRA.Tasks != 3 || math.Abs(all[0].CRA.R1-2.0/3) > 1e-9 || math.Abs(all[1].CRA.R1-1.0/3) > 1e-9 {
		t.Errorf("overall: got R@1 %v and %v over %d tasks, want 2/3 and 1/3 over 3", all[0].CRA.R1, all[1].CRA.R1, all[0].CRA.Tasks)
	}
}

func TestCandidateMissesGoldTestsLanguages(t *testing.T) {
	// t1: the source is ranked by BM25 5th and not at all by cra (a
	// miss); its test is covered at 32k only.
	t1 := &taskResult{Set: "s", ID: "t1", Gold: []gold{{Path: "pkg/core.py"}, {Path: "tests/test_core.py"}}, Variants: []*variantResult{{
		Name:     variantMessage,
		CRA:      score{Ranks: []int{0, 2}, Covered8k: []bool{false, false}, Covered32k: []bool{false, true}},
		BM25Code: score{Ranks: []int{5, 1}, Covered8k: []bool{true, true}, Covered32k: []bool{true, true}},
	}}}
	// t2: BM25 ranks the gold file 21st: not a miss though cra lost it.
	t2 := &taskResult{Set: "s", ID: "t2", Gold: []gold{{Path: "src/app.ts"}}, Variants: []*variantResult{{
		Name:     variantMessage,
		CRA:      score{Ranks: []int{0}, Covered8k: []bool{false}, Covered32k: []bool{false}},
		BM25Code: score{Ranks: []int{21}, Covered8k: []bool{false}, Covered32k: []bool{false}},
	}}}
	// t3: a Go test file covered in both packages; BM25 misses it.
	t3 := &taskResult{Set: "s", ID: "t3", Gold: []gold{{Path: "context_test.go"}}, Variants: []*variantResult{{
		Name:     variantMessage,
		CRA:      score{Ranks: []int{1}, Covered8k: []bool{true}, Covered32k: []bool{true}},
		BM25Code: score{Ranks: []int{0}, Covered8k: []bool{false}, Covered32k: []bool{false}},
	}}}
	h := &harness{
		opts:    &options{sets: []setSpec{{Name: "s", Path: "s.jsonl", Tasks: make([]Task, 3)}}},
		results: []*taskResult{t1, t2, t3},
	}
	v := h.setReports()[0].Variants[0]
	if v.CandidateMisses != 1 || v.GoldTests != 2 || v.GoldTests8k != 1 || v.GoldTests32k != 2 {
		t.Errorf("got misses %d, gold tests %d (8k %d, 32k %d), want 1, 2 (1, 2)", v.CandidateMisses, v.GoldTests, v.GoldTests8k, v.GoldTests32k)
	}
	langs := h.byLanguage()
	var got []string
	for _, l := range langs {
		got = append(got, l.Name)
	}
	if diff := cmp.Diff([]string{langPython, langGo, langJS}, got); diff != "" {
		t.Fatalf("languages (-want +got):\n%s", diff)
	}
	if langs[0].CRA.Tasks != 1 || langs[0].CandidateMisses != 1 || langs[1].CRA.R8k != 1 || langs[2].BM25Code.R1 != 0 {
		t.Errorf("languages: got %+v", langs)
	}
	for p, want := range map[string]string{"a.py": langPython, "x/y.tsx": langJS, "index.mjs": langJS, "main.go": langGo, "README.md": langOther} {
		if got := languageOf(p); got != want {
			t.Errorf("languageOf(%q) = %q, want %q", p, got, want)
		}
	}
	mixed := &taskResult{Gold: []gold{{Path: "CHANGES.md"}, {Path: "a.go"}, {Path: "b.py"}}}
	if got := taskLanguage(mixed); got != langGo {
		t.Errorf("taskLanguage of md, go, py = %q, want %q (the first language on a tie)", got, langGo)
	}
}
