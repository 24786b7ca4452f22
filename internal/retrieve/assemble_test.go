package retrieve

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cra-dev/cra/internal/tokens"
)

func TestBudgetValidate(t *testing.T) {
	tests := []struct {
		b    Budget
		want string
	}{
		{Budget{ContextWindow: 8192, ReservedTokens: 1024}, ""},
		{Budget{ContextWindow: 0, ReservedTokens: 0}, "context window must be > 0"},
		{Budget{ContextWindow: 100, ReservedTokens: -1}, "reserved tokens must be >= 0"},
		{Budget{ContextWindow: 100, ReservedTokens: 100}, "must be < context window"},
		{Budget{ContextWindow: 100, ReservedTokens: 1, SafetyMargin: 1}, "safety margin"},
	}
	for _, tc := range tests {
		err := tc.b.Validate()
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.b, err, tc.want)
		}
	}
	if got := (Budget{ContextWindow: 1000, ReservedTokens: 200, SafetyMargin: 0.1}).Available(); got != 720 {
		t.Errorf("Available: got %d, want 720", got)
	}
	if got := tokens.Estimate("12345"); got != 2 {
		t.Errorf("EstimateTokens: got %d, want 2", got)
	}
}

// bigShop is shop with a long module, so budgets bite.
func bigShop() []map[string]string {
	var b strings.Builder
	b.WriteString("\"\"\"Formatting.\"\"\"\nimport textwrap\n\n\n")
	for i := 0; i < 60; i++ {
		fmt.Fprintf(&b, "def helper_%d(text):\n    \"\"\"Pad text %d.\"\"\"\n%s    return text\n\n\n", i, i, strings.Repeat("    text = text.strip()\n", 8))
	}
	b.WriteString("def format_table(rows):\n    \"\"\"Format rows as a table with columns.\"\"\"\n    return rows\n")
	commits := append([]map[string]string{}, shop...)
	commits[0] = map[string]string{}
	for k, v := range shop[0] {
		commits[0][k] = v
	}
	commits[0]["shop/fmt.py"] = b.String()
	return commits
}

