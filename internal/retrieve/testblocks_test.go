package retrieve

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func splitLines(s string) []string {
	return strings.SplitAfter(strings.TrimSuffix(s, "\n")+"\n", "\n")[:strings.Count(strings.TrimSuffix(s, "\n")+"\n", "\n")]
}

func TestJSTestBlocks(t *testing.T) {
	src := `import { accepts } from './accepts'

describe('parseAccept', () => {
  test('should parse accept header', () => {
    expect(parse('a')).toBe(1)
  })
  it.each([1, 2])('works for %s', (n) => {
    expect(n).toBeTruthy()
  })
  test('one line', () => expect(1).toBe(1))
})

describe.skip('accepts', function () {
  describe("nested", () => {
    it('waits', async () => {
      await x()
    }, 10000)
  })
})
`
	got, defined := testBlocks("src/accepts.test.ts", splitLines(src), nil)
	if defined {
		t.Error("JS/TS tests reported as definitions")
	}
	want := []testBlock{
		{name: "parseAccept", start: 3, end: 11, group: true, parent: -1},
		{name: "should parse accept header", start: 4, end: 6, parent: 0},
		{name: "works for %s", start: 7, end: 9, parent: 0},
		{name: "one line", start: 10, end: 10, parent: 0},
		{name: "accepts", start: 13, end: 19, group: true, parent: -1},
		{name: "nested", start: 14, end: 18, group: true, parent: 4},
		{name: "waits", start: 15, end: 17, parent: 5},
	}
	if d := cmp.Diff(want, got, cmp.AllowUnexported(testBlock{})); d != "" {
		t.Errorf("blocks (-want +got):\n%s", d)
	}
}

func TestTestBlocksFromDefinitions(t *testing.T) {
	py := []symbolRow{
		{name: "helper", kind: "function", start: 1, end: 2},
		{name: "TestPager", kind: "class", start: 4, end: 12},
		{name: "test_echo", kind: "method", start: 5, end: 7, parent: 1},
		{name: "test_color", kind: "method", start: 9, end: 12, parent: 1},
		{name: "test_top", kind: "function", start: 14, end: 15},
	}
	got, defined := testBlocks("tests/test_pager.py", nil, py)
	if !defined {
		t.Error("Python tests not reported as definitions")
	}
	want := []testBlock{
		{name: "TestPager", start: 4, end: 12, group: true, parent: -1},
		{name: "test_echo", start: 5, end: 7, parent: 0},
		{name: "test_color", start: 9, end: 12, parent: 0},
		{name: "test_top", start: 14, end: 15, parent: -1},
	}
	if d := cmp.Diff(want, got, cmp.AllowUnexported(testBlock{})); d != "" {
		t.Errorf("python (-want +got):\n%s", d)
	}
	goSyms := []symbolRow{
		{name: "newServer", kind: "function", start: 1, end: 3},
		{name: "TestServe", kind: "function", start: 5, end: 9},
		{name: "Testimony", kind: "function", start: 11, end: 12}, // not a test: lower case after Test
		{name: "BenchmarkServe", kind: "function", start: 14, end: 16},
		{name: "Test_underscore", kind: "function", start: 18, end: 19},
	}
	var names []string
	goBlocks, _ := testBlocks("server_test.go", nil, goSyms)
	for _, b := range goBlocks {
		names = append(names, b.name)
	}
	if d := cmp.Diff([]string{"TestServe", "BenchmarkServe", "Test_underscore"}, names); d != "" {
		t.Errorf("go (-want +got):\n%s", d)
	}
}

func TestBalanced(t *testing.T) {
	for l, want := range map[string]bool{
		"test('x', () => expect(1).toBe(1))": true,
		"test('x (', () => {":                false,
		"it('a', () => {":                    false,
		"test('x', f) // (":                  true,
		"describe":                           false,
	} {
		if got := balanced(l); got != want {
			t.Errorf("balanced(%q): got %v, want %v", l, got, want)
		}
	}
}

func TestHasWord(t *testing.T) {
	for _, tc := range []struct {
		s, w string
		want bool
	}{
		{"const r = accepts(c, o)", "accepts", true},
		{"const r = acceptsAll(c)", "accepts", false},
		{"x.defaultMatch", "defaultMatch", true},
		{"_defaultMatch()", "defaultMatch", false},
		{"accepts", "accepts", true},
	} {
		if got := hasWord(tc.s, tc.w); got != tc.want {
			t.Errorf("hasWord(%q, %q): got %v, want %v", tc.s, tc.w, got, tc.want)
		}
	}
}

