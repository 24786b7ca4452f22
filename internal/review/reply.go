package review

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/cra-dev/cra/internal/lazyre"
	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/verdict"
)

// rank orders classifications by how much they claim: lower claims more.
func rank(c Classification) int {
	for i, x := range Classifications() {
		if x == c {
			return i
		}
	}
	return len(Classifications())
}

// sectionNames are the note's headings, in order (seed 004).
var sectionNames = verdict.SectionNames()

// Reply is a parsed review reply.
type Reply struct {
	Classification Classification `json:"classification"`
	Criteria       Criteria       `json:"criteria"`
	// Need is what a person must do before the task can go on; "" when
	// the model said none.
	Need string `json:"need,omitempty"`
	Note Note   `json:"note"`
}

// ErrMalformed is a reply that does not follow the contract; the error
// wrapping it says what is wrong, in words the model can act on.
var ErrMalformed = errors.New("malformed review reply")

// maxNeed bounds the need line: it goes into a world-log entry.
const maxNeed = 300

// ParseReply reads a reply in the contract's format:
//
//	classification: <full_complete|significant_progress|some_progress|uncertain>
//	criteria: <met|not_met|unclear>
//	need: <none | what a person must do>
//	note:
//	What was accomplished: …
//	Current status: …
//	Remaining issues or limitations: …
//	Suggested next actions: …
//	Validation evidence: …
//
// It forgives what small models add around the format: <think> blocks, a
// code fence around the reply, Markdown bold or headings on the keys and
// headings, letter case. It does not guess: a missing or unknown
// classification or criteria, a missing note, or a section missing or out
// of order is an error wrapping ErrMalformed. need: may be left out (none).
// A note over MaxNote characters is cut, not refused.
func ParseReply(text string) (Reply, error) {
	var r Reply
	lines := strings.Split(unfence(llm.StripThink(strings.ReplaceAll(text, "\r\n", "\n"))), "\n")
	i := 0
	next := func() (string, bool) {
		for ; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) != "" {
				i++
				return lines[i-1], true
			}
		}
		return "", false
	}
	line, ok := next()
	if !ok {
		return r, malformed("the reply is empty: start with 'classification: <one of %s>'", joinClasses())
	}
	key, val := keyValue(line)
	if key != "classification" {
		return r, malformed("the first line must be 'classification: <one of %s>', not %q", joinClasses(), clipRunes(line, 80))
	}
	r.Classification = Classification(token(val))
	if rank(r.Classification) == len(Classifications()) {
		return r, malformed("classification %q is not one of %s", clipRunes(val, 60), joinClasses())
	}
	seen := map[string]bool{}
	for {
		line, ok = next()
		if !ok {
			return r, malformed("no 'note:' line: after the classification, criteria and need lines, write 'note:' and the five sections")
		}
		key, val = keyValue(line)
		if key == "note" {
			break
		}
		if seen[key] {
			return r, malformed("%q appears twice", key)
		}
		seen[key] = true
		switch key {
		case "criteria":
			r.Criteria = Criteria(token(val))
			if r.Criteria != CriteriaMet && r.Criteria != CriteriaNotMet && r.Criteria != CriteriaUnclear {
				return r, malformed("criteria %q is not one of met, not_met, unclear", clipRunes(val, 60))
			}
		case "need":
			r.Need = strings.TrimSpace(val)
			if isNone(r.Need) {
				r.Need = ""
			}
			r.Need = clipRunes(r.Need, maxNeed)
		default:
			return r, malformed("unexpected line %q before 'note:': the lines are classification, criteria, need, then note", clipRunes(line, 80))
		}
	}
	if r.Criteria == "" {
		return r, malformed("no 'criteria: <met|not_met|unclear>' line: say whether the task's 'done when' criteria are met")
	}
	// The note: whatever follows "note:" on its line, then the sections.
	body := append([]string{val}, lines[i:]...)
	note, err := parseNote(body)
	if err != nil {
		return r, err
	}
	note.Fit()
	r.Note = note
	return r, nil
}

// parseNote reads the five sections, in order, each once.
func parseNote(lines []string) (Note, error) {
	var n Note
	secs := n.Sections()
	cur := -1
	var buf []string
	flush := func() {
		if cur >= 0 {
			*secs[cur] = strings.TrimSpace(strings.Join(buf, "\n"))
		}
		buf = buf[:0]
	}
	for _, line := range lines {
		if k, rest, ok := heading(line); ok {
			if k != cur+1 {
				if k <= cur {
					return n, malformed("section %q comes after %q: write the five sections once each, in order: %s", sectionNames[k], sectionNames[cur], strings.Join(sectionNames[:], "; "))
				}
				return n, malformed("section %q is missing before %q: write the five sections in order: %s", sectionNames[cur+1], sectionNames[k], strings.Join(sectionNames[:], "; "))
			}
			flush()
			cur = k
			if rest != "" {
				buf = append(buf, rest)
			}
			continue
		}
		if cur < 0 {
			if strings.TrimSpace(line) != "" {
				return n, malformed("the note must begin with %q, not %q", sectionNames[0]+":", clipRunes(line, 80))
			}
			continue
		}
		buf = append(buf, line)
	}
	flush()
	if cur < len(secs)-1 {
		return n, malformed("the note ends before section %q: write all five sections: %s", sectionNames[cur+1], strings.Join(sectionNames[:], "; "))
	}
	for _, s := range secs {
		if *s == "" {
			*s = "None."
		}
	}
	return n, nil
}

