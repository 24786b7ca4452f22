package retrieve

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
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
	if got := EstimateTokens("12345"); got != 2 {
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
	cands, err := NewRanker(f.db, f.repoID).Rank(ctx, q, 10)
	if err != nil {
		t.Fatal(err)
	}
	a := NewAssembler(f.db, f.repoID, f.root)
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
	if got := EstimateTokens(pkg.Render()); got > pkg.Budget || pkg.Tokens > pkg.Budget {
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
	cands, _ := NewRanker(f.db, f.repoID).Rank(ctx, q, 10)
	a := NewAssembler(f.db, f.repoID, f.root)
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

// TestAssembleNeverExceedsBudget is a property test: for random budgets
// and tasks the rendered package fits.
func TestAssembleNeverExceedsBudget(t *testing.T) {
	f := newFixture(t, bigShop()...)
	ctx := context.Background()
	rng := rand.New(rand.NewSource(1))
	tasks := []string{"`format_table` pads columns wrong", "pager leaks", "helper_3 helper_40 strip text", "README shop", "x"}
	a := NewAssembler(f.db, f.repoID, f.root)
	for i := 0; i < 200; i++ {
		q := Analyze(tasks[rng.Intn(len(tasks))])
		cands, err := NewRanker(f.db, f.repoID).Rank(ctx, q, 1+rng.Intn(10))
		if err != nil {
			t.Fatal(err)
		}
		window := 50 + rng.Intn(6000)
		b := Budget{ContextWindow: window, ReservedTokens: rng.Intn(window), SafetyMargin: rng.Float64() * 0.5}
		pkg, err := a.Assemble(ctx, q, cands, b)
		if err != nil {
			t.Fatal(err)
		}
		if got := EstimateTokens(pkg.Render()); got > b.Available() || pkg.Tokens > b.Available() {
			t.Fatalf("budget %+v (available %d): rendered %d tokens, counted %d", b, b.Available(), got, pkg.Tokens)
		}
	}
}

// TestDeterministic: the same task on the same index gives the same ranking
// and the same package every time, whatever Go's map order does.
func TestDeterministic(t *testing.T) {
	f := newFixture(t, bigShop()...)
	ctx := context.Background()
	var first string
	for i := 0; i < 30; i++ {
		q := Analyze("`format_table` pads columns wrong; helper strip text pager")
		cands, err := NewRanker(f.db, f.repoID).Rank(ctx, q, 20)
		if err != nil {
			t.Fatal(err)
		}
		pkg, err := NewAssembler(f.db, f.repoID, f.root).Assemble(ctx, q, cands, Budget{ContextWindow: 1500, ReservedTokens: 100})
		if err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprint(paths(cands)) + pkg.Render()
		if i == 0 {
			first = got
		} else if got != first {
			t.Fatalf("run %d differs from run 0", i)
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
