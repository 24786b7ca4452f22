package retrieve

import (
	"slices"
	"strings"

	"github.com/cra-dev/cra/internal/lazyre"
)

// Where a task points into a file besides its words: the lines a
// traceback or a file:line reference names, and the lines that hold a
// piece of its error messages or of the source lines its traceback
// quotes. A 2,000-line module whose failing line the issue pasted needs
// that line, not its outline.

// minFragment is the shortest text worth looking for verbatim: shorter
// pieces ("None", "value") are everywhere.
const minFragment = 12

// maxPointed bounds the lines one file is pointed at.
const maxPointed = 8

// pointedContext is how many lines a pointed line shows on each side.
const pointedContext = 3

var (
	// A traceback frame and the source line Python prints under it.
	pyFrameLineRe = lazyre.New(`File "[^"\n]+", line \d+, in [^\n]+\n[ \t]+([^\n]+)`)
	// The literal parts of a message, between quotes, placeholders and
	// numbers (values the code formats in).
	fragmentSepRe = lazyre.New(`['"` + "`" + `{}%]|\d+|\s{2,}|<[^>]*>`)
)

// fragment is a text of the task to find verbatim in code.
type fragment struct {
	text    string
	literal bool // a message: it counts inside a string literal only
}

// fragments returns the texts of the task worth finding verbatim in code:
// the messages of its errors cut at quotes and placeholders (code builds
// them from literals and values), and the source lines of its Python
// traceback frames. Each is at least minFragment bytes, trimmed, once.
func fragments(q TaskQuery) []fragment {
	var out []fragment
	add := func(s string, literal bool) {
		s = strings.TrimSpace(strings.Trim(strings.TrimSpace(s), ".:,;"))
		if len(s) >= minFragment && !slices.ContainsFunc(out, func(f fragment) bool { return f.text == s }) {
			out = append(out, fragment{s, literal})
		}
	}
	for _, e := range q.Errors {
		_, msg, ok := strings.Cut(e, ":")
		if !ok {
			continue
		}
		for _, part := range fragmentSepRe().Split(msg, -1) {
			add(part, true)
		}
	}
	for _, m := range pyFrameLineRe().FindAllStringSubmatch(q.Text, -1) {
		add(m[1], false)
	}
	return out
}

// in reports whether line l holds the fragment: a message inside a string
// literal (after a quote), where the code that raises it writes it; a
// source line anywhere. A message of the language's own ("argument of
// type … is not iterable") is in no literal of the repository's.
func (f fragment) in(l string) bool {
	i := strings.Index(l, f.text)
	if i < 0 {
		return false
	}
	return !f.literal || strings.ContainsAny(l[:i], "'\"`")
}

// names reports whether the reference is to the file at path: one path
// ends the other (a traceback's absolute path, a task's shortened one).
func (r FileLine) names(path string) bool {
	return strings.HasSuffix(r.Path, path) || strings.HasSuffix(path, r.Path)
}

// refLinesOf returns the lines of the references in refs to the file at
// path.
func refLinesOf(refs []FileLine, path string) map[int]bool {
	out := map[int]bool{}
	for _, r := range refs {
		if r.names(path) {
			out[r.Line] = true
		}
	}
	return out
}

// pointedLines returns the lines of the file at path (its lines given)
// that the task points at: the lines of refs naming the file that exist
// in it, then those holding a fragment, at most maxPointed, in line order.
func pointedLines(path string, lines []string, refs []FileLine, frags []fragment) []int {
	var out []int
	for _, r := range refs {
		if r.names(path) && r.Line >= 1 && r.Line <= len(lines) &&
			!slices.Contains(out, r.Line) && len(out) < maxPointed {
			out = append(out, r.Line)
		}
	}
	if len(frags) > 0 {
		for i, l := range lines {
			if len(out) >= maxPointed {
				break
			}
			if slices.Contains(out, i+1) {
				continue
			}
			for _, f := range frags {
				if f.in(l) {
					out = append(out, i+1)
					break
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// pointedSnippets returns a snippet around each pointed line, inside the
// innermost definition holding it (so that its body, if included, replaces
// the snippet), merged when they touch.
func pointedSnippets(pointed []int, defs [][2]int, last int) []snippet {
	var out []snippet
	for _, n := range pointed {
		lo, hi := innermost(defs, n, last)
		start, end := max(lo, n-pointedContext), min(hi, n+pointedContext)
		if k := len(out) - 1; k >= 0 && start <= out[k].end+1 && out[k].lo == lo && out[k].hi == hi {
			out[k].end = max(out[k].end, end)
			continue
		}
		out = append(out, snippet{start: start, end: end, rel: 2, lo: lo, hi: hi})
	}
	return out
}

// namedLines returns the lines of a file that use an identifier the task
// names (TaskQuery.Symbols), as a whole word: where a named function is
// called, a named option read, a named constant tested. A task names
// what it is about, and a change to a long file sits where that is used
// as often as where it is defined (whose body comes as a named symbol's).
// The split words of an identifier ("default", "map" of `default_map`)
// are common; the identifier itself is rare. A name on more than a tenth
// of the lines, as snippets' terms, locates nothing. The rarest names go
// first, up to maxPointed lines, returned in line order.
func namedLines(lines []string, names []string) []int {
	type use struct {
		name string
		at   []int
	}
	var uses []use
	limit := max(3, len(lines)/10)
	for _, n := range names {
		var at []int
		for i, l := range lines {
			if hasWord(l, n) {
				if at = append(at, i+1); len(at) > limit {
					break
				}
			}
		}
		if len(at) > 0 && len(at) <= limit {
			uses = append(uses, use{n, at})
		}
	}
	slices.SortStableFunc(uses, func(x, y use) int {
		if c := len(x.at) - len(y.at); c != 0 {
			return c
		}
		return strings.Compare(x.name, y.name)
	})
	var out []int
	for _, u := range uses {
		for _, n := range u.at {
			if len(out) >= maxPointed {
				break
			}
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out
}
