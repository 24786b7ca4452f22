package knowledge

import (
	"fmt"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/lazyre"
)

// Status is a document's standing (seed 003, "Document Format"):
// provisional (a supervisor's best guess), established (confirmed by use
// or by a person), deprecated (no longer applies, left out of prompts).
type Status string

// The statuses.
const (
	Provisional Status = "provisional"
	Established Status = "established"
	Deprecated  Status = "deprecated"
)

// Valid reports whether s is one of the three statuses.
func (s Status) Valid() bool { return s == Provisional || s == Established || s == Deprecated }

// MaxRules bounds a document's Rules section (seed 003: "500 chars or
// less for the rules section").
const MaxRules = 500

// Doc is one knowledge document in seed 003's format:
//
//	# Title
//
//	_Last updated by: code_style, t-1a2b3c4d_
//	_Status: provisional_
//
//	## Rules
//	## Examples     (Good: … Bad: …)
//	## Rationale
//	## Changelog    (cra's addition: who changed what, after which task)
//
// Parse reads it leniently: a person's document may lack any part, order
// them differently or add sections of its own, which are kept.
type Doc struct {
	Title string
	// UpdatedBy and AfterTask are the "_Last updated by: X, Y_" line:
	// a supervisor's name (or a person's) and the task it followed.
	UpdatedBy string
	AfterTask string
	// Status is "" when the document does not say (a person's document:
	// read as established, since a person wrote it).
	Status Status
	// NeedsReview is "_Needs user review: yes_": an internaliser's item a
	// person should confirm (seed 003, "User review queue").
	NeedsReview bool
	Rules       string
	// Good and Bad are the Examples section's two halves; an Examples
	// section without "Good:"/"Bad:" labels is kept whole in Good.
	Good, Bad string
	Rationale string
	// Changelog holds the entries, oldest first, one line each without
	// the list marker.
	Changelog []string
	// Extra are the sections this format does not name, in order, kept as
	// written.
	Extra []Part
}

// Part is a "## Heading" section Doc does not name.
type Part struct {
	Heading string
	Body    string
}

var (
	updatedByLine = lazyre.New(`(?i)^_?\s*last updated by:\s*([^,]*?)\s*(?:,\s*(.*?))?\s*_?\s*$`)
	statusLine    = lazyre.New(`(?i)^_?\s*status:\s*([a-z]+)(?:[^a-z].*)?$`) // "_Status: deprecated (see api-v2.md)_"
	reviewLine    = lazyre.New(`(?i)^_?\s*needs user review:\s*([a-z]+)\s*_?\s*$`)
)

// Parse reads a knowledge document. It never fails: what it does not
// recognise is kept in Extra (or, before the first section, ignored
// apart from the title and the metadata lines).
func Parse(text string) *Doc {
	d := &Doc{}
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	var heading string
	var body []string
	flush := func() {
		if heading == "" {
			return
		}
		b := strings.Trim(strings.Join(body, "\n"), "\n")
		switch strings.ToLower(strings.TrimSpace(heading)) {
		case "rules":
			d.Rules = b
		case "examples":
			d.Good, d.Bad = splitExamples(b)
		case "rationale":
			d.Rationale = b
		case "changelog":
			for _, l := range strings.Split(b, "\n") {
				l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "- "))
				if l != "" {
					d.Changelog = append(d.Changelog, l)
				}
			}
		default:
			d.Extra = append(d.Extra, Part{Heading: strings.TrimSpace(heading), Body: b})
		}
	}
	for _, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "## "):
			// At the line's start only: Render indents examples, whose
			// lines may be Markdown headings of their own.
			flush()
			heading, body = strings.TrimPrefix(t, "## "), nil
			continue
		case heading != "":
			body = append(body, l)
			continue
		case strings.HasPrefix(t, "# ") && d.Title == "":
			d.Title = strings.TrimSpace(strings.TrimPrefix(t, "# "))
		case updatedByLine().MatchString(t):
			m := updatedByLine().FindStringSubmatch(t)
			d.UpdatedBy, d.AfterTask = strings.TrimSpace(m[1]), strings.TrimSpace(m[2])
		case statusLine().MatchString(t):
			d.Status = Status(strings.ToLower(statusLine().FindStringSubmatch(t)[1]))
		case reviewLine().MatchString(t):
			v := strings.ToLower(reviewLine().FindStringSubmatch(t)[1])
			d.NeedsReview = v == "yes" || v == "true"
		}
	}
	flush()
	return d
}