// longTSTests is a test file of many describe groups, the last about
// defaultMatch, as hono's tests are laid out.
func longTSTests() string {
	var b strings.Builder
	b.WriteString("import { describe, expect, test } from 'vitest'\nimport { accepts, defaultMatch, parseAccept } from './accepts'\n\n")
	for g := 0; g < 12; g++ {
		fmt.Fprintf(&b, "describe('group %d', () => {\n", g)
		for k := 0; k < 6; k++ {
			fmt.Fprintf(&b, "  test('case %d of group %d', () => {\n", k, g)
			for j := 0; j < 6; j++ {
				fmt.Fprintf(&b, "    expect(parseAccept('text/html;q=0.%d')).toEqual([{ type: 'text/html', q: %d }])\n", j, k)
			}
			b.WriteString("  })\n\n")
		}
		b.WriteString("})\n\n")
	}
	b.WriteString("describe('defaultMatch', () => {\n")
	for k := 0; k < 3; k++ {
		fmt.Fprintf(&b, "  test('returns the default %d', () => {\n    expect(defaultMatch([], { default: 'a%d' })).toBe('a%d')\n  })\n\n", k, k, k)
	}
	b.WriteString("})\n")
	return b.String()
}

func TestAssembleTestInsertionPoint(t *testing.T) {
	// A test file far bigger than the budget: the package holds the end
	// of the group about the function under change and the file's tail
	// (where a new test goes), the test that exercises it, and not the
	// file's unrelated groups.
	testFile := longTSTests()
	f := newFixture(t, map[string]string{
		"src/accepts.ts": "export const defaultMatch = (accepts: string[], config: { default: string }) => {\n  return config.default\n}\n\n" +
			"export const parseAccept = (h: string) => h.split(',')\n",
		"src/accepts.test.ts": testFile,
		"src/other.ts":        "export const unrelated = () => 1\n",
	})
	pkg := f.assemble(t, "fix(accepts): support wildcard media types in defaultMatch", Budget{ContextWindow: 1600, ReservedTokens: 100})
	lines := splitLines(testFile)
	last := len(lines)
	var items []Item
	for _, pf := range pkg.Files {
		if pf.Path == "src/accepts.test.ts" {
			items = pf.Items
		}
	}
	if items == nil {
		t.Fatalf("no src/accepts.test.ts in %+v", pkg.Files)
	}
	covers := func(n int) bool {
		for _, it := range items {
			if it.StartLine <= n && n <= it.EndLine {
				return true
			}
		}
		return false
	}
	// The last test's closing line, the group's and the file's.
	for _, n := range []int{last - 2, last} {
		if !covers(n) {
			t.Errorf("line %d (%q) not in the package: %+v", n, lines[n-1], items)
		}
	}
	// A defaultMatch test in full.
	full := false
	for _, it := range items {
		full = full || it.Kind == "symbol" && strings.Contains(it.Text, "expect(defaultMatch(") && strings.HasSuffix(it.Text, "})\n")
	}
	if !full {
		t.Errorf("no defaultMatch test in full: %+v", items)
	}
	// Nothing of the middle groups' bodies, which are most of the file.
	for _, it := range items {
		if it.Kind == "symbol" && strings.Contains(it.Text, "group 5") {
			t.Errorf("an unrelated test in full: %+v", it)
		}
	}
}

func TestAssemblePythonTestInsertionPoint(t *testing.T) {
	// The same in Python: the last test of the class exercising the
	// function, and the file's end.
	var b strings.Builder
	b.WriteString("import pytest\nfrom shop.pager import echo_via_pager\n\n\n")
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "def test_unrelated_%d():\n%s\n\n", i, strings.Repeat("    assert 1 + 1 == 2\n", 6))
	}
	b.WriteString("class TestPager:\n")
	for i := 0; i < 3; i++ {
		fmt.Fprintf(&b, "    def test_echo_%d(self):\n        echo_via_pager('x%d')\n\n", i, i)
	}
	testFile := strings.TrimRight(b.String(), "\n") + "\n"
	commits := append([]map[string]string{}, shop...)
	commits[0] = map[string]string{}
	for k, v := range shop[0] {
		commits[0][k] = v
	}
	commits[0]["tests/test_pager.py"] = testFile
	f := newFixture(t, commits...)
	pkg := f.assemble(t, "echo_via_pager breaks on empty text", Budget{ContextWindow: 1200, ReservedTokens: 100})
	lines := splitLines(testFile)
	var items []Item
	for _, pf := range pkg.Files {
		if pf.Path == "tests/test_pager.py" {
			items = pf.Items
		}
	}
	last := len(lines)
	found := false
	for _, it := range items {
		found = found || it.StartLine <= last && last <= it.EndLine
	}
	if !found {
		t.Errorf("the last line %q is not in the package: %+v", lines[last-1], items)
	}
}