func TestAssemblePriorities(t *testing.T) {
	f := newFixture(t, bigShop()...)
	ctx := context.Background()
	q := Analyze("`format_table` pads columns wrong")
	cands, err := NewRanker(f.kb, f.repoID).Rank(ctx, q, 10)
	if err != nil {
		t.Fatal(err)
	}
	a := NewAssembler(f.kb, f.repoID, f.root)
	pkg, err := a.Assemble(ctx, q, cands, Budget{ContextWindow: 600, ReservedTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkg.Files) == 0 || pkg.Files[0].Path != "shop/fmt.py" {
		t.Fatalf("files: got %v, want shop/fmt.py first", pkg.Files)
	}
	var primary *Item
	for i, it := range pkg.Files[0].Items {
		if it.Name == "format_table" && it.Kind == "symbol" {
			primary = &pkg.Files[0].Items[i]
		}
	}
	if primary == nil || primary.Detail != DetailPrimary || !strings.Contains(primary.Text, "def format_table(rows):") {
		t.Fatalf("format_table not in full as primary: %+v", pkg.Files[0].Items)
	}
	if len(pkg.Trimmed) == 0 {
		t.Error("a 500-token budget over a 60-function file trimmed nothing")
	}
	if got := tokens.Estimate(pkg.Render()); got > pkg.Budget || pkg.Tokens > pkg.Budget {
		t.Errorf("rendered %d tokens, counted %d, budget %d", got, pkg.Tokens, pkg.Budget)
	}
	// The whole big file does not fit; a bigger budget brings more of it in
	// order of priority: the primary stays.
	big, err := a.Assemble(ctx, q, cands, Budget{ContextWindow: 4000, ReservedTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	if big.Tokens <= pkg.Tokens || len(big.Trimmed) >= len(pkg.Trimmed) {
		t.Errorf("bigger budget: got %d tokens %d trimmed, want more than %d and fewer than %d", big.Tokens, len(big.Trimmed), pkg.Tokens, len(pkg.Trimmed))
	}
	md := big.Render()
	if !strings.Contains(md, "## shop/fmt.py") || !strings.Contains(md, "```python\ndef format_table(rows):") {
		t.Errorf("rendered markdown lacks the file heading or the fenced primary:\n%s", md[:min(600, len(md))])
	}
}

func TestAssembleDetailsOverride(t *testing.T) {
	f := newFixture(t, bigShop()...)
	ctx := context.Background()
	q := Analyze("`format_table` pads columns wrong")
	cands, _ := NewRanker(f.kb, f.repoID).Rank(ctx, q, 10)
	a := NewAssembler(f.kb, f.repoID, f.root)
	a.Details = map[string]map[string]string{"shop/fmt.py": {"format_table": DetailExcluded, "helper_7": DetailPrimary}}
	pkg, err := a.Assemble(ctx, q, cands, Budget{ContextWindow: 3000, ReservedTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, it := range pkg.Files[0].Items {
		if it.Kind == "symbol" {
			names = append(names, it.Name)
		}
	}
	if contains(names, "format_table") || !contains(names, "helper_7") {
		t.Errorf("symbols in full: got %v, want helper_7 and not format_table", names)
	}
}

// A small file goes in whole, unless the precision stage excluded one of
// its definitions: then it goes by its definitions, and nothing shows the
// excluded one.
func TestAssembleExcludedInSmallFile(t *testing.T) {
	f := newFixture(t, shop...)
	ctx := context.Background()
	q := Analyze("`_pager_contextmanager` and echo_via_pager print twice")
	cands, _ := NewRanker(f.kb, f.repoID).Rank(ctx, q, 10)
	a := NewAssembler(f.kb, f.repoID, f.root)
	b := Budget{ContextWindow: 4000, ReservedTokens: 100}
	items := func(pkg *Package) []Item {
		for _, pf := range pkg.Files {
			if pf.Path == "shop/pager.py" {
				return pf.Items
			}
		}
		t.Fatalf("shop/pager.py not in the package: %+v", pkg.Files)
		return nil
	}
	pkg, err := a.Assemble(ctx, q, cands, b)
	if err != nil {
		t.Fatal(err)
	}
	if it := items(pkg); len(it) != 1 || it[0].Kind != "file" {
		t.Fatalf("without verdicts: got %+v, want the whole file", it)
	}
	a.Details = map[string]map[string]string{"shop/pager.py": {"_pager_contextmanager": DetailExcluded}}
	if pkg, err = a.Assemble(ctx, q, cands, b); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, it := range items(pkg) {
		if it.Kind == "file" || strings.Contains(it.Text, "os.environ") || it.Name == "_pager_contextmanager" {
			t.Errorf("excluded _pager_contextmanager shows in %s %s lines %d-%d", it.Kind, it.Name, it.StartLine, it.EndLine)
		}
		names = append(names, it.Name)
	}
	if !contains(names, "echo_via_pager") {
		t.Errorf("items %v, want echo_via_pager kept", names)
	}
}

// A top file too big to go in whole by itself, but small next to the
// budget, is offered whole: with room it goes in as one item in place of
// its pieces. With WholeShare 0, a budget it does not fit a fourth of, or
// a definition the precision stage excluded, it goes by its pieces.
func TestAssembleWholeTopFile(t *testing.T) {
	var b strings.Builder
	b.WriteString("import decimal\n\n")
	for i := range 24 {
		fmt.Fprintf(&b, "def rule_%d(order):\n    \"\"\"Applies house rule %d to the order lines.\"\"\"\n    return [line for line in order.lines if line.code != %d]\n\n\n", i, i, i)
	}
	b.WriteString("def apply_discount(order, rate):\n    return order.total * (1 - rate)\n")
	f := newFixture(t, map[string]string{"shop/orders.py": b.String(), "shop/other.py": "def unrelated():\n    return 1\n"})
	ctx := context.Background()
	q := Analyze("`apply_discount` rounds the total wrong")
	cands, _ := NewRanker(f.kb, f.repoID).Rank(ctx, q, 10)
	if len(cands) == 0 || cands[0].Path != "shop/orders.py" {
		t.Fatalf("candidates %v, want shop/orders.py first", paths(cands))
	}
	size := tokens.Estimate(b.String())
	kinds := func(a *Assembler, avail int) []string {
		t.Helper()
		pkg, err := a.Assemble(ctx, q, cands, Budget{ContextWindow: avail + 100, ReservedTokens: 100})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, pf := range pkg.Files {
			if pf.Path == "shop/orders.py" {
				for _, it := range pf.Items {
					out = append(out, it.Kind)
				}
			}
		}
		return out
	}
	a := NewAssembler(f.kb, f.repoID, f.root)
	if size <= a.WholeFileTokens {
		t.Fatalf("fixture too small: %d tokens", size)
	}
	if got := kinds(a, 4*size+400); !slices.Equal(got, []string{"file"}) {
		t.Errorf("room for four of it: items %v, want the whole file alone", got)
	}
	if got := kinds(a, 2*size); slices.Contains(got, "file") || len(got) == 0 {
		t.Errorf("it fills half the budget: items %v, want its pieces", got)
	}
	a.WholeShare = 0
	if got := kinds(a, 4*size+400); slices.Contains(got, "file") || len(got) == 0 {
		t.Errorf("WholeShare 0: items %v, want its pieces", got)
	}
	a.WholeShare = 4
	a.Details = map[string]map[string]string{"shop/orders.py": {"rule_3": DetailExcluded}}
	if got := kinds(a, 4*size+400); slices.Contains(got, "file") || len(got) == 0 {
		t.Errorf("a definition excluded: items %v, want its pieces", got)
	}
}

// TestAssembleNeverExceedsBudget is a property test: for random budgets
// and tasks the rendered package fits.
func TestAssembleNeverExceedsBudget(t *testing.T) {
	// Also: the items of a file never overlap (a snippet or signature
	// inside an included body is dropped, a header stops short of the
	// first definition's comments).
	var commented strings.Builder
	commented.WriteString("\"\"\"Padding.\"\"\"\nimport textwrap\n\n")
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&commented, "# Helper %d pads text.\n# It strips first.\ndef helper_%d(text):\n%s    return textwrap.fill(text)\n\n\n", i, i, strings.Repeat("    text = text.strip()\n", 6))
	}
	var goPad strings.Builder
	goPad.WriteString("package pad\n\nimport \"strings\"\n\n// Pad pads text.\n// It trims first.\nfunc Pad(s string) string {\n\treturn strings.TrimSpace(s)\n}\n\n")
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&goPad, "// Helper%d wraps text.\nfunc Helper%d(s string) string {\n%s\treturn s\n}\n\n", i, i, strings.Repeat("\ts = strings.ToLower(s)\n", 5))
	}
	var pyTests, jsTests strings.Builder
	pyTests.WriteString("import pytest\nfrom pad import pad_text\n\n\n")
	jsTests.WriteString("const { padText } = require('../pad')\n\n")
	for g := 0; g < 6; g++ {
		fmt.Fprintf(&pyTests, "class TestPad%d:\n", g)
		fmt.Fprintf(&jsTests, "describe('padText %d', () => {\n", g)
		for i := 0; i < 8; i++ {
			fmt.Fprintf(&pyTests, "    def test_pad_%d_%d(self):\n        assert pad_text('%d') == '%d'\n\n", g, i, i, i)
			fmt.Fprintf(&jsTests, "  it('pads %d wide', () => {\n    expect(padText('%d')).toBe('%d')\n  })\n\n", i, i, i)
		}
		pyTests.WriteString("\n")
		jsTests.WriteString("})\n\n")
	}
	fixtures := []struct {
		f     *fixture
		tasks []string
	}{
		{newFixture(t, map[string]string{"pad.py": "def pad_text(s):\n    return s\n", "tests/test_pad.py": pyTests.String(),
			"pad.js": "exports.padText = (s) => s\n", "test/pad.test.js": jsTests.String()}),
			[]string{"pad_text pads 3 wide", "padText 2 wide", "pads wide text"}},
		{newFixture(t, bigShop()...), []string{"`format_table` pads columns wrong", "pager leaks", "helper_3 helper_40 strip text", "README shop", "x"}},
		{newFixture(t, map[string]string{"pad.py": commented.String(), "README.md": "pad\n"}), []string{"helper_7 pads text", "strip text first, then fill", "textwrap padding", "`helper_0` textwrap fill"}},
		{newFixture(t, map[string]string{"pad.go": goPad.String(), "go.mod": "module pad\n"}), []string{"Helper7 wraps text wrong", "Pad trims text", "lower case strings"}},
	}
	ctx := context.Background()
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 300; i++ {
		fx := fixtures[i%len(fixtures)]
		f := fx.f
		a := NewAssembler(f.kb, f.repoID, f.root)
		q := Analyze(fx.tasks[rng.Intn(len(fx.tasks))])
		cands, err := NewRanker(f.kb, f.repoID).Rank(ctx, q, 1+rng.Intn(10))
		if err != nil {
			t.Fatal(err)
		}
		window := 50 + rng.Intn(6000)
		b := Budget{ContextWindow: window, ReservedTokens: rng.Intn(window), SafetyMargin: rng.Float64() * 0.5}
		pkg, err := a.Assemble(ctx, q, cands, b)
		if err != nil {
			t.Fatal(err)
		}
		if got := tokens.Estimate(pkg.Render()); got > b.Available() || pkg.Tokens > b.Available() {
			t.Fatalf("budget %+v (available %d): rendered %d tokens, counted %d", b, b.Available(), got, pkg.Tokens)
		}
		for _, pf := range pkg.Files {
			src, err := os.ReadFile(filepath.Join(f.root, pf.Path))
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.SplitAfter(string(src), "\n")
			for _, it := range pf.Items {
				// What an item shows is its lines, verbatim (a signature
				// is the index's text of its line).
				if it.Kind != "signature" && it.Text != strings.Join(lines[it.StartLine-1:it.EndLine], "") {
					t.Fatalf("%q, budget %d: %s %s %d-%d shows %q, not its lines", q.Text, b.Available(), pf.Path,
						it.Kind, it.StartLine, it.EndLine, it.Text)
				}
			}
			for j := 1; j < len(pf.Items); j++ {
				if prev, it := pf.Items[j-1], pf.Items[j]; it.StartLine <= prev.EndLine {
					t.Fatalf("%q, budget %d: %s items overlap: %s %d-%d and %s %d-%d", q.Text, b.Available(), pf.Path,
						prev.Kind, prev.StartLine, prev.EndLine, it.Kind, it.StartLine, it.EndLine)
				}
			}
		}
	}
}

// TestDeterministic: the same task on the same index gives the same ranking
// and the same package every time, whatever Go's map order does, with
// the default weights, with both demotions on, and with the history
// signal on (the fixture's commits are all "commit x": every one ties
// with every other for a task that says "commit").
func TestDeterministic(t *testing.T) {
	f := newFixture(t, bigShop()...)
	ctx := context.Background()
	demoting := DefaultWeights
	demoting.TestDemotion, demoting.DeclDemotion = 0.3, 0.5
	history := DefaultWeights
	history.History = 0.6
	var firsts [3]string
	for i := 0; i < 30; i++ {
		q := Analyze("`format_table` pads columns wrong; helper strip text pager")
		rk := NewRanker(f.kb, f.repoID)
		switch i % 3 {
		case 1:
			rk.Weights = demoting
		case 2:
			rk.Weights = history
			q = Analyze("`format_table` pads columns wrong since the last commit; helper strip text pager")
		}
		cands, err := rk.Rank(ctx, q, 20)
		if err != nil {
			t.Fatal(err)
		}
		if i == 2 && !slices.ContainsFunc(cands, func(c Candidate) bool { return c.Signals["history"] > 0 }) {
			t.Fatalf("history on: no candidate has a history score: %v", cands)
		}
		pkg, err := NewAssembler(f.kb, f.repoID, f.root).Assemble(ctx, q, cands, Budget{ContextWindow: 1500, ReservedTokens: 100})
		if err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprint(paths(cands)) + pkg.Render()
		if i < 3 {
			firsts[i] = got
		} else if got != firsts[i%3] {
			t.Fatalf("run %d differs from run %d", i, i%3)
		}
	}
}

// TestSumWeightsOrder: with values where float addition order matters, the
// sum is the same every time (a map-order sum gives 0 or 1 by chance).
func TestSumWeightsOrder(t *testing.T) {
	m := map[string]float64{"a": 1e16, "b": 1, "c": -1e16, "d": 1, "e": 3, "f": -3}
	want := sumWeights(m)
	for i := 0; i < 200; i++ {
		if got := sumWeights(m); got != want {
			t.Fatalf("run %d: got %v, want %v", i, got, want)
		}
	}
}

func TestSnippets(t *testing.T) {
	lines := make([]string, 40)
	for i := range lines {
		lines[i] = fmt.Sprintf("    x = step(%d)\n", i+1)
	}
	lines[9] = "    rotate(archive)\n"           // line 10: the rare term
	lines[12] = "    archive.close()\n"          // line 13: close enough to merge
	lines[29] = "    log.info(archive)\n"        // line 30: apart
	lines[34] = "    log.debug('common only')\n" // line 35: only a common term
	q := map[string]float64{"rotate": 4, "archive": 3, "log": 1}
	got := snippetsOf(lines, q, nil)
	want := []snippet{{start: 8, end: 15}, {start: 28, end: 32}}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want spans %+v", got, want)
	}
	for i := range want {
		if got[i].start != want[i].start || got[i].end != want[i].end {
			t.Errorf("snippet %d: got %d-%d, want %d-%d", i, got[i].start, got[i].end, want[i].start, want[i].end)
		}
	}
	if !(got[0].rel > got[1].rel) {
		t.Errorf("rel: got %v then %v, want the snippet with both rare terms first", got[0].rel, got[1].rel)
	}
	if snippets(lines, fileTerms{}, nil, nil) != nil || snippets(lines, scanTerms(lines, nil), newTaskTerms(nil), nil) != nil {
		t.Error("no task terms: want no snippets")
	}
	// A term on most lines locates nothing.
	logs := []string{"log\n", "log\n", "log\n", "log\n", "log x\n"}
	if got := snippetsOf(logs, map[string]float64{"log": 1}, nil); got != nil {
		t.Errorf("a term on every line: got %+v, want no snippets", got)
	}
	// Many hits: the best maxSnippets survive, in line order.
	lines = make([]string, 120)
	for i := range lines {
		lines[i] = "\n"
		if i%12 == 0 {
			lines[i] = "rotate\n" // on 10 of 120 lines: still a locator
		}
	}
	lines[102] = "rotate archive\n"
	many := snippetsOf(lines, q, nil)
	if len(many) != maxSnippets {
		t.Fatalf("got %d snippets, want %d", len(many), maxSnippets)
	}
	if many[len(many)-1].start != 101 {
		t.Errorf("got %+v, want the two-term snippet at 101 kept", many)
	}
	for i := 1; i < len(many); i++ {
		if many[i].start <= many[i-1].start {
			t.Errorf("not in line order: %+v", many)
		}
	}
}