// splitExamples splits an Examples body at its "Good:" and "Bad:" labels.
func splitExamples(b string) (good, bad string) {
	var g, bd []string
	cur := &g
	labelled := false
	for _, l := range strings.Split(b, "\n") {
		t := strings.ToLower(strings.TrimSpace(l))
		switch {
		case strings.HasPrefix(t, "good:"):
			cur, labelled = &g, true
			if rest := strings.TrimSpace(strings.TrimSpace(l)[5:]); rest != "" {
				*cur = append(*cur, rest)
			}
			continue
		case strings.HasPrefix(t, "bad:"):
			cur, labelled = &bd, true
			if rest := strings.TrimSpace(strings.TrimSpace(l)[4:]); rest != "" {
				*cur = append(*cur, rest)
			}
			continue
		}
		*cur = append(*cur, l)
	}
	if !labelled {
		return strings.TrimSpace(b), ""
	}
	return unindent(g), unindent(bd)
}

// unindent drops the two-space indent Render gives example lines.
func unindent(lines []string) string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimPrefix(l, "  ")
	}
	return strings.Trim(strings.Join(out, "\n"), "\n")
}

func indent(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "\n")
}

// EffectiveStatus is Status, or established for a document that does
// not say (a person's).
func (d *Doc) EffectiveStatus() Status {
	if d.Status.Valid() {
		return d.Status
	}
	return Established
}

// Render writes d in seed 003's format.
func (d *Doc) Render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", strings.TrimSpace(d.Title))
	if d.UpdatedBy != "" {
		after := d.AfterTask
		if after == "" {
			after = "none"
		}
		fmt.Fprintf(&b, "_Last updated by: %s, %s_\n", d.UpdatedBy, after)
	}
	if d.Status != "" {
		fmt.Fprintf(&b, "_Status: %s_\n", d.Status)
	}
	if d.NeedsReview {
		b.WriteString("_Needs user review: yes_\n")
	}
	sec := func(h, body string) {
		if body = strings.TrimSpace(body); body != "" {
			fmt.Fprintf(&b, "\n## %s\n\n%s\n", h, body)
		}
	}
	sec("Rules", d.Rules)
	var ex []string
	if strings.TrimSpace(d.Good) != "" {
		ex = append(ex, "Good:\n"+indent(d.Good))
	}
	if strings.TrimSpace(d.Bad) != "" {
		ex = append(ex, "Bad:\n"+indent(d.Bad))
	}
	sec("Examples", strings.Join(ex, "\n\n"))
	sec("Rationale", d.Rationale)
	for _, x := range d.Extra {
		sec(x.Heading, x.Body)
	}
	if len(d.Changelog) > 0 {
		lines := make([]string, len(d.Changelog))
		for i, c := range d.Changelog {
			lines[i] = "- " + c
		}
		sec("Changelog", strings.Join(lines, "\n"))
	}
	return b.String()
}

// ChangelogEntry is one line of a document's changelog: when, which
// supervisor (or person), after which task, what changed.
func ChangelogEntry(at time.Time, by, afterTask, what string) string {
	if afterTask == "" {
		afterTask = "none"
	}
	return fmt.Sprintf("%s %s after %s: %s", at.UTC().Format("2006-01-02"), by, afterTask, oneLine(what))
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// withoutChangelog is a document's text as prompts get it: the changelog
// is for people and costs tokens an agent does not need.
func withoutChangelog(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if strings.EqualFold(strings.TrimSpace(l), "## changelog") {
			end := len(lines)
			for j := i + 1; j < len(lines); j++ {
				if strings.HasPrefix(strings.TrimSpace(lines[j]), "## ") {
					end = j
					break
				}
			}
			return strings.TrimSpace(strings.Join(append(lines[:i:i], lines[end:]...), "\n"))
		}
	}
	return text
}
