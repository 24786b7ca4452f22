package outcome

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Comparison is a branch's run against its base's, test by test.
type Comparison struct {
	Base   Counts `json:"base"`
	Branch Counts `json:"branch"`
	// Fixed passed on the branch and failed at the base.
	Fixed []string `json:"fixed,omitempty"`
	// Broken passed at the base and fail on the branch.
	Broken []string `json:"broken,omitempty"`
	// Vanished passed at the base and did not run on the branch (a
	// build constraint, a TestMain that never runs the tests, a conftest
	// that deselects them, a deletion).
	Vanished []string `json:"vanished,omitempty"`
	// Skipped passed at the base and are skipped on the branch.
	Skipped []string `json:"skipped,omitempty"`
	// Named are the tests the task names, and what they did at the base
	// and on the branch.
	Named []Named `json:"named,omitempty"`
}

// Named is one test the task names.
type Named struct {
	ID string `json:"id"`
	// Base and Branch are its statuses; "" where it did not run.
	Base   Status `json:"base"`
	Branch Status `json:"branch"`
}

// Stands says the named test ends as a task that names it needs: it
// passed on the branch.
func (n Named) Stands() bool { return n.Branch == Pass }

// Compare compares branch with base, and follows the tests taskText
// names (NamedIn).
func Compare(base, branch *Results, taskText string) Comparison {
	c := Comparison{Base: base.Count(), Branch: branch.Count()}
	for id, was := range base.Tests {
		now, ran := branch.Tests[id]
		switch {
		case was == Pass && !ran:
			c.Vanished = append(c.Vanished, id)
		case was == Pass && now == Fail:
			c.Broken = append(c.Broken, id)
		case was == Pass && now == Skip:
			c.Skipped = append(c.Skipped, id)
		case was == Fail && now == Pass:
			c.Fixed = append(c.Fixed, id)
		}
	}
	for _, id := range NamedIn(taskText, base, branch) {
		c.Named = append(c.Named, Named{ID: id, Base: base.Tests[id], Branch: branch.Tests[id]})
	}
	for _, s := range [][]string{c.Fixed, c.Broken, c.Vanished, c.Skipped} {
		sort.Strings(s)
	}
	return c
}

// minNameLen keeps very short test names ("t", "ok") from matching
// ordinary words of a task.
const minNameLen = 4

// NamedIn returns the ids of the tests text names, of those that ran at
// the base or on the branch: a test is named when its own name (TestSub,
// TestSub/negative, test_divide, "divides by zero"), or a longer tail of
// its id (test_calc.py::test_divide), appears in text as a whole word.
func NamedIn(text string, runs ...*Results) []string {
	if strings.TrimSpace(text) == "" {
		return nil
	}
	ids := map[string]bool{}
	for _, r := range runs {
		if r == nil {
			continue
		}
		for id := range r.Tests {
			ids[id] = true
		}
	}
	words := map[string]bool{}
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !isWordRune(r) }) {
		words[w] = true
	}
	var out []string
	for _, id := range sorted(ids) {
		for _, name := range names(id) {
			if len(name) < minNameLen {
				continue
			}
			if words[name] || !isWord(name) && containsWord(text, name) {
				out = append(out, id)
				break
			}
		}
	}
	return out
}

// names are the ways a task may name the test id: its last part, and
// its parts from the first test-looking one on (TestSub/negative,
// TestCalc::test_divide).
func names(id string) []string {
	// "pkg::TestX/sub", "tests.test_calc.TestK::test_k", "file > suite > name"
	var parts []string
	if pkg, rest, ok := strings.Cut(id, "::"); ok {
		parts = append(parts, lastDotted(pkg))
		parts = append(parts, strings.Split(rest, "::")...)
	} else {
		parts = strings.Split(id, " > ")
	}
	var out []string
	last := parts[len(parts)-1]
	out = append(out, last)
	if i := strings.IndexByte(last, '/'); i > 0 {
		out = append(out, last[:i]) // a Go subtest's parent test names it
	}
	if len(parts) > 1 {
		out = append(out, strings.Join(parts[len(parts)-2:], "::"))
	}
	return out
}

// lastDotted is the last part of a dotted classname (tests.test_calc →
// test_calc), or a Go package path as it is.
func lastDotted(s string) string {
	if strings.Contains(s, "/") {
		return s
	}
	return s[strings.LastIndexByte(s, '.')+1:]
}

// containsWord reports whether name appears in text with no word
// character on either side.
func containsWord(text, name string) bool {
	for from := 0; from < len(text); {
		i := strings.Index(text[from:], name)
		if i < 0 {
			return false
		}
		i += from
		j := i + len(name)
		before, _ := utf8.DecodeLastRuneInString(text[:i])
		after, _ := utf8.DecodeRuneInString(text[j:])
		if (i == 0 || !isWordRune(before)) && (j == len(text) || !isWordRune(after)) {
			return true
		}
		from = i + 1
	}
	return false
}

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

func isWord(s string) bool {
	for _, r := range s {
		if !isWordRune(r) {
			return false
		}
	}
	return true
}
