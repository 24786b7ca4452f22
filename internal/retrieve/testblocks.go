package retrieve

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/cra-dev/cra/internal/lang"
	"github.com/cra-dev/cra/internal/lazyre"
)

// testBlock is one test case or group of a test file: a JS/TS
// describe/it/test call, a Python test function, method or Test class, a
// Go TestX function.
type testBlock struct {
	name       string
	start, end int  // 1-based, inclusive
	group      bool // a describe or Test class: it holds other tests
	parent     int  // index of the innermost group holding it, -1 at top level
}

// jsTestRe matches the first line of a JS/TS test call: describe, it,
// test and their modifiers (describe.skip, it.each([...]), test.only),
// with the title that follows when it is a string.
var jsTestRe = lazyre.New(`^(\s*)(describe|context|suite|it|test|bench)(?:\.[A-Za-z]+(?:\([^()]*\))?)*\s*(?:\(\s*(?:['"` + "`" + `]([^'"` + "`" + `]*))?|$)`)

// maxTestBlockScan bounds how far below its first line a JS/TS test block's
// closing line is looked for.
const maxTestBlockScan = 2000

// testBlocks returns the tests of a test file in line order, groups before
// the tests they hold: from the definitions for Python and Go (defined),
// from the lines for JS/TS, whose tests are calls the index does not
// define.
func testBlocks(p string, lines []string, syms []symbolRow) (out []testBlock, defined bool) {
	l, _ := lang.Detect(p)
	switch l {
	case lang.Python:
		defined = true
		for _, s := range syms {
			switch {
			case s.kind == "class" && strings.HasPrefix(s.name, "Test"):
				out = append(out, testBlock{name: s.name, start: s.start, end: s.end, group: true})
			case (s.kind == "function" || s.kind == "method") && strings.HasPrefix(s.name, "test"):
				out = append(out, testBlock{name: s.name, start: s.start, end: s.end})
			}
		}
	case lang.Go:
		defined = true
		for _, s := range syms {
			if s.kind == "function" && s.parent == 0 && goTestName(s.name) {
				out = append(out, testBlock{name: s.name, start: s.start, end: s.end})
			}
		}
	case lang.JavaScript, lang.TypeScript, lang.TSX:
		out = jsTestBlocks(lines)
	}
	nest(out)
	return out, defined
}

// goTestName reports whether a Go function is a test, benchmark, fuzz
// test or example by its name.
func goTestName(n string) bool {
	for _, p := range []string{"Test", "Benchmark", "Fuzz", "Example"} {
		if rest, ok := strings.CutPrefix(n, p); ok && (rest == "" || rest[0] == '_' || rest[0] >= 'A' && rest[0] <= 'Z') {
			return true
		}
	}
	return false
}

// nest sets each block's parent: the innermost group holding it. Blocks
// are in line order, a group before what it holds.
func nest(bs []testBlock) {
	var open []int
	for i := range bs {
		for len(open) > 0 && bs[open[len(open)-1]].end < bs[i].start {
			open = open[:len(open)-1]
		}
		bs[i].parent = -1
		if len(open) > 0 {
			bs[i].parent = open[len(open)-1]
		}
		if bs[i].group {
			open = append(open, i)
		}
	}
}

// jsTestBlocks finds the describe/it/test calls of a JS/TS file by their
// layout: a call that does not close on its first line ends at the next
// line as indented as it that closes a bracket (`})`, `}, 10000)`), as
// formatters write them. A call whose end is not found is left out.
func jsTestBlocks(lines []string) []testBlock {
	var out []testBlock
	for i, l := range lines {
		if !testCallStart(l) {
			continue // most lines: no regular expression run
		}
		m := jsTestRe().FindStringSubmatch(strings.TrimRight(l, "\r\n"))
		if m == nil {
			continue
		}
		indent := m[1]
		end := 0
		if balanced(l) {
			end = i + 1
		} else {
			for j := i + 1; j < len(lines) && j <= i+maxTestBlockScan; j++ {
				lj := lines[j]
				t := strings.TrimLeft(lj, " \t")
				if t == "" || t == "\n" || t == "\r\n" {
					continue
				}
				ind := len(lj) - len(t)
				if ind < len(indent) {
					break // left the enclosing block: not the layout expected
				}
				if ind == len(indent) {
					if t[0] == '}' || t[0] == ')' || t[0] == ']' {
						end = j + 1
					}
					break
				}
			}
		}
		if end == 0 {
			continue
		}
		kind := m[2]
		out = append(out, testBlock{name: m[3], start: i + 1, end: end,
			group: kind == "describe" || kind == "context" || kind == "suite"})
	}
	return out
}