func TestAssembleSnippetInsideLongDefinition(t *testing.T) {
	// One function far bigger than the budget, with the line the task is
	// about in its middle: the package shows that line, not nothing.
	var b strings.Builder
	b.WriteString("def run(jobs):\n    \"\"\"Run every job.\"\"\"\n")
	for i := 0; i < 300; i++ {
		if i == 150 {
			b.WriteString("    jobs.requeue_stalled(timeout=heartbeat_interval)\n")
			continue
		}
		fmt.Fprintf(&b, "    jobs.step(%d)\n", i)
	}
	f := newFixture(t, map[string]string{"worker.py": b.String(), "other.py": "def other():\n    return 1\n"})
	pkg := f.assemble(t, "stalled jobs are never requeued after the heartbeat interval", Budget{ContextWindow: 900, ReservedTokens: 100})
	var snip, tail *Item
	for _, pf := range pkg.Files {
		for i, it := range pf.Items {
			switch {
			case pf.Path != "worker.py" || it.Kind != "snippet":
			case it.Name == "end of file":
				tail = &pf.Items[i]
			default:
				snip = &pf.Items[i]
			}
		}
	}
	// The file's last lines come along as the anchor for an appended
	// definition.
	if tail == nil || tail.StartLine != 300 || tail.EndLine != 302 || !strings.HasSuffix(tail.Text, "jobs.step(299)\n") {
		t.Errorf("end of file: got %+v, want lines 300-302 of worker.py", tail)
	}
	if snip == nil || snip.StartLine > 153 || snip.EndLine < 153 || !strings.Contains(snip.Text, "requeue_stalled") {
		t.Fatalf("got %+v, want a snippet of worker.py around line 153", pkg.Files)
	}
	if got := tokens.Estimate(pkg.Render()); got > pkg.Budget {
		t.Errorf("rendered %d tokens over a budget of %d", got, pkg.Budget)
	}
	if !strings.Contains(pkg.Render(), "lines 151-155: snippet") {
		t.Errorf("render lacks the snippet caption:\n%s", pkg.Render())
	}
}