// FuzzTestBlocks checks the invariants of the layout parsers on any text:
// test blocks lie in the file, in line order, inside their parent group;
// layout blocks lie in the file, outside every definition and the header.
func FuzzTestBlocks(f *testing.F) {
	f.Add("describe('a', () => {\n  it('b', () => {\n    x()\n  })\n})\n")
	f.Add("test('one', () => expect(1).toBe(1))\ntest('two (', () => {\n})\n")
	f.Add("res.send = function send(body) {\n  a\n  b\n  c\n};\n/** x */\nexports.y = 1\n")
	f.Add("describe(`t`, function () {\n\tit.each([1])('n %s', async () => {\n\t}, 100)\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, src string) {
		lines := splitLines(src)
		bs, _ := testBlocks("x.test.ts", lines, nil)
		for i, b := range bs {
			if b.start < 1 || b.end < b.start || b.end > len(lines) {
				t.Fatalf("block %+v outside 1..%d", b, len(lines))
			}
			if i > 0 && b.start <= bs[i-1].start {
				t.Fatalf("blocks out of order: %+v", bs)
			}
			if p := b.parent; p >= 0 && (p >= i || !bs[p].group || bs[p].start > b.start || bs[p].end < b.end) {
				t.Fatalf("block %+v has parent %d: %+v", b, p, bs)
			}
		}
		syms := []symbolRow{{name: "f", start: 2, end: 3}}
		for _, b := range layoutBlocks(lines, syms, 2) {
			if b.start < 4 || b.end < b.start || b.end > len(lines) || b.end-b.start+1 < minLayoutBlock {
				t.Fatalf("layout block %+v (file of %d lines, header and definition 1-3)", b, len(lines))
			}
		}
	})
}

func TestUsesBefore(t *testing.T) {
	lines := splitLines("a := accepts(c)\nb := acceptsAll(c)\n\nx.defaultMatch(y)\n")
	got := usesBefore(lines, []string{"accepts", "defaultMatch"})
	if d := cmp.Diff([]int{0, 1, 1, 1, 2}, got); d != "" {
		t.Errorf("counts (-want +got):\n%s", d)
	}
	if got := usesBefore(lines, nil); got[len(got)-1] != 0 {
		t.Errorf("no names: got %v, want all 0", got)
	}
}

func TestTestPiecesGapsBounded(t *testing.T) {
	// Forty tests that all hold the task's word: the file offers the
	// best maxGaps places, the end of the file among them.
	var b strings.Builder
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "test('wildcard %d', () => {\n  expect(match('*')).toBe(%d)\n})\n\n", i, i)
	}
	lines := splitLines(b.String())
	blocks, _ := testBlocks("a.test.ts", lines, nil)
	if len(blocks) != 40 {
		t.Fatalf("got %d blocks, want 40", len(blocks))
	}
	tt := newTaskTerms(map[string]float64{"wildcard": 2, "match": 1})
	ft := scanTerms(lines, tt)
	mk := func(kind, name, detail string, start, end int, prio float64) piece {
		return piece{item: Item{Kind: kind, Name: name, StartLine: start, EndLine: end}, priority: prio}
	}
	for _, maxGaps := range []int{4, 12} {
		ps := testPieces(blocks, true, lines, ft, map[string]bool{}, tt, nil, nil, maxGaps, 1, mk)
		gaps, end := 0, false
		for _, p := range ps {
			if p.item.Kind == "snippet" {
				gaps++
				end = end || p.item.Name == "end of file" && p.item.EndLine == lastNonBlank(lines)
			}
		}
		if gaps != maxGaps || !end {
			t.Errorf("maxGaps %d: got %d gaps (end of file %v), want %d with the end", maxGaps, gaps, end, maxGaps)
		}
	}
	for avail, want := range map[int]int{100: 4, 8192: 12, 32768: 51} {
		if got := gapsFor(avail); got != want {
			t.Errorf("gapsFor(%d): got %d, want %d", avail, got, want)
		}
	}
}

