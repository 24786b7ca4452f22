package cleanup

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/lazyre"
	"github.com/cra-dev/cra/internal/llm"
)

// ErrMalformed is a reply that does not follow its call's format: it
// changes nothing (seed 000, "Error Handling").
var ErrMalformed = errors.New("malformed reply")

// The priorities of a TODOS line (seed 000).
const (
	PriorityHigh   = "HIGH"
	PriorityMedium = "MEDIUM"
	PriorityLow    = "LOW"
	PriorityDone   = "DONE"
)

// Todo is one line of Call 1's TODOS block: -PRIORITY: text.
type Todo struct {
	Priority string `json:"priority"` // HIGH, MEDIUM, LOW or DONE
	Text     string `json:"text"`
}

// Rewrite is Call 1's parsed reply.
type Rewrite struct {
	// WorldModel is the new _index.md body: duplicate sections merged and
	// duplicate lines removed (see CleanWorldModel).
	WorldModel string
	// Duplicates counts the lines CleanWorldModel removed.
	Duplicates int
	Todos      []Todo
}

// ParseRewrite reads Call 1's reply, <WORLD_MODEL>…</WORLD_MODEL>
// <TODOS>…</TODOS> (seed 000). It tolerates what small models add around
// the format (<think> blocks, prose outside the tags, code fences, list
// bullets and bold markers, headings and blank lines in TODOS) and
// nothing else: each tag must occur once, the world model must have at
// least one ## section, and every other TODOS line must read
// -HIGH|MEDIUM|LOW|DONE: text. Any failure is ErrMalformed.
func ParseRewrite(reply string) (Rewrite, error) {
	s := llm.StripThink(reply)
	wm, err := tagged(s, "WORLD_MODEL")
	if err != nil {
		return Rewrite{}, err
	}
	todos, err := tagged(s, "TODOS")
	if err != nil {
		return Rewrite{}, err
	}
	var r Rewrite
	r.WorldModel, r.Duplicates = CleanWorldModel(unfence(wm))
	if r.WorldModel == "" {
		return Rewrite{}, fmt.Errorf("%w: WORLD_MODEL is empty", ErrMalformed)
	}
	if !hasSection(r.WorldModel) {
		return Rewrite{}, fmt.Errorf("%w: WORLD_MODEL has no ## section", ErrMalformed)
	}
	for i, line := range strings.Split(unfence(todos), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "```") {
			continue
		}
		m := todoLine().FindStringSubmatch(line)
		if m == nil {
			return Rewrite{}, fmt.Errorf("%w: TODOS line %d %q is not -HIGH|MEDIUM|LOW|DONE: text", ErrMalformed, i+1, clip(line, 80))
		}
		text := strings.TrimSpace(strings.Trim(strings.TrimSpace(m[2]), "*"))
		if text == "" {
			return Rewrite{}, fmt.Errorf("%w: TODOS line %d has no text", ErrMalformed, i+1)
		}
		r.Todos = append(r.Todos, Todo{Priority: strings.ToUpper(m[1]), Text: text})
	}
	return r, nil
}

// todoLine is "-HIGH: text", with the decoration small models add: a
// bullet of - * or •, spaces, bold markers around the priority.
var todoLine = lazyre.New(`^(?:[-*•]\s*)?(?:\*\*)?\s*(?i:(HIGH|MEDIUM|LOW|DONE))\s*(?:\*\*)?\s*:\s*(?:\*\*)?(.*)$`)

// tagged returns the text between <NAME> and </NAME>, which must occur
// once each, in that order.
func tagged(s, name string) (string, error) {
	open, close := "<"+name+">", "</"+name+">"
	if n, m := strings.Count(s, open), strings.Count(s, close); n != 1 || m != 1 {
		return "", fmt.Errorf("%w: want one %s and one %s, found %d and %d", ErrMalformed, open, close, n, m)
	}
	i, j := strings.Index(s, open), strings.Index(s, close)
	if j < i {
		return "", fmt.Errorf("%w: %s comes before %s", ErrMalformed, close, open)
	}
	return s[i+len(open) : j], nil
}

// unfence removes the code fence lines a model wraps a block in.
func unfence(s string) string {
	lines := strings.Split(s, "\n")
	out := lines[:0]
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

func hasSection(s string) bool {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "## ") && strings.TrimSpace(l[3:]) != "" {
			return true
		}
	}
	return false
}

