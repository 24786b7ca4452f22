package retrieve

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
)

// scripted is a Judge that answers by call type and records each call.
type scripted struct {
	replies map[string]string
	calls   []string
	stages  []string
	prompts []string
}

func (s *scripted) judge(_ context.Context, callType, stage, system, prompt string) (string, error) {
	s.calls = append(s.calls, callType)
	s.stages = append(s.stages, stage)
	s.prompts = append(s.prompts, prompt)
	r, ok := s.replies[callType]
	if !ok {
		return "", errors.New("no scripted reply for " + callType)
	}
	return r, nil
}

// newPipeline returns a pipeline over f that logs to a fresh raw DB, also
// returned for the tests to read.
func newPipeline(t *testing.T, f *fixture, j Judge) (*Pipeline, *sql.DB) {
	t.Helper()
	fac := store.NewFactory(statedir.At(filepath.Join(t.TempDir(), "state")))
	raw, err := fac.Open(context.Background(), store.Raw, "", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	sess, err := fac.OpenSession(context.Background(), "task-1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return &Pipeline{KB: f.kb, Corpus: corpus.New(raw), RepoID: f.repoID, Root: f.root, Session: sess, Judge: j, PromptTokens: 4096}, raw
}

var budget = Budget{ContextWindow: 4000, ReservedTokens: 500}

func TestPipelineDeterministic(t *testing.T) {
	f := newFixture(t, shop...)
	p, raw := newPipeline(t, f, nil)
	stages, err := ParseStages("scope,precision")
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Run(context.Background(), "task-1", "Resolve the pager command once, in `_pager_contextmanager`", stages, budget)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Package.Files) == 0 || res.Package.Files[0].Path != "shop/pager.py" {
		t.Fatalf("package files: got %v, want shop/pager.py first", res.Package.Files)
	}
	if !contains(res.Info, "enrichment not found, Tier 4 skipped") {
		t.Errorf("info: got %v, want the Tier 4 note", res.Info)
	}
	// Every candidate's decision is logged; the session holds the stages' state.
	var n int
	raw.QueryRow("SELECT COUNT(*) FROM retrieval_decisions WHERE task_id = 'task-1' AND stage = 'scope'").Scan(&n)
	if n != len(res.Decisions) || n == 0 {
		t.Errorf("retrieval_decisions: got %d rows, want %d", n, len(res.Decisions))
	}
	for _, key := range []string{"stage_progress", "stage_outputs", "final_context"} {
		if _, ok, err := p.Session.Get(context.Background(), key); !ok || err != nil {
			t.Errorf("session key %s: got %v, %v", key, ok, err)
		}
	}
}

// TestLocalize: Localize's files are the first n of the ranking the
// deterministic scope stage and the retrieval harness take (Analyze, then
// Rank for up to 100 files), whatever n, and Markdown is what 'cra
// retrieve' prints.
func TestLocalize(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, shop...)
	p := &Pipeline{KB: f.kb, RepoID: f.repoID, Root: f.root}
	for _, task := range []string{
		"Resolve the pager command once, in `_pager_contextmanager`",
		"the cart total is wrong when a coupon applies",
		"shop/pager.py",
	} {
		rk := NewRanker(f.kb, f.repoID)
		rk.Root = f.root
		full, err := rk.Rank(ctx, Analyze(task), 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 3, 10, 50} {
			q, got, err := p.Localize(ctx, task, n)
			if err != nil {
				t.Fatal(err)
			}
			want := full[:min(n, len(full))]
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%q top %d (-harness +localize):\n%s", task, n, diff)
			}
			if q.Text != task {
				t.Errorf("query text: got %q, want %q", q.Text, task)
			}
		}
	}
	if _, _, err := p.Localize(ctx, " \n", 5); !errors.Is(err, ErrEmptyTask) {
		t.Errorf("empty task: got %v, want ErrEmptyTask", err)
	}
	if _, _, err := p.Localize(ctx, "pager", 0); err == nil {
		t.Error("n = 0: got no error")
	}

	pkg := &Package{Files: []PackageFile{{Path: "a.py", Tier: 1, Reasons: []string{"named"}, Tokens: 3,
		Items: []Item{{Kind: "file", StartLine: 1, EndLine: 1, Text: "x = 1\n"}}}}, Tokens: 3, Budget: 100}
	got := pkg.Markdown("fix it\nmore text", Made{TaskID: "t-1", Stages: "scope,precision", Deterministic: true})
	want := "# Context for: fix it\n\ntask t-1 · stages scope,precision (deterministic) · 1 files · 3 of 100 tokens\n" + pkg.Render()
	if got != want {
		t.Errorf("markdown: got %q, want %q", got, want)
	}
	if got := pkg.Markdown("fix it", Made{Stages: "scope"}); !strings.Contains(got, "\n\nstages scope (with the reasoning model) · 1 files") {
		t.Errorf("markdown without a task id: got %q", got)
	}
}

