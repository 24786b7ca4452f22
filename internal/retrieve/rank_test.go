package retrieve

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestRankSignals(t *testing.T) {
	f := newFixture(t, shop...)
	tests := []struct {
		name, task string
		first      string
		tier       int
		alsoTop3   string
	}{
		{"symbol in backticks", "Resolve the pager command once, in `_pager_contextmanager`", "shop/pager.py", TierSeed, "shop/cli.py"},
		{"path mention", "The entry point in shop/cli.py ignores argv", "shop/cli.py", TierSeed, "shop/pager.py"},
		{"module mention", "shop.fmt produces ragged columns", "shop/fmt.py", TierSeed, ""},
		{"words only", "format rows as a table with columns", "shop/fmt.py", TierSearch, ""},
		{"traceback frame", "File \"/home/u/src/shop/fmt.py\", line 9, in format_table", "shop/fmt.py", TierSeed, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := f.rank(t, tc.task)
			if len(c) == 0 || c[0].Path != tc.first || c[0].Tier != tc.tier {
				t.Fatalf("got %v (first tier %v), want %s first with tier %d", paths(c), tierOrNone(c), tc.first, tc.tier)
			}
			if tc.alsoTop3 != "" && !contains(paths(c)[:min(3, len(c))], tc.alsoTop3) {
				t.Errorf("top 3: got %v, want %s among them", paths(c), tc.alsoTop3)
			}
			for i := 1; i < len(c); i++ {
				if c[i].Score > c[i-1].Score && c[i-1].Tier != TierPlan {
					t.Fatalf("not sorted by score: %v", c)
				}
			}
		})
	}
}

func TestRankPropagation(t *testing.T) {
	f := newFixture(t, shop...)
	c := f.rank(t, "`_pager_contextmanager` leaks")
	byPath := candidatesByPath(c)
	cli, ok := byPath["shop/cli.py"]
	if !ok {
		t.Fatalf("cli.py, which imports and co-changes with pager.py, is not a candidate: %v", paths(c))
	}
	if cli.Signals["dep"] == 0 || cli.Signals["cochange"] == 0 {
		t.Errorf("cli.py signals: got %v, want dep and cochange", cli.Signals)
	}
	if byPath["shop/fmt.py"].Score >= cli.Score {
		t.Errorf("unrelated fmt.py (%v) ranks with cli.py (%v)", byPath["shop/fmt.py"].Score, cli.Score)
	}
}

func TestRankEmptyAndUnknown(t *testing.T) {
	f := newFixture(t, shop...)
	for _, task := range []string{"", "zzqx qqzz"} {
		c, err := NewRanker(f.kb, f.repoID).Rank(context.Background(), Analyze(task), 10)
		if err != nil || len(c) != 0 {
			t.Errorf("task %q: got %v, %v, want no candidates", task, paths(c), err)
		}
	}
}

func TestRankPlanFilesFirst(t *testing.T) {
	f := newFixture(t, shop...)
	q := Analyze("`_pager_contextmanager` leaks")
	q.PlanFiles = []string{"shop/fmt.py"}
	c, err := NewRanker(f.kb, f.repoID).Rank(context.Background(), q, 10)
	if err != nil {
		t.Fatal(err)
	}
	if c[0].Path != "shop/fmt.py" || c[0].Tier != TierPlan {
		t.Errorf("got %v, want the plan file first at tier 0", paths(c))
	}
}