// CleanWorldModel makes a world model say each fact once (seed 000: "no
// duplicate facts, no malformed lines"): sections with the same ##
// heading are merged into the first, a line whose normalised form (case,
// spacing, list marker, closing punctuation) came before is removed
// (### headings excepted), and runs of blank lines shrink to one. It
// returns the text and how many lines it removed.
func CleanWorldModel(text string) (string, int) {
	type section struct {
		heading string
		lines   []string
	}
	var pre []string
	var secs []*section
	byHeading := map[string]*section{}
	var cur *section
	removed := 0
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		line = strings.TrimRight(line, " \t")
		if h := strings.TrimLeft(line, " \t"); strings.HasPrefix(h, "## ") {
			line = h
			key := normLine(line)
			if s := byHeading[key]; s != nil {
				for len(s.lines) > 0 && strings.TrimSpace(s.lines[len(s.lines)-1]) == "" {
					s.lines = s.lines[:len(s.lines)-1]
				}
				cur = s
				removed++
				continue
			}
			cur = &section{heading: line}
			byHeading[key] = cur
			secs = append(secs, cur)
			continue
		}
		if cur == nil {
			pre = append(pre, line)
		} else {
			cur.lines = append(cur.lines, line)
		}
	}
	seen := map[string]bool{}
	keep := func(lines []string) []string {
		var out []string
		for i, l := range lines {
			if strings.TrimSpace(l) == "" {
				if len(out) > 0 && out[len(out)-1] != "" {
					out = append(out, "")
				}
				continue
			}
			// A table's header and separator rows are its form, which
			// another table may share, not facts.
			form := tableSeparator(l) || i+1 < len(lines) && tableSeparator(lines[i+1])
			if !strings.HasPrefix(strings.TrimSpace(l), "#") && !form {
				key := normLine(l)
				if seen[key] {
					removed++
					continue
				}
				seen[key] = true
			}
			out = append(out, l)
		}
		for len(out) > 0 && out[len(out)-1] == "" {
			out = out[:len(out)-1]
		}
		return out
	}
	var b strings.Builder
	if p := keep(pre); len(p) > 0 {
		b.WriteString(strings.Join(p, "\n") + "\n\n")
	}
	for _, s := range secs {
		b.WriteString(s.heading + "\n")
		if ls := keep(s.lines); len(ls) > 0 {
			b.WriteString(strings.Join(ls, "\n") + "\n")
		}
		b.WriteString("\n")
	}
	return strings.TrimSpace(b.String()), removed
}

// tableSeparator reports whether l is a Markdown table's delimiter row:
// cells of dashes, with colons for alignment ("|---|:---:|").
func tableSeparator(l string) bool {
	l = strings.TrimSpace(l)
	if !strings.Contains(l, "-") || !strings.Contains(l, "|") {
		return false
	}
	for _, cell := range strings.Split(strings.Trim(l, "|"), "|") {
		c := strings.Trim(strings.TrimSpace(cell), ":")
		if c == "" || strings.Trim(c, "-") != "" {
			return false
		}
	}
	return true
}

// normLine is a line's form for duplicate detection.
func normLine(l string) string {
	l = strings.ToLower(strings.TrimSpace(l))
	l = strings.TrimLeft(l, "-*•+ \t")
	l = strings.Join(strings.Fields(l), " ")
	return strings.TrimRight(l, ".;, ")
}

// Merge is one line of Call 2's reply: canonical text | keep_id |
// drop_id1,drop_id2.
type Merge struct {
	Canonical string   `json:"canonical"`
	Keep      string   `json:"keep"`
	Drops     []string `json:"drops"`
}

// ParseCollapse reads Call 2's reply, one line per group (seed 000):
// canonical text | keep_id | drop_id1,drop_id2. The canonical text may
// itself hold '|': the last two fields are the ids. It tolerates <think>
// blocks, code fences, blank lines, list bullets, ids in backticks or
// quotes, and a lone NONE for no groups; any other line that does not
// read so is ErrMalformed, and then no line applies. Whether the ids are
// pending tasks is the caller's check, line by line.
func ParseCollapse(reply string) ([]Merge, error) {
	var out []Merge
	for i, line := range strings.Split(unfence(llm.StripThink(reply)), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if strings.EqualFold(strings.Trim(line, ".*`\"' "), "none") {
			continue
		}
		line = strings.TrimSpace(strings.TrimLeft(line, "-*•"))
		last := strings.LastIndex(line, "|")
		if last < 0 {
			return nil, fmt.Errorf("%w: line %d %q is not 'canonical text | keep_id | drop_id1,drop_id2'", ErrMalformed, i+1, clip(line, 80))
		}
		mid := strings.LastIndex(line[:last], "|")
		if mid < 0 {
			return nil, fmt.Errorf("%w: line %d %q is not 'canonical text | keep_id | drop_id1,drop_id2'", ErrMalformed, i+1, clip(line, 80))
		}
		m := Merge{Canonical: strings.TrimSpace(strings.Trim(strings.TrimSpace(line[:mid]), "*`\"'")), Keep: unquoteID(line[mid+1 : last])}
		if m.Canonical == "" {
			return nil, fmt.Errorf("%w: line %d has no canonical text", ErrMalformed, i+1)
		}
		if err := board.CheckID(m.Keep); err != nil {
			return nil, fmt.Errorf("%w: line %d: keep_id %q is not a task id", ErrMalformed, i+1, clip(m.Keep, 40))
		}
		for _, d := range strings.FieldsFunc(line[last+1:], func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
			id := unquoteID(d)
			if id == "" {
				continue
			}
			if err := board.CheckID(id); err != nil {
				return nil, fmt.Errorf("%w: line %d: drop id %q is not a task id", ErrMalformed, i+1, clip(id, 40))
			}
			m.Drops = append(m.Drops, id)
		}
		if len(m.Drops) == 0 {
			return nil, fmt.Errorf("%w: line %d names no task to drop", ErrMalformed, i+1)
		}
		out = append(out, m)
	}
	return out, nil
}

func unquoteID(s string) string { return strings.Trim(strings.TrimSpace(s), "`\"'[]()*") }

// clip cuts s to n runes, saying so.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