// testCallStart reports whether a line may start a test call: its first
// word is one of jsTestRe's.
func testCallStart(l string) bool {
	t := strings.TrimLeft(l, " \t")
	for _, w := range []string{"describe", "context", "suite", "it", "test", "bench"} {
		if strings.HasPrefix(t, w) && len(t) > len(w) && !identByte(t[len(w)]) {
			return true
		}
	}
	return false
}

// balanced reports whether a line closes every parenthesis it opens,
// outside string literals: a one-line test.
func balanced(l string) bool {
	depth := 0
	var quote byte
	opened := false
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"' || c == '`':
			quote = c
		case c == '/' && i+1 < len(l) && l[i+1] == '/':
			return opened && depth == 0
		case c == '(':
			depth++
			opened = true
		case c == ')':
			depth--
		}
	}
	return opened && depth <= 0
}

// maxGapLines bounds the lines between two neighbouring tests that an
// insertion-point snippet spans; farther apart, it shows the lines next
// to the following test only.
const maxGapLines = 4

// testPieces proposes the items of a test file that matter for a change:
// where a new test goes — between neighbouring tests, at the end of a
// group, at the file's end — and the tests that exercise what the task is
// about, in full. A commit that adds a test adds it next to its siblings
// or at the end; the file's header and unrelated tests are not where it
// goes. exercised names the definitions the package holds as primary;
// defined says the blocks are definitions of the index, whose bodies the
// file offers already.
func testPieces(blocks []testBlock, defined bool, lines []string, ft fileTerms, wanted map[string]bool, tt *taskTerms,
	refLines map[int]bool, exercised []string, maxGaps int, weight float64,
	mk func(kind, name, detail string, start, end int, prio float64) piece) []piece {
	if len(blocks) == 0 {
		return nil
	}
	// Tests the index defines show their first lines as signatures
	// already, which mark the places between them: their gaps are fewer,
	// and only next to tests holding a real share of the task's words.
	// JS/TS tests, calls the index does not define, have nothing else.
	minNear := 0.0
	if defined {
		minNear = 0.3
	} else {
		maxGaps *= 2
	}
	last := lastNonBlank(lines)
	uses := usesBefore(lines, exercised)
	using := func(b testBlock) bool { return uses[min(b.end, len(lines))] > uses[max(b.start, 1)-1] }
	// A test exercising a primary definition is relevant. JS/TS tests so
	// marked are shown in full, so there the rule must tell tests apart:
	// not where most of them call it, as in a file named after the
	// function it tests (test/res.send.js), whose first tests would fill
	// the package by their order alone.
	tests, users := 0, 0
	for _, b := range blocks {
		if !b.group {
			tests++
			if using(b) {
				users++
			}
		}
	}
	telling := defined || 2*users <= tests
	rel := make([]float64, len(blocks))
	for i, b := range blocks {
		r := symbolRelevance(symbolRow{name: b.name, start: b.start, end: b.end}, ft, wanted, tt, refLines)
		if r < 1 && telling && using(b) {
			r = 1 // it exercises a primary definition
		}
		rel[i] = r
	}
	// A group is as relevant as its best test; a test inherits part of its
	// group's relevance (a describe named after the function under change).
	for i := len(blocks) - 1; i >= 0; i-- {
		if p := blocks[i].parent; p >= 0 {
			rel[p] = math.Max(rel[p], rel[i])
		}
	}
	var out []piece
	// The relevant tests in full, the siblings to copy, decaying by their
	// relevance rank as a file's bodies do. Tests the index defines
	// (Python, Go) are bodies already.
	if !defined {
		var full []int
		for i, b := range blocks {
			if rel[i] >= 1 && !b.group {
				full = append(full, i)
			}
		}
		slices.SortStableFunc(full, func(x, y int) int { return cmp.Compare(rel[y], rel[x]) })
		for k, i := range full {
			b := blocks[i]
			out = append(out, mk("symbol", b.name, DetailSupporting, b.start, b.end, weight*0.5*math.Min(rel[i], 1.5)*math.Pow(0.6, float64(k))))
		}
	}
	var gaps []piece
	gap := func(name string, from, to int, prio float64) {
		if to-from > maxGapLines {
			from = to - 1
		}
		from, to = max(from, 1), min(to, len(lines))
		if from <= to {
			gaps = append(gaps, mk("snippet", name, DetailTypeContext, from, to, prio))
		}
	}
	// Siblings: the tests of one group (or of the file's top level), in
	// line order.
	children := map[int][]int{}
	for i, b := range blocks {
		children[b.parent] = append(children[b.parent], i)
	}
	for _, parent := range slices.Sorted(maps.Keys(children)) {
		kids := children[parent]
		groupRel := 0.0
		groupEnd := last
		if parent >= 0 {
			groupRel, groupEnd = rel[parent], blocks[parent].end
		}
		for k, i := range kids {
			b := blocks[i]
			// Before each test: the end of the previous one and its first
			// line, the place a sibling goes.
			from := b.start - 1
			if k > 0 {
				from = blocks[kids[k-1]].end
			} else if parent >= 0 {
				from = blocks[parent].start
			}
			near := rel[i]
			if k > 0 {
				near = math.Max(near, rel[kids[k-1]])
			}
			// Only where the task's words are: next to a test that holds
			// them or in a group that does. A file of a hundred unrelated
			// tests offers its end, not a hundred gaps.
			if near > minNear || groupRel >= 0.5 {
				gap(b.name, from, b.start, weight*(0.05+0.25*math.Min(near, 1.5)+0.15*math.Min(groupRel, 1.5)))
			}
		}
		// After the last test: the end of its group or of the file, where
		// tests are appended.
		lastKid := blocks[kids[len(kids)-1]]
		prio := weight * (0.2 + 0.3*math.Min(groupRel, 1.5))
		if parent < 0 {
			prio = weight * 0.6
		}
		end := groupEnd
		switch {
		case parent < 0:
			end = min(last, lastKid.end+maxGapLines)
		case groupEnd == lastKid.end:
			// A group that ends with its last test (a Python class, whose
			// scope is its indentation): a test appended to it goes below,
			// before the next non-blank line.
			end = nextNonBlank(lines, groupEnd, min(last, groupEnd+maxGapLines))
		}
		if end >= lastKid.end {
			gap("end of "+groupName(blocks, parent), lastKid.end, end, prio)
		}
	}
	// The best few: a file offers the places next to what the task is
	// about, not a gap at every test.
	slices.SortStableFunc(gaps, func(x, y piece) int { return cmp.Compare(y.priority, x.priority) })
	return append(out, gaps[:min(len(gaps), maxGaps)]...)
}

