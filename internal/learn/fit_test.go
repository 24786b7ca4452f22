package learn

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/retrieve"
)

// synthetic makes n examples in which the changed file is the one the
// symbol signal points at, while an unchanged file beats it on plain
// search: a learner must come to trust symbol over search.
func synthetic(repo string, n int) []Example {
	var out []Example
	day := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		e := Example{Repo: repo, Commit: fmt.Sprintf("%s%04d", repo, i), Date: day.AddDate(0, 0, i), Gold: []string{"gold.py"}}
		e.Candidates = []Row{
			{Path: "noise.py", Code: true, Signals: map[string]float64{"search": 1, "churn": 0.5}},
			{Path: "gold.py", Gold: true, Code: true, Signals: map[string]float64{"search": 0.3, "symbol": 0.5}},
			{Path: "CHANGES.md", Changed: true, Prose: 1, Signals: map[string]float64{"search": 0.9}},
			{Path: "other.py", Code: true, Signals: map[string]float64{"search": 0.6 + 0.001*float64(i%7)}},
			{Path: "recalled.py", Recalled: true, Code: true},
		}
		for k := range 6 {
			e.Candidates = append(e.Candidates, Row{Path: fmt.Sprintf("n%d.py", k), Code: true, Signals: map[string]float64{"search": 0.65 + 0.03*float64(k)}})
		}
		// Every third commit the symbol points at a decoy too, so the
		// data does not say "symbol alone".
		if i%3 == 0 {
			e.Candidates = append(e.Candidates, Row{Path: "decoy.py", Code: true, Signals: map[string]float64{"symbol": 0.5, "search": 0.1}})
		}
		out = append(out, e)
	}
	return out
}

func TestFitLearnsWhatRanksTheChangedFile(t *testing.T) {
	ex := synthetic("a", 40)
	prior := retrieve.Weights{Search: 1, Mention: 1, Symbol: 0.5, Chunk: 1, Name: 1, Dep: 0.1, CoChange: 0.1, Ident: 0.1, Churn: 0.1, Test: 0.1, Area: 0.1, Metadata: 0.1, Implied: 0.1, Prose: 0.5, PairHistory: 0.5, HistoryDamping: 0.25}
	before := Evaluate(ex, prior)
	if before.Acc5 != 0 {
		t.Fatalf("prior: got Acc@5 %v, want the synthetic set to defeat it", before.Acc5)
	}
	for _, loss := range []string{LossSoftmax, LossPairwise, LossCutoff} {
		t.Run(loss, func(t *testing.T) {
			cfg := FitConfig{Loss: loss, L2: 0.001, Prior: prior, Iterations: 400, Rate: 0.05, Fixed: []string{"implied"}}
			w, err := Fit(ex, cfg)
			if err != nil {
				t.Fatal(err)
			}
			after := Evaluate(ex, w)
			if after.Acc5 < 0.9 || loss != LossCutoff && after.Acc1 < 0.9 {
				t.Errorf("got %+v after fitting (weights %+v), want the changed file first (in the top 5 for %s)", after, w, LossCutoff)
			}
			if w.Symbol <= w.Search {
				t.Errorf("got symbol %v, search %v: want symbol trusted more", w.Symbol, w.Search)
			}
			if w.Implied != prior.Implied {
				t.Errorf("implied: got %v, want it fixed at %v", w.Implied, prior.Implied)
			}
			if w.PairHistory != prior.PairHistory {
				t.Errorf("pair_history: got %v, want the prior's %v (no weight the fit learns)", w.PairHistory, prior.PairHistory)
			}
			if w.HistoryDamping != prior.HistoryDamping {
				t.Errorf("history_damping: got %v, want the prior's %v (no weight the fit learns)", w.HistoryDamping, prior.HistoryDamping)
			}
			again, err := Fit(ex, cfg)
			if err != nil || again != w {
				t.Errorf("a second fit gave %+v, %v; want the same %+v", again, err, w)
			}
		})
	}
}