// heading reports whether line is one of the section headings, which one,
// and the text after it on the same line.
func heading(line string) (int, string, bool) {
	s := strings.TrimLeft(strings.TrimSpace(line), "#*_->• \t")
	// A numbered list: "1. What was accomplished: …", "2) **Current status**".
	if i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }); i > 0 && i < len(s) && (s[i] == '.' || s[i] == ')') {
		s = strings.TrimLeft(s[i+1:], "#*_->• \t")
	}
	for k, name := range sectionNames {
		if len(s) < len(name) || !strings.EqualFold(s[:len(name)], name) {
			continue
		}
		rest := strings.TrimLeft(s[len(name):], "*_ \t")
		after, ok := cutColon(rest)
		if !ok {
			// A heading line without a colon ("## Current status",
			// "**Current status**") is the name alone.
			if strings.Trim(rest, "*_#` \t") == "" {
				return k, "", true
			}
			continue
		}
		rest = strings.TrimLeft(after, "*_ \t")
		return k, strings.TrimSpace(rest), true
	}
	return 0, "", false
}

// keyValue splits "key: value", with Markdown decoration around the key
// removed and the key lowercased; key is "" when the line has no colon.
func keyValue(line string) (string, string) {
	s := strings.TrimLeft(strings.TrimSpace(line), "#*_->• \t")
	i := strings.IndexAny(s, ":\uff1a")
	if i < 0 {
		return "", ""
	}
	k := s[:i]
	v, _ := cutColon(s[i:])
	k = strings.ToLower(strings.Trim(k, "*_` \t"))
	return k, strings.TrimLeft(v, "*_ \t")
}

// token reads a one-word value: decoration, angle brackets and a trailing
// period removed, lowercased, spaces and hyphens as underscores.
func token(v string) string {
	v = strings.TrimSpace(v)
	v = strings.Trim(v, "*_`<>\"'. \t")
	v = strings.ToLower(v)
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' {
			return '_'
		}
		return r
	}, v)
}

// cutColon removes a leading colon, ASCII or full-width (which models
// trained on Chinese text write).
func cutColon(s string) (string, bool) {
	if r, ok := strings.CutPrefix(s, ":"); ok {
		return r, true
	}
	return strings.CutPrefix(s, "\uff1a")
}

// isNone reports whether a need line says that nobody is needed, the
// ways small models say it: "none", "None required.", "none, the agent
// can go on", "No person needed", "Not needed", or the prompt's template
// echoed ("<none, or one line: …>"). A line that goes on with words of
// its own ("None of the keys are set: …", "Not installed: …") is a need.
func isNone(s string) bool {
	t := strings.ToLower(strings.Trim(strings.TrimSpace(s), "*_`<>\"'. \t"))
	t = strings.Join(strings.Fields(t), " ")
	switch t {
	case "", "none", "n/a", "na", "no", "nothing", "null", "nil", "nobody", "no one":
		return true
	}
	return noneThen().MatchString(t) || noPersonNeeded().MatchString(t)
}

var (
	// noneThen: "none" and a clause mark or "required"/"needed".
	noneThen = lazyre.New(`^(none|n/a|nobody|no one)(\s*[,;:(–—-]|\s+(is\s+|are\s+)?(required|needed|necessary)\b)`)
	// noPersonNeeded: a short "no … needed" or "not needed" (at most
	// three words between, no clause mark: "No staging credentials - a
	// person is needed" is a need), alone or before a clause mark.
	noPersonNeeded = lazyre.New(`^(no|not)(\s+[a-z']+){0,3}\s+(needed|required|necessary)\s*([,;:(–—-]|$)`)
)

// unfence removes one code fence around the whole reply.
func unfence(s string) string {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "```") || !strings.HasSuffix(t, "```") || len(t) < 6 {
		return s
	}
	t = strings.TrimSuffix(t, "```")
	if nl := strings.IndexByte(t, '\n'); nl >= 0 {
		return t[nl+1:]
	}
	return s
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

func joinClasses() string {
	s := make([]string, 0, 4)
	for _, c := range Classifications() {
		s = append(s, string(c))
	}
	return strings.Join(s, ", ")
}

// clipRunes cuts s to n runes, saying so, and keeps it on one line.
func clipRunes(s string, n int) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' || unicode.IsControl(r) && r != '\t' }), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