// gapBudget is the budget, in tokens, that buys a test file one more
// insertion-point snippet: 12 in an 8k package, 51 in a 32k one.
const gapBudget = 640

// gapsFor is how many insertion-point snippets a test file may offer in
// a package of avail tokens: a small package keeps room for other
// files' headers and bodies.
func gapsFor(avail int) int { return max(4, avail/gapBudget) }

// nextNonBlank returns the first line after n that is not blank, or to
// when there is none up to it.
func nextNonBlank(lines []string, n, to int) int {
	for l := n + 1; l < to; l++ {
		if strings.TrimSpace(lines[l-1]) != "" {
			return l
		}
	}
	return max(n, to)
}

func groupName(blocks []testBlock, i int) string {
	if i < 0 {
		return "file"
	}
	return blocks[i].name
}

// usesBefore returns, for each n, how many of the first n lines use one
// of the names as a whole word: a block uses one when the count grows
// across it.
func usesBefore(lines []string, names []string) []int {
	out := make([]int, len(lines)+1)
	for i, l := range lines {
		out[i+1] = out[i]
		for _, n := range names {
			if hasWord(l, n) {
				out[i+1]++
				break
			}
		}
	}
	return out
}

// hasWord reports whether s holds the identifier w, not as part of a
// longer one.
func hasWord(s, w string) bool {
	for off := 0; ; {
		i := strings.Index(s[off:], w)
		if i < 0 {
			return false
		}
		i += off
		j := i + len(w)
		if (i == 0 || !identByte(s[i-1])) && (j == len(s) || !identByte(s[j])) {
			return true
		}
		off = i + 1
	}
}

func identByte(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