// withTests makes n examples whose test file holds the task's words
// better than the source the commit fixed: "tests/test_core.py" beats
// "core.py" on search. In every other commit the test changed with the
// source (gold too); in the others an unchanged test outranks it. One
// commit in five speaks of tests ("add a test"), and there the test is
// left alone by the demotion.
func withTests(repo string, n int) []Example {
	var out []Example
	day := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		task := "core drops the value"
		if i%5 == 4 {
			task = "add a test: core drops the value"
		}
		e := Example{Repo: repo, Commit: fmt.Sprintf("%s%04d", repo, i), Date: day.AddDate(0, 0, i), Task: task, Gold: []string{"core.py"}}
		changedTest := i%2 == 0
		if changedTest {
			e.Gold = append(e.Gold, "tests/test_core.py")
		}
		e.Candidates = []Row{
			{Path: "tests/test_core.py", Gold: changedTest, Code: true, Test: true, Signals: map[string]float64{"search": 1, "test": 0.5}},
			{Path: "tests/test_other.py", Code: true, Test: true, Signals: map[string]float64{"search": 0.9}},
			{Path: "core.py", Gold: true, Code: true, Signals: map[string]float64{"search": 0.6, "symbol": 0.2}},
			{Path: "other.py", Code: true, Signals: map[string]float64{"search": 0.65}},
			{Path: "docs/core.md", Prose: 1, Signals: map[string]float64{"search": 0.8}},
		}
		out = append(out, e)
	}
	return out
}

// TestFitLearnsTestDemotion: where test files outrank the source a
// commit fixed, the learner demotes them, and more so when a changed
// test is no answer (TestsChanged) than when it is one; a test the task
// speaks of is never demoted, so it scores as before.
func TestFitLearnsTestDemotion(t *testing.T) {
	ex := withTests("t", 40)
	prior := retrieve.HandSetWeights
	fixed := []string{"search", "mention", "symbol", "name", "chunk", "area", "implied", "dep", "cochange", "ident", "churn", "test", "metadata", "prose"}
	var demotions [2]float64
	for k, testsChanged := range []bool{false, true} {
		cfg := FitConfig{Loss: LossSoftmax, L2: 0.001, Prior: prior, Iterations: 300, Rate: 0.05, Fixed: fixed, TestsChanged: testsChanged}
		w, err := Fit(ex, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if w.TestDemotion <= 0.1 || w.TestDemotion > maxTestDemotion {
			t.Errorf("tests changed %v: got test demotion %v, want it learned in (0.1, %v]", testsChanged, w.TestDemotion, maxTestDemotion)
		}
		w2 := w
		w2.TestDemotion = prior.TestDemotion
		if w2 != prior {
			t.Errorf("tests changed %v: fixed weights moved: %+v", testsChanged, w)
		}
		if before, after := EvaluateSources(ex, prior), EvaluateSources(ex, w); after.MRR <= before.MRR {
			t.Errorf("tests changed %v: source MRR %v → %v, want it up", testsChanged, before.MRR, after.MRR)
		}
		again, err := Fit(ex, cfg)
		if err != nil || again != w {
			t.Errorf("tests changed %v: a second fit gave %+v, %v; want the same %+v", testsChanged, again, err, w)
		}
		demotions[k] = w.TestDemotion
	}
	if demotions[1] <= demotions[0] {
		t.Errorf("test demotion %v with tests as answers, %v with tests changed: want more when a changed test is no answer", demotions[0], demotions[1])
	}
	// The commits that speak of tests: the test row is not demoted.
	for _, q := range queries(ex, true) {
		var i int
		fmt.Sscanf(q.commit, "t%d", &i)
		about := i%5 == 4
		if q.rows[0].testFile == about {
			t.Errorf("%s: test file marked %v for demotion, want %v", q.commit, q.rows[0].testFile, !about)
		}
	}
}

// withDecl makes n examples in which a file that only declares types
// (types.ts: Decl) beats the source the commit fixed on search, as an
// options interface holds every option's name; in every fourth commit the
// task names the types file, which then is the answer and is not
// demoted.
func withDecl(repo string, n int) []Example {
	var out []Example
	day := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		e := Example{Repo: repo, Commit: fmt.Sprintf("%s%04d", repo, i), Date: day.AddDate(0, 0, i), Task: "retry limit lost on extend", Gold: []string{"merge.ts"}}
		named := i%4 == 3
		types := Row{Path: "types.ts", Code: true, Decl: true, Signals: map[string]float64{"search": 1, "symbol": 0.3}}
		if named {
			e.Gold = []string{"types.ts"}
			types.Gold = true
			types.Signals["mention"] = 1
		}
		e.Candidates = []Row{
			types,
			{Path: "merge.ts", Gold: !named, Code: true, Signals: map[string]float64{"search": 0.7}},
			{Path: "ky.ts", Code: true, Signals: map[string]float64{"search": 0.65}},
			{Path: "hooks.ts", Code: true, Decl: true, Signals: map[string]float64{"search": 0.8}},
		}
		out = append(out, e)
	}
	return out
}