func TestOverlapsAndReplaces(t *testing.T) {
	body := Item{Kind: "symbol", StartLine: 10, EndLine: 20}
	sig := Item{Kind: "signature", StartLine: 10, EndLine: 10}
	snip := Item{Kind: "snippet", StartLine: 8, EndLine: 12}
	inner := Item{Kind: "snippet", StartLine: 12, EndLine: 16}
	tests := []struct {
		name string
		have []Item
		it   Item
		want bool
	}{
		{"snippet inside an included body", []Item{body}, inner, true},
		{"signature inside an included body", []Item{body}, sig, true},
		{"body over an included snippet", []Item{inner}, body, false},
		{"snippet over an included signature", []Item{sig}, snip, false},
		{"signature under an included snippet", []Item{snip}, sig, true},
		{"overlapping snippets", []Item{snip}, inner, true},
		{"apart", []Item{body}, Item{Kind: "snippet", StartLine: 30, EndLine: 34}, false},
	}
	for _, tc := range tests {
		if got := overlaps(tc.have, tc.it); got != tc.want {
			t.Errorf("%s: overlaps = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !replaces(body, inner) || !replaces(body, sig) || !replaces(snip, sig) {
		t.Error("a body replaces the snippets and signatures inside it, a snippet the signatures")
	}
	if replaces(body, snip) || replaces(inner, body) || replaces(sig, sig) {
		t.Error("an item partly outside, or a bigger one, is not replaced")
	}
}

func TestAssembleSignatureLines(t *testing.T) {
	// Definitions with comments above them: a signature item stands at
	// the definition's own line, not at its comment's.
	var b strings.Builder
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "# Helper %d pads text.\n# It strips first.\ndef helper_%d(text):\n%s    return text\n\n\n", i, i, strings.Repeat("    text = text.strip()\n", 6))
	}
	src := b.String()
	f := newFixture(t, map[string]string{"pad.py": src})
	pkg := f.assemble(t, "`helper_7` pads text wrong", Budget{ContextWindow: 900, ReservedTokens: 100})
	lines := strings.Split(src, "\n")
	sigs := 0
	for _, pf := range pkg.Files {
		for _, it := range pf.Items {
			if it.Kind != "signature" {
				continue
			}
			sigs++
			if it.StartLine != it.EndLine || strings.TrimSpace(it.Text) != strings.TrimSpace(lines[it.StartLine-1]) {
				t.Errorf("signature %s at %d-%d is %q; line %d is %q", it.Name, it.StartLine, it.EndLine, it.Text, it.StartLine, lines[it.StartLine-1])
			}
		}
	}
	if sigs == 0 {
		t.Fatalf("no signatures in the package (the test no longer tests anything): %+v", pkg.Files)
	}
}