func TestParseStages(t *testing.T) {
	if _, err := ParseStages("scope,bogus"); err == nil || !strings.Contains(err.Error(), `unknown stage "bogus": known stages are precision, scope`) {
		t.Errorf("got %v", err)
	}
	s, err := ParseStages("precision, scope")
	if err != nil || s[0].Name() != "precision" || s[1].Name() != "scope" {
		t.Errorf("caller's order: got %v, %v", s, err)
	}
}

func TestPipelineWithJudge(t *testing.T) {
	f := newFixture(t, shop...)
	j := &scripted{replies: map[string]string{
		"task_analysis": `{"intent": "Compute the pager command once.", "type": "refactor", "symbols": ["echo_via_pager"], "files": ["shop/fmt.py"]}`,
		// The model drops README.md and a seed (kept anyway), and says
		// nothing about the other candidates.
		"scope_judgment": "Here you go:\n```json\n" + `{"files": [{"path": "README.md", "relevant": false, "reason": "docs only"},
			{"path": "shop/pager.py", "relevant": false, "reason": "wrong"},
			{"path": "shop/cli.py", "relevant": true, "reason": "calls the pager"},
			{"path": "shop/fmt.py", "relevant": false, "reason": "formatting only"},]}` + "\n```",
		"precision_judgment": `{"symbols": [{"path": "shop/pager.py", "symbol": "echo_via_pager", "tier": "excluded"},
			{"path": "shop/pager.py", "symbol": "_pager_contextmanager", "tier": "primary"}]}`,
	}}
	p, _ := newPipeline(t, f, j.judge)
	stages, _ := ParseStages("scope,precision")
	res, err := p.Run(context.Background(), "task-1", "Resolve the pager command once, in `_pager_contextmanager`", stages, budget)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(j.calls, ","); got != "task_analysis,scope_judgment,precision_judgment" {
		t.Errorf("calls: got %s", got)
	}
	// Each call names its stage, so the router applies the stage's
	// override or adapter (seed 001 §16.1), task analysis's too.
	if got := strings.Join(j.stages, ","); got != "task_analysis,scope,precision" {
		t.Errorf("stages: got %s", got)
	}
	if res.Context.Task.Intent != "Compute the pager command once." || res.Context.Task.Type != TypeRefactor ||
		!contains(res.Context.Task.ImpliedSymbols, "echo_via_pager") || !contains(res.Context.Task.ImpliedFiles, "shop/fmt.py") {
		t.Errorf("intent merge: got %+v", res.Context.Task)
	}
	decided := map[string]Decision{}
	for _, d := range res.Decisions {
		decided[d.Path] = d
	}
	if d := decided["README.md"]; d.Included || !strings.Contains(d.Reason, "docs only") {
		t.Errorf("README.md: got %+v, want excluded by the model", d)
	}
	if d := decided["shop/pager.py"]; !d.Included || !strings.Contains(d.Reason, "kept: named by the task") {
		t.Errorf("pager.py: got %+v, want kept as a seed", d)
	}
	// A file the task analysis implied is a guess, not a seed: the scope
	// judgment drops it.
	if d := decided["shop/fmt.py"]; d.Included || d.Reason != "model: formatting only" {
		t.Errorf("fmt.py: got %+v, want dropped by the model", d)
	}
	if d := decided["tests/test_pager.py"]; !d.Included || !strings.Contains(d.Reason, "not judged by the model") {
		t.Errorf("unjudged candidate: got %+v, want the deterministic decision, logged", d)
	}
	for _, pf := range res.Package.Files {
		if pf.Path == "README.md" {
			t.Error("an excluded file is in the package")
		}
		for _, it := range pf.Items {
			if it.Kind == "symbol" && it.Name == "echo_via_pager" {
				t.Error("a symbol the model excluded is in the package in full")
			}
		}
	}
	if !strings.Contains(j.prompts[1], "Intent: Compute the pager command once.") {
		t.Errorf("scope prompt lacks the intent:\n%s", j.prompts[1])
	}
	// The precision prompt lists the candidates best first, with why.
	prec := j.prompts[2]
	named := strings.Index(prec, "- shop/pager.py function _pager_contextmanager: def _pager_contextmanager(color=None): (named in the task")
	linked := strings.Index(prec, "calls echo_via_pager")
	if named < 0 || linked < 0 || linked < named {
		t.Errorf("precision prompt: want _pager_contextmanager first, named in the task, and a caller of echo_via_pager after it:\n%s", prec)
	}
}