// TestFitLearnsDeclDemotion: where files that only declare types outrank
// the code a commit fixed, the learner demotes them, the other weights
// fixed; a types file the task names is not demoted.
func TestFitLearnsDeclDemotion(t *testing.T) {
	ex := withDecl("d", 40)
	prior := retrieve.HandSetWeights
	fixed := []string{"search", "mention", "symbol", "name", "chunk", "area", "implied", "dep", "cochange", "ident", "churn", "test", "metadata", "prose", "test_demotion"}
	before := Evaluate(ex, prior)
	for _, loss := range []string{LossSoftmax, LossPairwise} {
		cfg := FitConfig{Loss: loss, L2: 0.001, Prior: prior, Iterations: 300, Rate: 0.05, Fixed: fixed}
		w, err := Fit(ex, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if w.DeclDemotion <= 0.3 || w.DeclDemotion > maxDeclDemotion {
			t.Errorf("%s: got decl demotion %v, want it learned in (0.3, %v]", loss, w.DeclDemotion, maxDeclDemotion)
		}
		w2 := w
		w2.DeclDemotion = prior.DeclDemotion
		if w2 != prior {
			t.Errorf("%s: fixed weights moved: %+v", loss, w)
		}
		if after := Evaluate(ex, w); after.Acc1 <= before.Acc1 || after.MRR <= before.MRR {
			t.Errorf("%s: Acc@1 %v → %v, MRR %v → %v: want both up", loss, before.Acc1, after.Acc1, before.MRR, after.MRR)
		}
		again, err := Fit(ex, cfg)
		if err != nil || again != w {
			t.Errorf("%s: a second fit gave %+v, %v; want the same %+v", loss, again, err, w)
		}
	}
	for _, q := range queries(ex, false) {
		var i int
		fmt.Sscanf(q.commit, "d%d", &i)
		if named := i%4 == 3; q.rows[0].declFile == named || !q.rows[3].declFile || q.rows[1].declFile {
			t.Errorf("%s: types.ts marked %v (named %v), hooks.ts %v, merge.ts %v: want the unnamed declaration files marked", q.commit, q.rows[0].declFile, named, q.rows[3].declFile, q.rows[1].declFile)
		}
	}
}

func TestEvaluateSources(t *testing.T) {
	ex := withTests("t", 10)
	w := retrieve.Weights{Search: 1, Prose: 0.5}
	all, src := Evaluate(ex, w), EvaluateSources(ex, w)
	if all.Commits != 10 || src.Commits != 10 {
		t.Fatalf("commits: got %d and %d, want 10 each", all.Commits, src.Commits)
	}
	// By search alone: test_core (1), test_other (0.9), other.py (0.65),
	// core.py (0.6), the prose docs (0.8 × 0.5). core.py is 4th in every
	// commit; the changed test counts as gold in commit 4 only (it speaks
	// of tests), where it is 1st.
	if want := (9*0.25 + 1) / 10; math.Abs(src.MRR-want) > 1e-12 {
		t.Errorf("source MRR: got %v, want %v", src.MRR, want)
	}
	// Every gold counted: the changed test (1st) in half the commits.
	if want := (5*1 + 5*0.25) / 10; math.Abs(all.MRR-want) > 1e-12 {
		t.Errorf("MRR: got %v, want %v", all.MRR, want)
	}
}

func TestFitRefuses(t *testing.T) {
	prior := retrieve.HandSetWeights
	tests := []struct {
		name string
		ex   []Example
		cfg  FitConfig
	}{
		{"unknown loss", synthetic("a", 3), FitConfig{Loss: "hinge", Prior: prior}},
		{"bad prior", synthetic("a", 3), FitConfig{Loss: LossSoftmax, Prior: retrieve.Weights{Search: -1}}},
		{"unknown fixed signal", synthetic("a", 3), FitConfig{Loss: LossSoftmax, Prior: prior, Fixed: []string{"vibes"}}},
		{"test demotion 1 in the prior", synthetic("a", 3), FitConfig{Loss: LossSoftmax, Prior: retrieve.Weights{Search: 1, TestDemotion: 1}}},
		{"decl demotion 1 in the prior", synthetic("a", 3), FitConfig{Loss: LossSoftmax, Prior: retrieve.Weights{Search: 1, DeclDemotion: 1}}},
		{"nothing to learn", []Example{{Repo: "a", Commit: "c", Gold: []string{"x"}, Unranked: 1}}, FitConfig{Loss: LossSoftmax, Prior: prior}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Fit(tc.ex, tc.cfg); err == nil {
				t.Error("got no error")
			}
		})
	}
}