func TestSnippetsStayInsideDefinitions(t *testing.T) {
	lines := make([]string, 30)
	for i := range lines {
		lines[i] = "x\n"
	}
	lines[9] = "rotate\n"  // line 10: last line of def 3-10
	lines[11] = "rotate\n" // line 12: first line of def 12-20
	lines[24] = "rotate\n" // line 25: between defs 12-20 and 27-30
	defs := [][2]int{{3, 10}, {12, 20}, {27, 30}}
	got := snippetsOf(lines, map[string]float64{"rotate": 1}, defs)
	want := [][2]int{{8, 10}, {12, 14}, {23, 26}}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want spans %v", got, want)
	}
	for i, w := range want {
		if got[i].start != w[0] || got[i].end != w[1] {
			t.Errorf("snippet %d: got %d-%d, want %d-%d", i, got[i].start, got[i].end, w[0], w[1])
		}
	}
	// Nested definitions: the innermost holds the snippet.
	if lo, hi := innermost([][2]int{{1, 50}, {10, 20}}, 15, 60); lo != 10 || hi != 20 {
		t.Errorf("innermost: got %d-%d, want 10-20", lo, hi)
	}
}

func TestTaskTermsMatch(t *testing.T) {
	tt := newTaskTerms(map[string]float64{"allow": 2, "collections": 3, "bind": 1})
	tests := []struct {
		term, want string
	}{
		{"allow", "allow"},
		{"allowed", "allow"},          // five letters, three more
		{"collection", "collections"}, // the task's plural
		{"binding", ""},               // "bind" is too short to match by prefix
		{"allowance", ""},             // four letters more: another word
		{"collect", ""},               // four letters shorter
		{"header", ""},
	}
	for _, tc := range tests {
		got, ok := tt.match(tc.term)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("match(%q) = %q, %v; want %q", tc.term, got, ok, tc.want)
		}
	}
	// Snippets find the inflected form.
	lines := []string{"a\n", "b\n", "if handle_method_not_allowed:\n", "c\n", "d\n", "e\n", "f\n"}
	got := snippetsOf(lines, map[string]float64{"allow": 1}, nil)
	if len(got) != 1 || got[0].start != 1 || got[0].end != 5 {
		t.Errorf("snippets: got %+v, want one at 1-5 around the line saying 'allowed'", got)
	}
}

