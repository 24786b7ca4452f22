package evidence

import (
	"path"
	"regexp"
	"strings"
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
var assertion = regexp.MustCompile(`\bassert\b` +
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

var importLine = regexp.MustCompile(`^(?:import|from)\b|=\s*require\(`)

// isAssertion reports whether one line of test code (without the diff's
// +/- mark) is an assertion. A commented-out assertion is not one: an
// agent that comments assertions out weakens the test.
func isAssertion(line string) bool {
	l := strings.TrimSpace(line)
	if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "//") || strings.HasPrefix(l, "/*") ||
		l == "*" || strings.HasPrefix(l, "* ") || strings.HasPrefix(l, "*/") {
		return false
	}
	if importLine.MatchString(l) {
		return false
	}
	return assertion.MatchString(l)
}

// countAssertions counts the assertion lines a unified diff removes and
// adds. Only lines inside hunks count: a file header (--- a/x, +++ b/x)
// is not a removed or an added line, even when a removed line's text
// starts with "--".
func countAssertions(patch string) (removed, added int) {
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
				removed++
			}
		case l[0] == '+':
			if isAssertion(l[1:]) {
				added++
			}
		}
	}
	return removed, added
}