// TestObjectiveGradient checks the analytic gradient against finite
// differences, for every loss and both labellings of tests, at a point
// with prose rows, demoted test and declaration rows (one row both) and a
// temperature away from 1.
func TestObjectiveGradient(t *testing.T) {
	for _, tc := range []struct {
		loss         string
		testsChanged bool
	}{{LossSoftmax, false}, {LossPairwise, false}, {LossCutoff, false}, {LossSoftmax, true}, {LossPairwise, true}} {
		loss := tc.loss
		ex := append(synthetic("a", 6), withTests("b", 6)...)
		ex = append(ex, withDecl("c", 6)...)
		// A declaration-only test row: both demotions scale it.
		ex[6].Candidates[1].Decl = true
		qs := queries(ex, tc.testsChanged)
		cfg := FitConfig{Loss: loss, L2: 0.1}
		p := paramsOf(retrieve.HandSetWeights)
		p[tempParam] = 0.3
		p[testParam] = 0.35
		p[declParam] = 0.45
		prior := paramsOf(retrieve.Weights{Search: 0.5, Symbol: 2, Prose: 0.2})
		_, g := objective(qs, p, prior, cfg)
		for i := range p {
			const h = 1e-6
			up, down := append(params{}, p...), append(params{}, p...)
			up[i] += h
			down[i] -= h
			lu, _ := objective(qs, up, prior, cfg)
			ld, _ := objective(qs, down, prior, cfg)
			num := (lu - ld) / (2 * h)
			if math.Abs(num-g[i]) > 1e-5*max(1, math.Abs(num)) {
				t.Errorf("%s (tests changed %v): parameter %d: analytic %v, numeric %v", loss, tc.testsChanged, i, g[i], num)
			}
		}
	}
}

func TestEvaluate(t *testing.T) {
	w := retrieve.Weights{Search: 1, Prose: 0.5}
	ex := []Example{
		// gold first by search
		{Repo: "r", Commit: "1", Gold: []string{"a.py"}, Candidates: []Row{{Path: "a.py", Gold: true, Signals: map[string]float64{"search": 1}}, {Path: "b.py", Signals: map[string]float64{"search": 0.5}}}},
		// two gold: 1st and 3rd (behind a tie broken by path)
		{Repo: "r", Commit: "2", Gold: []string{"a.py", "c.py"}, Candidates: []Row{
			{Path: "c.py", Gold: true, Signals: map[string]float64{"search": 0.5}}, {Path: "b.py", Signals: map[string]float64{"search": 0.5}},
			{Path: "a.py", Gold: true, Signals: map[string]float64{"search": 1}}}},
		// gold only recalled: after every fused file, whatever their scores
		{Repo: "r", Commit: "3", Gold: []string{"z.py"}, Candidates: []Row{{Path: "z.py", Gold: true, Recalled: true}, {Path: "b.py"}}},
		// gold not among the candidates
		{Repo: "r", Commit: "4", Gold: []string{"q.py"}, Unranked: 1, Candidates: []Row{{Path: "b.py", Signals: map[string]float64{"search": 1}}}},
	}
	got := Evaluate(ex, w)
	want := Metrics{Commits: 4, Acc1: 0.25, Acc5: 0.75, Acc10: 0.75, MRR: (1 + 1 + 0.5) / 4, Recall5: 0.75}
	if math.Abs(got.MRR-want.MRR) > 1e-12 {
		t.Errorf("MRR: got %v, want %v", got.MRR, want.MRR)
	}
	got.MRR = want.MRR
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestSplitByTime(t *testing.T) {
	ex := append(synthetic("b", 10), synthetic("a", 4)...)
	train, valid := SplitByTime(ex, 0.25)
	if len(train) != 10 || len(valid) != 4 {
		t.Fatalf("got %d/%d, want 10 to train and 4 to validate (3 of b, 1 of a)", len(train), len(valid))
	}
	newest := map[string]time.Time{}
	for _, e := range train {
		if e.Date.After(newest[e.Repo]) {
			newest[e.Repo] = e.Date
		}
	}
	for _, e := range valid {
		if !e.Date.After(newest[e.Repo]) {
			t.Errorf("validation commit %s (%s) is not newer than %s's training commits", e.Commit, e.Date, e.Repo)
		}
	}
}