// snippetsOf scans lines for the terms w and finds their snippets.
func snippetsOf(lines []string, w map[string]float64, defs [][2]int) []snippet {
	tt := newTaskTerms(w)
	return snippets(lines, scanTerms(lines, tt), tt, defs)
}

// A definition the precision stage linked weighs at least as supporting,
// and never lowers another definition of the same name.
func TestAssembleLinkedNeverLowers(t *testing.T) {
	f := newFixture(t, map[string]string{"go.mod": "module example.com/m\n", "store.go": `package m

type Cart struct{ items []int }

func (c *Cart) Reset() {
	c.items = nil
}

type Invoice struct{ lines, sum []int }

func (i *Invoice) Reset() {
	i.lines = nil
	i.sum = nil
}

func Unrelated() int {
	return 1
}
`})
	ctx := context.Background()
	q := Analyze("the sum stays after store.go:13")
	cands, _ := NewRanker(f.kb, f.repoID).Rank(ctx, q, 10)
	a := NewAssembler(f.kb, f.repoID, f.root)
	a.WholeFileTokens, a.WholeShare = 0, 0
	a.Linked = map[string]map[string]bool{"store.go": {"Reset": true, "Unrelated": true}}
	pkg, err := a.Assemble(ctx, q, cands, Budget{ContextWindow: 4000, ReservedTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	details := map[int]string{}
	for _, it := range pkg.Files[0].Items {
		if it.Kind == "symbol" {
			details[it.StartLine] = it.Detail
		}
	}
	if details[11] != DetailPrimary || details[5] != DetailSupporting || details[16] != DetailSupporting {
		t.Errorf("symbol details by line: got %v, want Invoice.Reset (11) primary, Cart.Reset (5) and Unrelated (16) supporting", details)
	}
}

func TestAssembleDocBlockNotRelevance(t *testing.T) {
	// A JSDoc block above a method is the API's documentation: words it
	// repeats from the task do not make the method the one to change. The
	// method whose code holds them is.
	var b strings.Builder
	b.WriteString("export class Context {\n")
	b.WriteString("  /**\n   * `.body()` returns the response. Set headers with `.header()`: the\n" +
		"   * headers merge with the prepared ones on creation of the response.\n" +
		"   * @example\n   * c.body('hi', 200, { 'X-Merge': 'headers' })\n   */\n" +
		"  body(data) {\n    return this.respond(data)\n  }\n\n")
	b.WriteString("  respond(data) {\n    const headers = this.prepared ? mergeHeaders(this.prepared) : newHeaders()\n" +
		"    return new Response(data, { headers })\n  }\n\n")
	for i := range 80 {
		fmt.Fprintf(&b, "  step%d(value) {\n    return this.apply(value, %d)\n  }\n\n", i, i)
	}
	b.WriteString("}\n")
	f := newFixture(t, map[string]string{"src/context.ts": b.String(), "src/other.ts": "export const x = 1\n"})
	ctx := context.Background()
	q := Analyze("skip Headers creation when there are no headers to merge")
	cands, _ := NewRanker(f.kb, f.repoID).Rank(ctx, q, 10)
	a := NewAssembler(f.kb, f.repoID, f.root)
	a.WholeShare = 0 // its pieces, not the whole file
	pkg, err := a.Assemble(ctx, q, cands, Budget{ContextWindow: 8192, ReservedTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	details := map[string]string{}
	for _, pf := range pkg.Files {
		for _, it := range pf.Items {
			if pf.Path == "src/context.ts" && it.Kind == "symbol" {
				details[it.Name] = it.Detail
			}
		}
	}
	if details["respond"] == DetailTypeContext || details["body"] != DetailTypeContext {
		t.Errorf("respond %q, body %q: want respond above type context, body (relevant by its doc block only) at type context",
			details["respond"], details["body"])
	}
}

func TestUnshown(t *testing.T) {
	body := Item{Kind: "symbol", StartLine: 10, EndLine: 20}
	snip := func(start, end int) Item {
		var b strings.Builder
		for n := start; n <= end; n++ {
			if n == 21 {
				b.WriteString("\n") // a blank line between two tests
				continue
			}
			fmt.Fprintf(&b, "line %d\n", n)
		}
		return Item{Kind: "snippet", StartLine: start, EndLine: end, Text: b.String()}
	}
	tests := []struct {
		name       string
		have       []Item
		it         Item
		start, end int
		text       string
		clipped    bool
	}{
		{"after a body: the lines below it", []Item{body}, snip(20, 22), 21, 22, "\nline 22\n", true},
		{"before a body: the lines above it", []Item{body}, snip(7, 11), 7, 9, "line 7\nline 8\nline 9\n", true},
		{"inside a body: left to overlaps", []Item{body}, snip(12, 14), 12, 14, "line 12\nline 13\nline 14\n", false},
		{"next to a signature: kept whole", []Item{{Kind: "signature", StartLine: 20, EndLine: 20}}, snip(20, 22), 20, 22, "line 20\n\nline 22\n", false},
		{"apart", []Item{body}, snip(30, 31), 30, 31, "line 30\nline 31\n", false},
	}
	for _, tc := range tests {
		got, clipped := unshown(tc.have, tc.it)
		if got.StartLine != tc.start || got.EndLine != tc.end || got.Text != tc.text || clipped != tc.clipped {
			t.Errorf("%s: got %d-%d %q (clipped %v), want %d-%d %q (clipped %v)", tc.name,
				got.StartLine, got.EndLine, got.Text, clipped, tc.start, tc.end, tc.text, tc.clipped)
		}
		if clipped && got.Tokens != tokens.Estimate(got.Text) {
			t.Errorf("%s: tokens %d, want the clipped text's %d", tc.name, got.Tokens, tokens.Estimate(got.Text))
		}
	}
}

func TestAssembleGapAfterIncludedTest(t *testing.T) {
	// The place after a test shown in full is where its sibling goes: the
	// gap snippet that starts on the test's last line shows the lines
	// below it instead of being dropped as already shown.
	var b strings.Builder
	b.WriteString("import pytest\n\n\n")
	for i := range 120 {
		fmt.Fprintf(&b, "def test_case_%d():\n    assert run(%d) == %d\n\n\n", i, i, i)
	}
	b.WriteString("def test_wildcard_match():\n    assert match_wildcard('*') == 'all'\n    assert match_wildcard('a*') == 'a'\n\n\n")
	b.WriteString("def test_after():\n" + strings.Repeat("    assert run(99) == 99\n", 60)) // too long to show in full
	src := b.String()
	lines := splitLines(src)
	after := 0
	for i, l := range lines {
		if strings.HasPrefix(l, "def test_after") {
			after = i + 1
		}
	}
	f := newFixture(t, map[string]string{"tests/test_match.py": src, "pkg/other.py": "def unrelated():\n    return 1\n"})
	ctx := context.Background()
	q := Analyze("match_wildcard returns the wrong value for a wildcard")
	cands, _ := NewRanker(f.kb, f.repoID).Rank(ctx, q, 10)
	a := NewAssembler(f.kb, f.repoID, f.root)
	a.WholeShare = 0
	pkg, err := a.Assemble(ctx, q, cands, Budget{ContextWindow: 500, ReservedTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	var shown []string
	body, gap := false, false
	for _, pf := range pkg.Files {
		if pf.Path != "tests/test_match.py" {
			continue
		}
		for _, it := range pf.Items {
			shown = append(shown, fmt.Sprintf("%s %s %d-%d", it.Kind, it.Name, it.StartLine, it.EndLine))
			body = body || it.Kind == "symbol" && it.Name == "test_wildcard_match"
			gap = gap || it.Kind == "snippet" && it.StartLine < after && it.EndLine >= after-1
		}
	}
	if !body || !gap {
		t.Errorf("items %v: want test_wildcard_match in full and the lines after it up to line %d", shown, after)
	}
}

// TestAssembleRequiresInHeader: the CommonJS requires that open a file are
// variables to the index; they go in the file's header, one item, so a
// task about the modules a file uses sees all of them.
func TestAssembleRequiresInHeader(t *testing.T) {
	var b strings.Builder
	b.WriteString("/*!\n * shop\n */\n\n'use strict';\n\n")
	for _, m := range []string{"content-type", "etag", "mime-types", "proxy-addr", "qs", "querystring"} {
		fmt.Fprintf(&b, "var %s = require('%s');\n", strings.ReplaceAll(m, "-", ""), m)
	}
	b.WriteString("const { Buffer } = require('buffer');\n\n")
	for i := range 60 {
		fmt.Fprintf(&b, "exports.step%d = function step%d (value) {\n  return Buffer.from(value + %d)\n}\n\n", i, i, i)
	}
	f := newFixture(t, map[string]string{"lib/utils.js": b.String(), "lib/other.js": "exports.x = 1\n"})
	ctx := context.Background()
	q := Analyze("use the node: protocol for the builtin module buffer")
	cands, _ := NewRanker(f.kb, f.repoID).Rank(ctx, q, 10)
	a := NewAssembler(f.kb, f.repoID, f.root)
	a.WholeShare = 0
	pkg, err := a.Assemble(ctx, q, cands, Budget{ContextWindow: 4096, ReservedTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, pf := range pkg.Files {
		for _, it := range pf.Items {
			if pf.Path == "lib/utils.js" && it.StartLine <= 13 {
				got = append(got, fmt.Sprintf("%s %d-%d", it.Kind, it.StartLine, it.EndLine))
			}
		}
	}
	if want := []string{"header 1-14"}; !slices.Equal(got, want) {
		t.Errorf("items in the first 13 lines of lib/utils.js: got %v, want %v", got, want)
	}
}

// TestRenderFileHeaderWholeCharacters: a long reason is cut at a whole
// character, so a package that names CJK paths stays valid UTF-8.
func TestRenderFileHeaderWholeCharacters(t *testing.T) {
	why := "linked by imports to ./src/" + strings.Repeat("界面组件/", 30) + "分页器实现.ts" // 27 bytes, then 3-byte characters
	h := renderFileHeader(PackageFile{Path: "src/分页器.ts", Tier: 2, Reasons: []string{why}})
	if !utf8.ValidString(h) || !strings.Contains(h, "…") {
		t.Errorf("header %q: want valid UTF-8, cut with …", h)
	}
}