// A verdict on a symbol the prompt did not offer is a slip of the model:
// ignored, and said.
func TestPrecisionIgnoresUnofferedVerdicts(t *testing.T) {
	f := newFixture(t, shop...)
	j := &scripted{replies: map[string]string{
		"task_analysis":  `{"intent": "x", "type": "bug"}`,
		"scope_judgment": `{"files": []}`,
		"precision_judgment": `{"symbols": [{"path": "nowhere/ghost.py", "symbol": "boo", "tier": "primary"},
			{"path": "shop/pager.py", "symbol": "_pager_contextmanager", "tier": "excluded"}]}`,
	}}
	p, _ := newPipeline(t, f, j.judge)
	stages, _ := ParseStages("scope,precision")
	res, err := p.Run(context.Background(), "task-1", "pager `_pager_contextmanager`", stages, budget)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.Context.Details["nowhere/ghost.py"]; ok || res.Context.Details["shop/pager.py"]["_pager_contextmanager"] != DetailExcluded {
		t.Errorf("details: got %v", res.Context.Details)
	}
	if !contains(res.Info, "precision: 1 verdict(s) named symbols that were not offered; ignored") {
		t.Errorf("info: got %v", res.Info)
	}
}

// TestPipelineMalformedJudgment: a stage whose replies stay malformed
// (the same bad reply twice) is asked once more, then falls back to its
// deterministic result with a warning naming the call; the run succeeds,
// and every stage logs its decisions.
func TestPipelineMalformedJudgment(t *testing.T) {
	f := newFixture(t, shop...)
	for _, tc := range []struct{ call, reply string }{
		{"task_analysis", "I think this is about paging."},
		{"scope_judgment", `{"files": [{"path": "shop/pager.py", "relevant": maybe}]}`},
		{"precision_judgment", `{"symbols": [{"path": "shop/pager.py", "symbol": "x", "tier": "important"}]}`},
	} {
		t.Run(tc.call, func(t *testing.T) {
			j := &scripted{replies: map[string]string{
				"task_analysis":      `{"intent": "x", "type": "bug"}`,
				"scope_judgment":     `{"files": []}`,
				"precision_judgment": `{"symbols": []}`,
			}}
			j.replies[tc.call] = tc.reply
			p, raw := newPipeline(t, f, j.judge)
			stages, _ := ParseStages("scope,precision")
			res, err := p.Run(context.Background(), "task-1", "pager `_pager_contextmanager`", stages, budget)
			if err != nil {
				t.Fatalf("got %v, want the run to fall back and succeed", err)
			}
			asked := 0
			for _, c := range j.calls {
				if c == tc.call {
					asked++
				}
			}
			if asked != 2 {
				t.Errorf("%s asked %d times, want twice", tc.call, asked)
			}
			if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "unusable twice ("+tc.call+": ") {
				t.Errorf("warnings: got %q", res.Warnings)
			}
			if len(res.Package.Files) == 0 || res.Package.Files[0].Path != "shop/pager.py" {
				t.Errorf("the package: got %+v, want the deterministic ranking with shop/pager.py first", res.Package.Files)
			}
			var scope int
			if err := raw.QueryRow(`SELECT COUNT(*) FROM retrieval_decisions WHERE task_id = 'task-1' AND stage = 'scope'`).Scan(&scope); err != nil {
				t.Fatal(err)
			}
			if scope == 0 {
				t.Error("no scope decisions logged")
			}
		})
	}
}

