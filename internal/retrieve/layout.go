package retrieve

import (
	"strings"

	"github.com/cra-dev/cra/internal/lazyre"
)

// minLayoutBlock is the fewest lines a layout block has; shorter
// statements (an import, a constant) are not worth a piece of their own.
const minLayoutBlock = 4

// assignedRe names a top-level statement by what it defines:
// `res.send = function send(body) {`, `exports.parse = (s) => …`,
// `const handlers = {`, `module.exports = {`.
var assignedRe = lazyre.New(`^(?:export\s+)?(?:(?:var|let|const)\s+)?([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)\s*(?::[^=]*)?=[^=>]`)

// layoutBlocks returns the top-level statements of the stretches of a
// file no definition covers, found by layout: a block starts at a line
// with no indentation that opens neither a comment nor a closing bracket,
// and runs to the last line with text before the next such line. It is
// how top-level code the index records no definition for (a
// `module.exports = {…}`, a script's body, assignments of what is not a
// function) still offers its parts one by one instead of only by its
// head. Blocks shorter
// than minLayoutBlock lines are left out; the rest come in line order,
// named by what they assign when they assign. Lines before from are the
// file's header (its imports), which the header item shows.
func layoutBlocks(lines []string, syms []symbolRow, from int) []symbolRow {
	out := layoutStatements(lines, syms, from)
	n := 0
	for _, b := range out {
		n += b.end - b.start + 1
	}
	if n*layoutShare < len(lines) {
		return nil // the definitions cover the file: its statements add noise
	}
	return out
}

// layoutStatements returns the blocks layoutBlocks offers, whatever share
// of the file they hold.
func layoutStatements(lines []string, syms []symbolRow, from int) []symbolRow {
	covered := make([]bool, len(lines)+2)
	for l := 1; l < from && l <= len(lines); l++ {
		covered[l] = true
	}
	for _, s := range syms {
		for l := max(s.start, 1); l <= min(s.end, len(lines)); l++ {
			covered[l] = true
		}
	}
	var out []symbolRow
	start, lastText := 0, 0
	flush := func() {
		if start > 0 && lastText-start+1 >= minLayoutBlock {
			out = append(out, symbolRow{name: blockName(lines[start-1]), kind: "block", start: start, end: lastText,
				signature: strings.TrimSpace(lines[start-1])})
		}
		start, lastText = 0, 0
	}
	for n := 1; n <= len(lines); n++ {
		if covered[n] {
			flush()
			continue
		}
		l := strings.TrimRight(lines[n-1], "\r\n")
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		if isComment(t) {
			continue // a comment belongs to what follows it, which takes it with leadingComments
		}
		if l[0] != ' ' && l[0] != '\t' && !continues(t) {
			flush()
			start = n
		}
		if start > 0 {
			lastText = n
		}
	}
	flush()
	return out
}

// layoutShare: layout blocks are offered when they hold at least
// 1/layoutShare of a file's lines, as in a module written as assignments.
const layoutShare = 4

// continues reports whether an unindented line continues a statement
// rather than starting one: a closing bracket, a decorator.
func continues(t string) bool {
	switch t[0] {
	case '}', ')', ']', '@':
		return true
	}
	return false
}

// isComment reports whether a trimmed line is a comment line.
func isComment(t string) bool {
	return strings.HasPrefix(t, "//") || strings.HasPrefix(t, "/*") || strings.HasPrefix(t, "*") || strings.HasPrefix(t, "#")
}

// blockName is what a statement's first line assigns, by its last dotted
// part ("send" for `res.send = function send(body) {`), or "".
func blockName(l string) string {
	m := assignedRe().FindStringSubmatch(strings.TrimSpace(l))
	if m == nil {
		return ""
	}
	n := m[1]
	if i := strings.LastIndexByte(n, '.'); i >= 0 {
		n = n[i+1:]
	}
	if n == "exports" {
		return ""
	}
	return n
}