func tierOrNone(c []Candidate) any {
	if len(c) == 0 {
		return "none"
	}
	return c[0].Tier
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestSingularAndNames(t *testing.T) {
	for in, want := range map[string]string{"defaults": "default", "types": "type", "entries": "entry", "class": "class", "status": "status", "analysis": "analysis", "utils": "util", "go": "go"} {
		if got := singular(in); got != want {
			t.Errorf("singular(%q): got %q, want %q", in, got, want)
		}
	}
	f := newFixture(t, map[string]string{
		"pkg/options.py":       "def parse(x):\n    return x\n",
		"tests/test_option.py": "def test_it():\n    pass\n",
		"pkg/other.py":         "def unrelated():\n    pass\n",
	})
	c := f.rank(t, "an option is parsed twice")
	if len(c) < 2 || !contains(paths(c)[:2], "pkg/options.py") || !contains(paths(c)[:2], "tests/test_option.py") {
		t.Errorf("got %v, want options.py and test_option.py on top by name", paths(c))
	}
}

// JS projects name tests after the API they test (test/res.send.js): a
// dotted name in the task, as a call or a commit scope, points at the file
// named after it more than at its siblings that share the first part.
func TestRankDottedNames(t *testing.T) {
	for in, want := range map[string][2]string{
		"res.send.js": {"res", "res.send"}, "types.test.ts": {"types", "types"}, "express.json.spec.js": {"express", "express.json"},
		"test_types.py": {"types", "types"}, "types_test.go": {"types", "types"}, "index.d.ts": {"index", "index"},
	} {
		if got := [2]string{testStem(in), fileStem(in)}; got != want {
			t.Errorf("testStem, fileStem(%q): got %q, want %q", in, got, want)
		}
	}
	f := newFixture(t, map[string]string{
		"lib/response.js":      "res.send = function send(body) { return this.end(body) }\nres.json = function json(obj) { return this.send(obj) }\n",
		"test/res.send.js":     "describe('res', function () { it('should send', function () { request(app).get('/') }) })\n",
		"test/res.json.js":     "describe('res', function () { it('should send json', function () { request(app).get('/') }) })\n",
		"test/res.location.js": "describe('res', function () { it('should set location', function () { request(app).get('/') }) })\n",
	})
	for _, task := range []string{"fix(res.send): keep the length header", "keep the length header in res.send()"} {
		names := map[string]float64{}
		for _, c := range f.rank(t, task) {
			names[c.Path] = c.Signals["name"]
		}
		if names["test/res.send.js"] != 1 || names["test/res.json.js"] >= 1 || names["test/res.location.js"] >= 1 || names["lib/response.js"] != 0 {
			t.Errorf("%q: name signals %v, want 1 for test/res.send.js, less for its siblings", task, names)
		}
	}
}

func TestRankArea(t *testing.T) {
	f := newFixture(t, map[string]string{
		"binding/form_mapping.go": "package binding\n\nfunc mapForm(ptr any, values map[string][]string) error { return setDefault(ptr) }\n",
		"binding/json.go":         "package binding\n\nfunc decodeJSON(ptr any) error { return nil }\n",
		"recovery.go":             "package gin\n\nfunc stack() []byte { return nil }\n",
		"defaults.go":             "package gin\n\nfunc setDefault(ptr any) error { return nil }\n",
	})
	areas := func(task string) map[string]float64 {
		out := map[string]float64{}
		for _, c := range f.rank(t, task) {
			out[c.Path] = c.Signals["area"]
		}
		return out
	}
	// A scope word names a file's word or a directory; a broader match
	// points more weakly at each file.
	got := areas("feat(form): support default values")
	if got["binding/form_mapping.go"] != 1 || got["binding/json.go"] != 0 || got["defaults.go"] != 0 {
		t.Errorf("feat(form): area signals %v, want 1 for form_mapping.go alone", got)
	}
	got = areas("fix(binding): support default values")
	if w := 1 / math.Sqrt(2); got["binding/form_mapping.go"] != w || got["binding/json.go"] != w || got["defaults.go"] != 0 {
		t.Errorf("fix(binding): area signals %v, want 1/√2 for both binding files", got)
	}
	// Inflected: "recover" is recovery.go.
	if got = areas("perf(recover): support default values"); got["recovery.go"] != 1 {
		t.Errorf("perf(recover): area signals %v, want recovery.go", got)
	}
	// A scope with separators names a file or directory whole.
	if got = areas("fix(form_mapping): support default values"); got["binding/form_mapping.go"] != 1 {
		t.Errorf("fix(form_mapping): area signals %v, want form_mapping.go", got)
	}
	if got = areas("fix(form-mapping): support default values"); got["binding/form_mapping.go"] != 1 {
		t.Errorf("fix(form-mapping): area signals %v, want form_mapping.go", got)
	}
	c := f.rank(t, "feat(form): support default values")
	if len(c) == 0 || c[0].Path != "binding/form_mapping.go" {
		t.Errorf("feat(form): got %v, want form_mapping.go first", paths(c))
	}
	if got = areas("support default values"); got["binding/form_mapping.go"] != 0 {
		t.Errorf("no scope: area signals %v, want none", got)
	}
}

// Scope Tier 4: promoted enrichment brings in files the task's words and
// the code's links miss.
func TestRankMetadata(t *testing.T) {
	files := map[string]string{
		"shop/pager.py": "def _pager_contextmanager(color=None):\n    return color\n",
		"shop/tty.py":   "def isatty(stream):\n    return stream.isatty()\n",
		"shop/db.py":    "def connect(url):\n    return url\n",
		"shop/money.py": "def total(items):\n    return sum(items)\n",
	}
	f := newFixture(t, files)
	// Not promoted: no metadata signal, the tier is never 4.
	for _, c := range f.rank(t, "`_pager_contextmanager` leaks the scrollback") {
		if c.Signals["metadata"] != 0 || c.Tier == TierMetadata {
			t.Fatalf("no enrichment, got %s with %v (tier %d)", c.Path, c.Signals, c.Tier)
		}
	}
	f.describe(t, map[string][4]string{
		"shop/pager.py": {"shop.pager", "terminal", `["paging"]`, "Pages long output."},
		"shop/tty.py":   {"shop.tty", "terminal", `["tty detection"]`, "Detects a terminal."},
		"shop/db.py":    {"shop.db", "storage", `["connections"]`, "Opens database connections."},
		"shop/money.py": {"shop.money", "billing", `["scrollback of invoices"]`, "Sums invoices."},
	})
	c := candidatesByPath(f.rank(t, "`_pager_contextmanager` leaks the scrollback"))
	// The seed's domain brings tty.py in; the task's word in a description
	// brings money.py; db.py shares neither.
	if tty := c["shop/tty.py"]; tty.Tier != TierMetadata || !contains(tty.Reasons, "same domain as shop/pager.py") {
		t.Errorf("tty.py: got tier %d, reasons %v; want tier 4, same domain as pager.py", tty.Tier, tty.Reasons)
	}
	if money := c["shop/money.py"]; money.Tier != TierMetadata || !contains(money.Reasons, "its description shares the task's words") {
		t.Errorf("money.py: got tier %d, reasons %v; want tier 4 by its description", money.Tier, money.Reasons)
	}
	if db, ok := c["shop/db.py"]; ok && db.Signals["metadata"] != 0 {
		t.Errorf("db.py: got metadata signal %v, want none", db.Signals["metadata"])
	}
	if pager := c["shop/pager.py"]; pager.Tier != TierSeed || pager.Score <= c["shop/tty.py"].Score {
		t.Errorf("pager.py (%v, tier %d) should lead tty.py (%v) as the seed", pager.Score, pager.Tier, c["shop/tty.py"].Score)
	}
}

// Every middleware has its index.ts and index.test.ts: a name that common
// pairs only the files beside each other.
func TestRankTestPairingBeside(t *testing.T) {
	files := map[string]string{}
	for _, m := range []string{"cors", "etag", "jwt", "logger", "timing", "compress", "cache"} {
		files["src/"+m+"/index.ts"] = "export const " + m + " = (options: object) => options\n"
		files["src/"+m+"/index.test.ts"] = "describe('" + m + "', () => { it('works', () => {}) })\n"
	}
	files["src/etag/index.ts"] = "export const etag = (weakComparison: boolean) => weakComparison\n"
	f := newFixture(t, files)
	c := candidatesByPath(f.rank(t, "keep `weakComparison` when the body streams"))
	if got := c["src/etag/index.test.ts"]; got.Signals["test"] == 0 || !contains(got.Reasons, "test of src/etag/index.ts") {
		t.Errorf("src/etag/index.test.ts: got %+v, want paired with src/etag/index.ts", got)
	}
	for p, got := range c {
		if p != "src/etag/index.test.ts" && got.Signals["test"] != 0 {
			t.Errorf("%s: got test signal %v, want none", p, got.Signals["test"])
		}
	}
}

func TestRankTestPairingAndProse(t *testing.T) {
	f := newFixture(t, map[string]string{
		"go.mod":           "module example.com/m\n",
		"mode.go":          "package m\n\n// SetMode sets the mode.\nfunc SetMode(value string) { mode = value }\n\nvar mode string\n",
		"mode_test.go":     "package m\n\nimport \"testing\"\n\nfunc TestIt(t *testing.T) {}\n",
		"sub/mode_test.go": "package sub\n\nimport \"testing\"\n\nfunc TestOther(t *testing.T) {}\n",
		"README.md":        "# m\n\nSetMode ignores an empty value. SetMode, value, empty, ignores, mode.\n",
		"config.yaml":      strings.Repeat("# SetMode ignores an empty value: SetMode value empty ignores mode\n", 6),
	})
	c := candidatesByPath(f.rank(t, "`SetMode` ignores an empty value"))
	// The test beside a strong Go source is its partner; one in another
	// directory is not.
	if c["mode_test.go"].Signals["test"] == 0 || !contains(c["mode_test.go"].Reasons, "test of mode.go") {
		t.Errorf("mode_test.go: got %+v, want paired with mode.go", c["mode_test.go"])
	}
	if c["sub/mode_test.go"].Signals["test"] != 0 {
		t.Errorf("sub/mode_test.go: got %v, want no pairing across directories", c["sub/mode_test.go"].Signals)
	}
	// Prose ranks below the code it talks about, unless the task is about
	// docs or names the file.
	code, prose := c["mode.go"], c["README.md"]
	if prose.Score >= code.Score {
		t.Errorf("README.md (%v) ranks with mode.go (%v)", prose.Score, code.Score)
	}
	docs := candidatesByPath(f.rank(t, "docs: `SetMode` ignores an empty value"))
	named := candidatesByPath(f.rank(t, "`SetMode` ignores an empty value, see README.md"))
	if docs["README.md"].Score < 2*prose.Score || named["README.md"].Score < 2*prose.Score {
		t.Errorf("README.md scores: plain %v, docs task %v, named %v; want the last two undemoted", prose.Score, docs["README.md"].Score, named["README.md"].Score)
	}
	// A configuration file is no documentation: a docs task demotes it.
	if conf := docs["config.yaml"]; conf.Score >= docs["README.md"].Score || conf.Score >= docs["mode.go"].Score {
		t.Errorf("docs task: config.yaml (%v) ranks with README.md (%v) or mode.go (%v)", conf.Score, docs["README.md"].Score, docs["mode.go"].Score)
	}
}

// rankPairing ranks task on fixture f's index with the default weights
// but for the pairing of tests by history (PairHistory, PairMatch).
func rankPairing(t *testing.T, f *fixture, task string, pairHistory, pairMatch float64) []Candidate {
	t.Helper()
	r := NewRanker(f.kb, f.repoID)
	r.Weights.PairHistory, r.Weights.PairMatch = pairHistory, pairMatch
	c, err := r.Rank(context.Background(), Analyze(task), 20)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func candidatesByPath(c []Candidate) map[string]Candidate {
	m := map[string]Candidate{}
	for _, x := range c {
		m[x.Path] = x
	}
	return m
}

// Co-change neighbours share at least minCoChange commits: one commit
// together (here the first, which adds everything) is no evidence.
func TestRankCoChangeMinimum(t *testing.T) {
	f := newFixture(t,
		map[string]string{"a.py": "def alpha_thing():\n    return 1\n", "b.py": "X = 1\n", "c.py": "Y = 1\n"},
		map[string]string{"a.py": "def alpha_thing():\n    return 2\n", "b.py": "X = 2\n"},
	)
	c := candidatesByPath(f.rank(t, "`alpha_thing` fails"))
	if c["b.py"].Signals["cochange"] == 0 || !contains(c["b.py"].Reasons, "changed with a.py in 2 commits") {
		t.Errorf("b.py, two commits with a.py: got %+v", c["b.py"])
	}
	if c["c.py"].Signals["cochange"] != 0 {
		t.Errorf("c.py, one commit with a.py: got co-change %v", c["c.py"].Signals["cochange"])
	}
}

// What the task analysis implies ranks as a guess: its own signal and
// reason, never the seed tier.
func TestRankImplied(t *testing.T) {
	f := newFixture(t, shop...)
	q := Analyze("the pager prints twice")
	q.ImpliedSymbols, q.ImpliedFiles = []string{"format_table"}, []string{"shop/cli.py"}
	rk := NewRanker(f.kb, f.repoID)
	cands, err := rk.Rank(context.Background(), q, 20)
	if err != nil {
		t.Fatal(err)
	}
	c := candidatesByPath(cands)
	if fm := c["shop/fmt.py"]; fm.Signals["implied"] == 0 || fm.Tier == TierSeed || !contains(fm.Reasons, "defines format_table (implied by the task analysis)") {
		t.Errorf("fmt.py: got %+v", fm)
	}
	if cli := c["shop/cli.py"]; cli.Signals["implied"] == 0 || cli.Tier == TierSeed || !contains(cli.Reasons, "implied by the task analysis as shop/cli.py") {
		t.Errorf("cli.py: got %+v", cli)
	}
}

// Tier 4 by module: a strong candidate's module brings its other files,
// more strongly than a shared domain does.
func TestRankMetadataModule(t *testing.T) {
	f := newFixture(t, map[string]string{
		"shop/pager.py": "def _pager_contextmanager(color=None):\n    return color\n",
		"shop/spool.py": "def spool(data):\n    return data\n",
		"shop/tty.py":   "def isatty(stream):\n    return stream.isatty()\n",
	})
	f.describe(t, map[string][4]string{
		"shop/pager.py": {"shop.output", "terminal", `[]`, ""},
		"shop/spool.py": {"shop.output", "storage", `[]`, ""},
		"shop/tty.py":   {"shop.tty", "terminal", `[]`, ""},
	})
	c := candidatesByPath(f.rank(t, "`_pager_contextmanager` leaks"))
	spool, tty := c["shop/spool.py"], c["shop/tty.py"]
	if !contains(spool.Reasons, "same module as shop/pager.py") || !contains(tty.Reasons, "same domain as shop/pager.py") {
		t.Fatalf("spool.py %v, tty.py %v", spool.Reasons, tty.Reasons)
	}
	if spool.Signals["metadata"] <= tty.Signals["metadata"] {
		t.Errorf("module %v should weigh more than domain %v", spool.Signals["metadata"], tty.Signals["metadata"])
	}
}

// docsProject is a documentation builder with a vendored jQuery in a
// theme's static files, a vendored Python library, a generated module and
// an example project: each shares the task's words with the real source.
func docsProject() map[string]string {
	words := "search index highlight query results term matched "
	return map[string]string{
		"builder/search.py": `"""Search index of the built pages."""


def highlight_term(results, term):
    """Highlight the matched term in the search results."""
    return [r.replace(term, "<b>" + term + "</b>") for r in results]


def build_index(pages):
    return {p: p.split() for p in pages}
`,
		"builder/html.py": "from builder.search import build_index\n\n\ndef write_pages(pages):\n    return build_index(pages)\n",
		"builder/themes/basic/static/jquery-3.5.1.js": strings.Repeat("function highlightSearchTerm(query, results) { /* "+words+"*/ return results.filter(function (term) { return term.matched; }); }\n", 40),
		"builder/_vendor/searchlib.py":                strings.Repeat("def search_index_query(term, results):\n    \"\"\""+words+"\"\"\"\n    return [r for r in results if term in r]\n\n\n", 20),
		"builder/search_pb2.py":                       "# -*- coding: utf-8 -*-\n# Generated by the protocol buffer compiler.  DO NOT EDIT!\n" + strings.Repeat("SEARCH_INDEX_QUERY_RESULTS_HIGHLIGHT_TERM = 1  # "+words+"\n", 10),
		"examples/search_demo.py":                     strings.Repeat("from builder.search import highlight_term\n\n# "+words+"\nprint(highlight_term(['search results'], 'term'))\n", 5),
		"tests/test_search.py":                        "from builder.search import highlight_term\n\n\ndef test_highlight():\n    assert highlight_term(['a b'], 'a')\n",
	}
}

func TestRankVendoredLeftOut(t *testing.T) {
	f := newFixture(t, docsProject())
	ctx := context.Background()
	vs, err := f.kb.VendoredFiles(ctx, f.repoID)
	if err != nil {
		t.Fatal(err)
	}
	var flagged []string
	for _, v := range vs {
		flagged = append(flagged, v.Path)
	}
	want := []string{"builder/_vendor/searchlib.py", "builder/search_pb2.py", "builder/themes/basic/static/jquery-3.5.1.js"}
	if !slices.Equal(flagged, want) {
		t.Fatalf("vendored files: got %v, want %v", flagged, want)
	}
	task := "Search results do not highlight the matched term: the search index query drops the term"
	got := paths(f.rank(t, task))
	for _, v := range want {
		if slices.Contains(got, v) {
			t.Errorf("%s is among the candidates of a task that does not name it: %v", v, got)
		}
	}
	if len(got) == 0 || got[0] != "builder/search.py" {
		t.Errorf("want builder/search.py first, got %v", got)
	}
	// The example program shares every word but ranks below the source.
	if i, j := slices.Index(got, "examples/search_demo.py"), slices.Index(got, "builder/search.py"); i >= 0 && i < j {
		t.Errorf("the example outranks the source: %v", got)
	}
	pkg := f.assemble(t, task, Budget{ContextWindow: 40000})
	for _, pf := range pkg.Files {
		if slices.Contains(want, pf.Path) {
			t.Errorf("the package holds vendored %s", pf.Path)
		}
	}

	// Named by path, by file name, or by the library's name, it is back.
	for task, path := range map[string]string{
		"Upgrade builder/themes/basic/static/jquery-3.5.1.js to fix the search highlight": "builder/themes/basic/static/jquery-3.5.1.js",
		"jquery-3.5.1.js breaks the search highlight":                                     "builder/themes/basic/static/jquery-3.5.1.js",
		"Upgrade the bundled jquery: the search highlight breaks":                         "builder/themes/basic/static/jquery-3.5.1.js",
		"searchlib.py drops the matched term from the search results":                     "builder/_vendor/searchlib.py",
	} {
		if got := paths(f.rank(t, task)); !slices.Contains(got[:min(len(got), 10)], path) {
			t.Errorf("%q: want %s in the top 10, got %v", task, path, got)
		}
	}
}

func TestRankRecallKeepsWhatBM25Finds(t *testing.T) {
	// Sixty files each hold one rare word of the task; the fused search
	// keeps the task's rarest terms, so it sees only those, while the
	// file BM25 ranks first holds the task's one repeated word, widget.
	files := map[string]string{}
	var rare []string
	for i := range 60 {
		w := fmt.Sprintf("zq%c%cword", 'a'+i/26, 'a'+i%26)
		rare = append(rare, w)
		files[fmt.Sprintf("noise/n%02d.py", i)] = fmt.Sprintf("def f():\n    return %q\n", w)
	}
	files["core/target_impl.py"] = strings.Repeat("def widget_size(widget):\n    return widget.widget_width  # widget widget\n\n", 4)
	files["core/other.py"] = "def widget():\n    return 1\n"
	files["core/third.py"] = "WIDGET = 'widget'\n"
	f := newFixture(t, files)
	task := "The widget is resized wrongly; the widget widget widget breaks " + strings.Join(rare, " ")
	cands, err := NewRanker(f.kb, f.repoID).Rank(context.Background(), Analyze(task), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(cands) != 10 {
		t.Fatalf("got %d candidates, want 10", len(cands))
	}
	i := slices.IndexFunc(cands, func(c Candidate) bool { return c.Path == "core/target_impl.py" })
	if i < 0 {
		t.Fatalf("core/target_impl.py, BM25's first file, is not among the candidates: %v", paths(cands))
	}
	if cands[i].Signals["recall"] == 0 && cands[i].Signals["search"] == 0 {
		t.Errorf("core/target_impl.py has neither a search nor a recall signal: %v", cands[i].Signals)
	}
	for j := 1; j < len(cands); j++ {
		if cands[j].Score > cands[j-1].Score {
			t.Errorf("candidates not sorted by score at %d: %v", j, paths(cands))
		}
	}
}

func TestUnionRecall(t *testing.T) {
	c := func(id int64, score float64) Candidate {
		return Candidate{FileID: id, Path: fmt.Sprintf("f%d.py", id), Score: score}
	}
	out := []Candidate{c(1, 9), c(2, 8), c(3, 7), c(4, 6), c(5, 5), c(6, 4)}
	rf := func(id int64) *rankFile { return &rankFile{id: id, path: fmt.Sprintf("f%d.py", id)} }
	build := func(f *rankFile, rank int) Candidate { return Candidate{FileID: f.id, Path: f.path} }
	ids := func(cs []Candidate) []int64 {
		var o []int64
		for _, x := range cs {
			o = append(o, x.FileID)
		}
		return o
	}
	tests := []struct {
		name     string
		limit    int
		recalled []int64
		want     []int64
	}{
		{"nothing recalled", 4, nil, []int64{1, 2, 3, 4}},
		{"recalled within the cut", 4, []int64{2, 4}, []int64{1, 2, 3, 4}},
		{"ranked below the cut", 4, []int64{6}, []int64{1, 2, 3, 6}},
		{"never scored", 4, []int64{9}, []int64{1, 2, 3, 9}},
		{"at most half the places, best recalled first", 4, []int64{9, 6, 5}, []int64{1, 2, 6, 9}},
		{"a recalled file inside the cut keeps its place", 4, []int64{4, 9}, []int64{1, 2, 4, 9}},
		{"no limit: the unscored join", 0, []int64{9, 2}, []int64{1, 2, 3, 4, 5, 6, 9}},
	}
	for _, tc := range tests {
		var rec []*rankFile
		for _, id := range tc.recalled {
			rec = append(rec, rf(id))
		}
		got := ids(unionRecall(slices.Clone(out), tc.limit, rec, build))
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestIsExampleAndAboutExamples(t *testing.T) {
	for p, want := range map[string]bool{
		"examples/search/index.js":          true,
		"docs/examples/plot_tilt.py":        true,
		"Examples/demo.py":                  true,
		"demo/app.py":                       true,
		"src/pydicom/examples/__init__.py":  false, // a module of the package
		"pkg/examples_test.go":              false,
		"src/app.py":                        false,
		"docs/conf.py":                      false,
		"tests/examples/test_something.py":  false,
		"doc/tutorial/first_steps/intro.py": true,
	} {
		if got := isExample(p); got != want {
			t.Errorf("isExample(%s) = %v, want %v", p, got, want)
		}
	}
	ex := Analyze("fix: search example to support Redis v4+").Keywords
	plain := Analyze("fix: search to support Redis v4+").Keywords
	set := func(ws []string) map[string]bool {
		m := map[string]bool{}
		for _, w := range ws {
			m[w] = true
		}
		return m
	}
	if !aboutExamples(set(ex)) || aboutExamples(set(plain)) {
		t.Errorf("aboutExamples: %v for %v, %v for %v; want true, false", aboutExamples(set(ex)), ex, aboutExamples(set(plain)), plain)
	}
}

// TestRankPairsTestsByHistory: a test named after no source (click's
// tests/test_options.py for core.py) is the partner of the source it
// changed with in past commits, by the share of the source's commits
// that changed it (doubled: half of them is a sure partner); at
// PairHistory 0 it is no partner at all.
func TestRankPairsTestsByHistory(t *testing.T) {
	core := func(v int) string {
		return fmt.Sprintf("def parse_flag_value(raw):\n    return raw or %d\n", v)
	}
	test := func(name string, v int) string {
		return fmt.Sprintf("def test_%s():\n    assert %d\n", name, v)
	}
	f := newFixture(t,
		map[string]string{"src/app/core.py": core(0), "src/app/other.py": "X = 0\n", "tests/test_options.py": test("options", 0),
			"tests/test_commands.py": test("commands", 0), "tests/test_misc.py": test("misc", 0)},
		// core.py changes six times: with test_options.py four times,
		// with test_commands.py three, with test_misc.py once (the first
		// commit, which adds every file).
		map[string]string{"src/app/core.py": core(1), "tests/test_options.py": test("options", 1), "tests/test_commands.py": test("commands", 1)},
		map[string]string{"src/app/core.py": core(2), "tests/test_options.py": test("options", 2), "tests/test_commands.py": test("commands", 2)},
		map[string]string{"src/app/core.py": core(3), "tests/test_options.py": test("options", 3)},
		map[string]string{"src/app/core.py": core(4)},
		map[string]string{"src/app/core.py": core(5)},
		map[string]string{"tests/test_misc.py": test("misc", 6), "src/app/other.py": "X = 6\n"},
		map[string]string{"tests/test_misc.py": test("misc", 7), "src/app/other.py": "X = 7\n"},
	)
	rank := func(share float64) map[string]Candidate {
		return candidatesByPath(rankPairing(t, f, "`parse_flag_value` drops an empty value", share, 0))
	}
	on, off := rank(1), rank(0)
	// 4 of core.py's 6 commits (smoothed: 2·4/8) and 3 of them (2·3/8).
	if got := on["tests/test_options.py"]; got.Signals["test"] != 1 || !contains(got.Reasons, "its test by history: changed with src/app/core.py in 4 commits") {
		t.Errorf("test_options.py: got test signal %v, reasons %v; want 1, paired with core.py by 4 commits", got.Signals["test"], got.Reasons)
	}
	if got := on["tests/test_commands.py"].Signals["test"]; got != 0.75 {
		t.Errorf("test_commands.py: got test signal %v, want 0.75", got)
	}
	// One commit together is no pairing.
	if got := on["tests/test_misc.py"].Signals["test"]; got != 0 {
		t.Errorf("test_misc.py: got test signal %v, want none", got)
	}
	for _, p := range []string{"tests/test_options.py", "tests/test_commands.py"} {
		if off[p].Signals["test"] != 0 {
			t.Errorf("%s at PairHistory 0: got test signal %v, want none", p, off[p].Signals["test"])
		}
		if on[p].Score <= off[p].Score {
			t.Errorf("%s: scores %v with the pairing, %v without; want it higher", p, on[p].Score, off[p].Score)
		}
	}
	if half := rank(0.5)["tests/test_options.py"].Signals["test"]; half != 0.5 {
		t.Errorf("test_options.py at PairHistory 0.5: got test signal %v, want 0.5", half)
	}
}

// TestRankPairMatchPicksThePartnerOfTheTask: of a source's two partner
// tests by history, the one that changed with it more often takes the
// larger share when partners share alike (PairMatch 0, as before it
// existed); with PairMatch the share follows each test's own match to the
// task: the test holding none of the task's words keeps half its share at
// PairMatch 0.5 and none at 1, and ranks below the one that holds them.
func TestRankPairMatchPicksThePartnerOfTheTask(t *testing.T) {
	core := func(v int) string {
		return fmt.Sprintf("def parse_flag_value(raw):\n    return raw or %d\n", v)
	}
	options := func(v int) string { return fmt.Sprintf("def test_options():\n    assert %d\n", v) }
	commands := func(v int) string {
		return fmt.Sprintf("def test_empty_flag_dropped():\n    # an empty flag value is dropped\n    assert parse_flag_value('') == %d\n", v)
	}
	// core.py changes six times: with test_options.py four times, with
	// test_commands.py three.
	f := newFixture(t,
		map[string]string{"src/app/core.py": core(0), "src/app/other.py": "X = 0\n", "tests/test_options.py": options(0), "tests/test_commands.py": commands(0)},
		map[string]string{"src/app/core.py": core(1), "tests/test_options.py": options(1), "tests/test_commands.py": commands(1)},
		map[string]string{"src/app/core.py": core(2), "tests/test_options.py": options(2), "tests/test_commands.py": commands(2)},
		map[string]string{"src/app/core.py": core(3), "tests/test_options.py": options(3)},
		map[string]string{"src/app/core.py": core(4)},
		map[string]string{"src/app/core.py": core(5)},
	)
	rank := func(byMatch float64) ([]Candidate, map[string]Candidate) {
		c := rankPairing(t, f, "`parse_flag_value` drops an empty flag value", 1, byMatch)
		return c, candidatesByPath(c)
	}
	before := func(c []Candidate, a, b string) bool {
		return slices.IndexFunc(c, func(x Candidate) bool { return x.Path == a }) < slices.IndexFunc(c, func(x Candidate) bool { return x.Path == b })
	}
	_, off := rank(0)
	if o, c := off["tests/test_options.py"].Signals["test"], off["tests/test_commands.py"].Signals["test"]; o != 1 || c != 0.75 {
		t.Errorf("PairMatch 0: got test signals %v (test_options.py), %v (test_commands.py); want 1 and 0.75, by the co-changes alone", o, c)
	}
	_, half := rank(0.5)
	if o := half["tests/test_options.py"].Signals["test"]; o != 0.5 {
		t.Errorf("PairMatch 0.5: test_options.py, which holds none of the task's words, got test signal %v, want 0.5", o)
	}
	list, full := rank(1)
	if o := full["tests/test_options.py"].Signals["test"]; o != 0 {
		t.Errorf("PairMatch 1: test_options.py got test signal %v, want none", o)
	}
	if c := full["tests/test_commands.py"].Signals["test"]; c <= 0 || c > 0.75 {
		t.Errorf("PairMatch 1: test_commands.py got test signal %v, want above 0 and at most 0.75", c)
	}
	if !before(list, "tests/test_commands.py", "tests/test_options.py") {
		t.Errorf("PairMatch 1: test_commands.py, which holds the task's words, ranks below test_options.py: %v", paths(list))
	}
	// The same index, weights and task give the same ranking.
	again, _ := rank(1)
	if !reflect.DeepEqual(list, again) {
		t.Errorf("PairMatch 1 ranks twice differently:\n%v\n%v", paths(list), paths(again))
	}
}

// TestRankPairMatchLiftsAHubsPartner: a module that changes often shares
// a small part of its commits with each partner test; with PairMatch a
// partner's share is its commits relative to the module's closest
// partner's, so the partner holding the task's words gets more of the
// test signal than the co-change share alone gives it.
func TestRankPairMatchLiftsAHubsPartner(t *testing.T) {
	core := func(v int) string {
		return fmt.Sprintf("def parse_flag_value(raw):\n    return raw or %d\n", v)
	}
	options := func(v int) string { return fmt.Sprintf("def test_options():\n    assert %d\n", v) }
	commands := func(v int) string {
		return fmt.Sprintf("def test_parse_flag_value_empty():\n    # parse_flag_value drops an empty flag value\n    assert parse_flag_value('') == %d\n", v)
	}
	// core.py changes ten times, four of them with each test (the first
	// adds them).
	commits := []map[string]string{{"src/app/core.py": core(0), "tests/test_options.py": options(0), "tests/test_commands.py": commands(0)}}
	for i := 1; i < 10; i++ {
		c := map[string]string{"src/app/core.py": core(i)}
		switch {
		case i <= 2:
			c["tests/test_options.py"], c["tests/test_commands.py"] = options(i), commands(i)
		case i == 3:
			c["tests/test_options.py"] = options(i)
		case i == 4:
			c["tests/test_commands.py"] = commands(i)
		}
		commits = append(commits, c)
	}
	f := newFixture(t, commits...)
	rank := func(byMatch float64) map[string]Candidate {
		return candidatesByPath(rankPairing(t, f, "`parse_flag_value` drops an empty flag value", 1, byMatch))
	}
	off, on := rank(0), rank(1)
	// 4 of core.py's 10 commits, smoothed: 2·4/12.
	share := 2.0 / 3
	if o, c := off["tests/test_options.py"].Signals["test"], off["tests/test_commands.py"].Signals["test"]; math.Abs(o-share) > 1e-9 || math.Abs(c-share) > 1e-9 {
		t.Errorf("PairMatch 0: got test signals %v (test_options.py), %v (test_commands.py); want %v each", o, c, share)
	}
	if o, c := on["tests/test_options.py"].Signals["test"], on["tests/test_commands.py"].Signals["test"]; o != 0 || c <= share {
		t.Errorf("PairMatch 1: got test signals %v (test_options.py), %v (test_commands.py); want none and above %v", o, c, share)
	}
}