func TestPipelineScopeBatches(t *testing.T) {
	f := newFixture(t, shop...)
	j := &scripted{replies: map[string]string{"task_analysis": `{"intent": "x"}`, "scope_judgment": `{"files": []}`, "precision_judgment": `{"symbols": []}`}}
	p, _ := newPipeline(t, f, j.judge)
	p.PromptTokens = 60 // a tiny window: one candidate per prompt
	stages, _ := ParseStages("scope")
	res, err := p.Run(context.Background(), "task-1", "pager `_pager_contextmanager` format table", stages, budget)
	if err != nil {
		t.Fatal(err)
	}
	scopeCalls := 0
	for _, c := range j.calls {
		if c == "scope_judgment" {
			scopeCalls++
		}
	}
	if scopeCalls < 2 || scopeCalls > len(res.Decisions) {
		t.Errorf("got %d scope calls for %d candidates, want batching by the window", scopeCalls, len(res.Decisions))
	}
}

func TestRefine(t *testing.T) {
	f := newFixture(t, shop...)
	p, _ := newPipeline(t, f, nil)
	stages, _ := ParseStages("scope,precision")
	ctx := context.Background()
	// Re-entry reads its inputs from the session: before retrieval ran
	// and before a request is written, it says what is missing.
	if _, err := p.Refine(ctx, "task-1", stages, budget); err == nil || !strings.Contains(err.Error(), "no final_context in the session") {
		t.Errorf("refine before retrieval: got %v", err)
	}
	if _, err := p.Run(ctx, "task-1", "pager `_pager_contextmanager`", stages, budget); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Refine(ctx, "task-1", stages, budget); err == nil || !strings.Contains(err.Error(), "no refinement_request in the session") {
		t.Errorf("refine without a request: got %v", err)
	}
	refine := func(req RefinementRequest) (*Result, error) {
		t.Helper()
		if err := p.Session.Set(ctx, "refinement_request", req); err != nil {
			t.Fatal(err)
		}
		return p.Refine(ctx, "task-1", stages, budget)
	}
	if _, err := refine(RefinementRequest{Reason: "needs more context"}); err == nil {
		t.Error("a refinement without evidence was accepted")
	}
	res, err := refine(RefinementRequest{
		Reason: "format_table is called", MissingSymbols: []string{"format_table"},
		ErrorSignatures: []string{`File "shop/fmt.py", line 9, in format_table`},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, pf := range res.Package.Files {
		got = append(got, pf.Path)
	}
	if !contains(got[:min(3, len(got))], "shop/fmt.py") {
		t.Errorf("refined package: got %v, want shop/fmt.py near the top", got)
	}
	// The new final_context holds the refined task: a second refinement
	// builds on the first.
	var final struct {
		Task TaskQuery `json:"task"`
	}
	if ok, err := p.Session.Load(ctx, "final_context", &final); !ok || err != nil || !contains(final.Task.Symbols, "format_table") {
		t.Errorf("final_context after refinement: %v %v %+v", ok, err, final.Task)
	}
	// A missing test named by its function is a symbol to find, not a path.
	res, err = refine(RefinementRequest{Reason: "the failing test", MissingTests: []string{"test_echo"}})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, pf := range res.Package.Files {
		if pf.Path == "tests/test_pager.py" {
			found = pf.Tier == TierSeed && contains(pf.Reasons, "defines test_echo")
		}
	}
	if !found {
		t.Errorf("refined for test_echo: got %+v, want tests/test_pager.py as a seed defining test_echo", res.Package.Files)
	}
}

func TestTestRef(t *testing.T) {
	for _, tc := range []struct {
		in             string
		files, symbols []string
	}{
		{"test_once", nil, []string{"test_once"}},
		{"TestParse", nil, []string{"TestParse"}},
		{"tests/test_pager.py", []string{"tests/test_pager.py"}, nil},
		{"test_pager.py", []string{"test_pager.py"}, nil},
		{"tests/test_x.py::TestX::test_once[a-b]", []string{"tests/test_x.py"}, []string{"TestX", "test_once"}},
		{" pager_test.go ", []string{"pager_test.go"}, nil},
		{"TestParse/empty_input", nil, []string{"TestParse"}},
		{"test_a[x/y]", nil, []string{"test_a"}},
		{"", nil, nil},
	} {
		files, symbols := testRef(tc.in)
		if !cmp.Equal(files, tc.files) || !cmp.Equal(symbols, tc.symbols) {
			t.Errorf("testRef(%q): got %q %q, want %q %q", tc.in, files, symbols, tc.files, tc.symbols)
		}
	}
}

func TestPipelinePlanFiles(t *testing.T) {
	f := newFixture(t, shop...)
	p, _ := newPipeline(t, f, nil)
	p.PlanFiles = []string{"shop/fmt.py"}
	stages, _ := ParseStages("scope,precision")
	res, err := p.Run(context.Background(), "task-1", "`_pager_contextmanager` leaks", stages, budget)
	if err != nil {
		t.Fatal(err)
	}
	if d := res.Decisions[0]; d.Path != "shop/fmt.py" || d.Tier != "plan" {
		t.Errorf("first decision: got %+v, want the plan file at tier plan", d)
	}
	if got := res.Package.Files[0].Path; got != "shop/fmt.py" {
		t.Errorf("package: got %s first, want the plan file", got)
	}
}

func TestScopeKeepsEarlierRanking(t *testing.T) {
	// With precision first, the pipeline ranks before it; scope then judges
	// those candidates and does not rank again.
	f := newFixture(t, shop...)
	ctx := context.Background()
	sc := &StageContext{Task: Analyze("`_pager_contextmanager` leaks"), Ranker: NewRanker(f.kb, f.repoID), Excluded: map[string]string{}}
	preset := []Candidate{{Path: "shop/fmt.py", Score: 1, Tier: TierSearch}}
	sc.Candidates = preset
	if err := (&ScopeStage{}).Run(ctx, sc); err != nil {
		t.Fatal(err)
	}
	if len(sc.Candidates) != 1 || sc.Candidates[0].Path != "shop/fmt.py" {
		t.Errorf("got %v, want the earlier candidates kept", paths(sc.Candidates))
	}
	// Without earlier candidates, scope ranks.
	sc.Candidates = nil
	if err := (&ScopeStage{}).Run(ctx, sc); err != nil {
		t.Fatal(err)
	}
	if len(sc.Candidates) == 0 || sc.Candidates[0].Path != "shop/pager.py" {
		t.Errorf("got %v, want shop/pager.py ranked first", paths(sc.Candidates))
	}
	// A whole pipeline in that order works end to end.
	p, _ := newPipeline(t, f, nil)
	stages, err := ParseStages("precision,scope")
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Run(ctx, "task-2", "Resolve the pager command once, in `_pager_contextmanager`", stages, budget)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Package.Files) == 0 || res.Package.Files[0].Path != "shop/pager.py" {
		t.Errorf("package files: got %v, want shop/pager.py first", res.Package.Files)
	}
}

// FuzzStageReplies: whatever the reasoning model replies to the task
// analysis, scope and precision calls, the pipeline either returns a
// package within budget whose tiers are valid, or a ReplyError carrying
// the raw reply; it never panics.
func FuzzStageReplies(f *testing.F) {
	fx := newFixture(f, shop...)
	f.Add(`{"intent": "x", "type": "bug", "symbols": ["echo_via_pager"], "files": ["shop/fmt.py"]}`,
		`{"files": [{"path": "shop/cli.py", "relevant": false, "reason": "r"}]}`,
		`{"symbols": [{"path": "shop/pager.py", "symbol": "_pager_contextmanager", "tier": "excluded"}]}`)
	f.Add("prose", "```json\n{\"files\": []}\n```", `{"symbols": [{"path": "x", "symbol": "y", "tier": "core"}]}`)
	f.Add(`{"intent": ""}`, `{"files": null}`, `[]`)
	stages, err := ParseStages("scope,precision")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, intent, scope, precision string) {
		j := &scripted{replies: map[string]string{"task_analysis": intent, "scope_judgment": scope, "precision_judgment": precision}}
		p := &Pipeline{KB: fx.kb, RepoID: fx.repoID, Root: fx.root, Judge: j.judge, PromptTokens: 4096}
		res, err := p.Run(context.Background(), "task-1", "pager `_pager_contextmanager` leaks", stages, budget)
		if err != nil {
			var re *ReplyError
			if !errors.As(err, &re) {
				t.Fatalf("an error without the raw reply: %v", err)
			}
			return
		}
		if res.Package.Tokens > budget.Available() {
			t.Fatalf("package of %d tokens for a budget of %d", res.Package.Tokens, budget.Available())
		}
		for path, syms := range res.Context.Details {
			for name, tier := range syms {
				switch tier {
				case DetailPrimary, DetailSupporting, DetailTypeContext, DetailExcluded:
				default:
					t.Fatalf("%s %s: tier %q", path, name, tier)
				}
			}
		}
	})
}

