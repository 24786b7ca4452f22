package evidence

import (
	"path"
	"strings"

	"github.com/cra-dev/cra/internal/lazyre"
)

// IsTestFile reports whether a repository path (forward slashes) is a
// test file of the languages cra reads:
//
//   - Go: *_test.go;
//   - Python: test_*.py, *_test.py, conftest.py, and any .py file under
//     a test/ or tests/ directory;
//   - JavaScript and TypeScript (.js .jsx .mjs .cjs .ts .tsx .mts .cts):
//     *.test.* and *.spec.*, and any such file under a __tests__/,
//     test/ or tests/ directory (mocha's default is test/).
//
// Fixtures and snapshots (data files under those directories) are not
// test files: deleting one is not deleting a test. Nor is anything under
// testdata/ (Go's fixtures, which the go tool skips), vendor/ or
// node_modules/ (other projects' code).
func IsTestFile(p string) bool {
	p = strings.TrimPrefix(p, "./")
	name := path.Base(p)
	ext := path.Ext(name)
	inDir := func(dirs ...string) bool {
		for _, d := range strings.Split(path.Dir(p), "/") {
			for _, want := range dirs {
				if d == want {
					return true
				}
			}
		}
		return false
	}
	if inDir("testdata", "vendor", "node_modules") {
		return false
	}
	switch {
	case ext == ".go":
		return strings.HasSuffix(name, "_test.go") && name != "_test.go"
	case ext == ".py":
		stem := strings.TrimSuffix(name, ext)
		return strings.HasPrefix(stem, "test_") || strings.HasSuffix(stem, "_test") && stem != "_test" ||
			name == "conftest.py" || inDir("test", "tests")
	case jsExts[ext]:
		stem := strings.TrimSuffix(name, ext)
		sub := path.Ext(stem)
		return sub == ".test" || sub == ".spec" || inDir("__tests__", "test", "tests")
	}
	return false
}

var jsExts = map[string]bool{".js": true, ".jsx": true, ".mjs": true, ".cjs": true, ".ts": true, ".tsx": true, ".mts": true, ".cts": true}

// assertion matches a line of test code that checks something, in
// Python (assert, self.assert…, assert_…, pytest.raises/warns/fail,
// self.fail), Go (t.Error…, t.Fatal…, t.Fail…, testify's assert. and
// require., gocheck's c.Assert, gomega's Expect, goconvey's So) and
// JavaScript/TypeScript (expect(…), assert(…), assert.…, chai's should
// and .to.…, jest's .toBe(…) family, ava's t.is(…) family). The line is
// read without its indentation; comments and imports are not
// assertions (see isAssertion).
var assertion = lazyre.New(`\bassert\b` +
	`|\bassert[A-Z_]\w*\s*[(!]` +
	`|\bpytest\.(?:raises|warns|fail|approx)\b` +
	`|\bself\.fail\w*\(` +
	`|\b(?:t|b|f|tb)\.(?:Error|Errorf|Fatal|Fatalf|Fail|FailNow)\(` +
	`|\brequire\.[A-Z]\w*\(` +
	`|\bc\.(?:Assert|Check)\(` +
	`|\b[Ee]xpect\w*\s*\(` +
	`|\bSo\(` +
	`|\.should\b|\bshould[.(]` +
	`|\.to\.(?:be|equal|eql|deep|have|include|contain|throw|not|match|exist)\b` +
	`|\.(?:toBe|toEqual|toStrictEqual|toMatch|toThrow|toHave|toContain|toReturn|toSatisfy|toBeCloseTo)\w*\(` +
	`|\bt\.(?:is|not|deepEqual|notDeepEqual|true|false|truthy|falsy|throws|throwsAsync|notThrows|regex|snapshot|like)\(` +
	`|\bfail\(`)

var importLine = lazyre.New(`^(?:import|from)\b|=\s*require\(`)