func TestTestPiecesExercisedEverywhere(t *testing.T) {
	// A file named after the function it tests calls it in every test.
	// Calling it tells the tests apart only where few do: here the tests
	// shown in full are the ones holding the task's word, not the first
	// ones in line order.
	var b strings.Builder
	b.WriteString("describe('.sendFile(path)', function () {\n")
	for i := 0; i < 8; i++ {
		title := fmt.Sprintf("should serve case %d", i)
		if i == 5 {
			title = "should 304 when etag matches"
		}
		fmt.Fprintf(&b, "  it('%s', function () {\n    res.sendFile('f%d')\n  })\n\n", title, i)
	}
	b.WriteString("})\n")
	lines := splitLines(b.String())
	blocks, _ := testBlocks("test/res.sendFile.js", lines, nil)
	tt := newTaskTerms(map[string]float64{"etag": 2, "option": 1})
	ft := scanTerms(lines, tt)
	mk := func(kind, name, detail string, start, end int, prio float64) piece {
		return piece{item: Item{Kind: kind, Name: name, StartLine: start, EndLine: end}, priority: prio}
	}
	full := func(ps []piece) []string {
		var out []string
		for _, p := range ps {
			if p.item.Kind == "symbol" {
				out = append(out, p.item.Name)
			}
		}
		return out
	}
	ps := testPieces(blocks, false, lines, ft, map[string]bool{}, tt, nil, []string{"sendFile"}, 12, 1, mk)
	if d := cmp.Diff([]string{"should 304 when etag matches"}, full(ps)); d != "" {
		t.Errorf("every test calls sendFile: tests in full (-want +got):\n%s", d)
	}
	// Where only some tests call it, calling it is what tells them apart.
	var c strings.Builder
	for i := 0; i < 6; i++ {
		call := "other()"
		if i == 2 {
			call = "res.sendFile('f')"
		}
		fmt.Fprintf(&c, "it('case %d', function () {\n  %s\n})\n\n", i, call)
	}
	lines = splitLines(c.String())
	blocks, _ = testBlocks("test/res.js", lines, nil)
	ft = scanTerms(lines, tt)
	ps = testPieces(blocks, false, lines, ft, map[string]bool{}, tt, nil, []string{"sendFile"}, 12, 1, mk)
	if d := cmp.Diff([]string{"case 2"}, full(ps)); d != "" {
		t.Errorf("one test calls sendFile: tests in full (-want +got):\n%s", d)
	}
}

func TestTestPiecesPythonClassEnd(t *testing.T) {
	// A Python class ends with its last test: a test appended to the class
	// goes below it, so the class's end shows the lines up to the next
	// non-blank one (the next class), where the new test is written.
	src := "class TestPager:\n" +
		"    def test_echo(self):\n        pager('x')\n\n" +
		"    def test_color(self):\n        pager('y')\n\n\n" +
		"class TestOther:\n    def test_other(self):\n        other()\n"
	lines := splitLines(src)
	syms := []symbolRow{
		{name: "TestPager", kind: "class", start: 1, end: 6},
		{name: "test_echo", kind: "method", start: 2, end: 3, parent: 1},
		{name: "test_color", kind: "method", start: 5, end: 6, parent: 1},
		{name: "TestOther", kind: "class", start: 9, end: 11},
		{name: "test_other", kind: "method", start: 10, end: 11, parent: 4},
	}
	blocks, defined := testBlocks("tests/test_pager.py", lines, syms)
	tt := newTaskTerms(map[string]float64{"pager": 2})
	ft := scanTerms(lines, tt)
	mk := func(kind, name, detail string, start, end int, prio float64) piece {
		return piece{item: Item{Kind: kind, Name: name, StartLine: start, EndLine: end}, priority: prio}
	}
	var got [2]int
	for _, p := range testPieces(blocks, defined, lines, ft, map[string]bool{}, tt, nil, nil, 12, 1, mk) {
		if p.item.Name == "end of TestPager" {
			got = [2]int{p.item.StartLine, p.item.EndLine}
		}
	}
	if got != [2]int{6, 9} {
		t.Errorf("end of TestPager: lines %d-%d, want 6-9 (its last line to the next class)", got[0], got[1])
	}
}