// TestRunFileShortenedSinceIndexing: a file cut short after 'cra index'
// gives no items for the definitions past its end, with empty text and
// line numbers it does not have; the package says to index again.
func TestRunFileShortenedSinceIndexing(t *testing.T) {
	var src strings.Builder
	for i := range 60 {
		fmt.Fprintf(&src, "def handler_%d(request):\n    \"\"\"Handle the pager request.\"\"\"\n    return request.pager_command\n\n\n", i)
	}
	f := newFixture(t, map[string]string{"app/handlers.py": src.String(), "app/other.py": "import os\n"})
	short := "# " + strings.Repeat("pager command rewritten ", 200) + "\ndef handler_0(request):\n    return request\n"
	if err := os.WriteFile(filepath.Join(f.root, "app/handlers.py"), []byte(short), 0o644); err != nil {
		t.Fatal(err)
	}
	p, _ := newPipeline(t, f, nil)
	stages, err := ParseStages("scope,precision")
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Run(context.Background(), "task-1", "the pager command of `handler_42` and `handler_57` is resolved twice", stages, budget)
	if err != nil {
		t.Fatal(err)
	}
	n := strings.Count(short, "\n")
	for _, pf := range res.Package.Files {
		for _, it := range pf.Items {
			if strings.TrimSpace(it.Text) == "" || it.EndLine > n {
				t.Errorf("%s: item %s %q lines %d-%d (the file has %d lines), text %q", pf.Path, it.Kind, it.Name, it.StartLine, it.EndLine, n, it.Text)
			}
		}
	}
	if !slices.Contains(res.Package.Trimmed, "app/handlers.py (changed since it was indexed: run 'cra index')") {
		t.Errorf("trimmed %q: want the file named as changed since indexing", res.Package.Trimmed)
	}
}