// isAssertion reports whether one line of test code (without the diff's
// +/- mark) is an assertion. A commented-out assertion is not one: an
// agent that comments assertions out weakens the test.
func isAssertion(line string) bool {
	l := strings.TrimSpace(line)
	if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "//") || strings.HasPrefix(l, "/*") ||
		l == "*" || strings.HasPrefix(l, "* ") || strings.HasPrefix(l, "*/") {
		return false
	}
	if importLine().MatchString(l) {
		return false
	}
	return assertion().MatchString(l)
}

// skip matches a line that skips a test, or marks it as expected to
// fail: Go's t.Skip…, Python's pytest and unittest markers and calls.
var skip = lazyre.New(`\b(?:t|b|f|tb)\.Skip(?:f|Now)?\(` +
	`|@pytest\.mark\.(?:skip|skipif|xfail)\b|\bpytest\.(?:skip|xfail)\(` +
	`|@unittest\.(?:skip|skipIf|skipUnless|expectedFailure)\b|\bself\.skipTest\(`)

// skipJS matches a JavaScript or TypeScript line that skips tests:
// it.skip, xit, and .only or fit, which skip every other test.
var skipJS = lazyre.New(`\b(?:it|test|describe|context|suite)\.(?:skip|only)\b` +
	`|(?:^|[^.\w$])(?:xit|xtest|xdescribe|fit|fdescribe)\s*\(`)

// diffCounts are the assertion and skip lines a test file's diff removes
// and adds.
type diffCounts struct {
	removed, added         int // assertions
	skipsRemoved, skipsAdd int
	testsRemoved, testsAdd int // test definitions
}

// weakened reports whether the diff takes more checking away than it
// adds: assertions removed, or tests skipped that ran before (more skips
// than new tests: a new test may come with its platform guard).
func (c diffCounts) weakened() bool { return c.removed > c.added || c.skippedTests() > 0 }

// skippedTests is how many more tests the diff skips than before.
func (c diffCounts) skippedTests() int {
	return c.skipsAdd - c.skipsRemoved - max(c.testsAdd-c.testsRemoved, 0)
}

// testDef matches a line that defines a test: Python's def test_…, Go's
// func Test…, and a JS/TS it(…) or test(…) call (not it.skip).
var testDef = lazyre.New(`^(?:async\s+)?def\s+test|^func\s+(?:Test|Benchmark|Fuzz)[A-Z_]|^(?:it|test)\s*\(`)

// countAssertions counts the assertion and skip lines a unified diff of a
// test file removes and adds (js: the file is JavaScript or TypeScript).
// Only lines inside hunks count: a file header (--- a/x, +++ b/x) is not
// a removed or an added line, even when a removed line's text starts with
// "--".
func countAssertions(patch string, js bool) diffCounts {
	var c diffCounts
	inHunk := false
	for _, l := range strings.Split(patch, "\n") {
		switch {
		case strings.HasPrefix(l, "diff --git "):
			inHunk = false
		case strings.HasPrefix(l, "@@"):
			inHunk = true
		case !inHunk || l == "":
		case l[0] == '-':
			if isAssertion(l[1:]) {
				c.removed++
			}
			if isSkip(l[1:], js) {
				c.skipsRemoved++
			}
			if testDef().MatchString(strings.TrimSpace(l[1:])) {
				c.testsRemoved++
			}
		case l[0] == '+':
			if isAssertion(l[1:]) {
				c.added++
			}
			if isSkip(l[1:], js) {
				c.skipsAdd++
			}
			if testDef().MatchString(strings.TrimSpace(l[1:])) {
				c.testsAdd++
			}
		}
	}
	return c
}

// isSkip reports whether one line of test code skips a test; a comment
// does not.
func isSkip(line string, js bool) bool {
	l := strings.TrimSpace(line)
	if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "//") || strings.HasPrefix(l, "/*") || strings.HasPrefix(l, "*") {
		return false
	}
	return skip().MatchString(l) || js && skipJS().MatchString(l)
}

// isJS reports whether a path is a JavaScript or TypeScript file.
func isJS(p string) bool { return jsExts[path.Ext(p)] }
