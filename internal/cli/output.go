package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"
)

// The output helpers of every command: the two JSON styles, the two table
// layouts, the ways text is cut to fit a line, and counted nouns. Commands
// print data through these so that one style is written one way.

// encodeJSON writes v as one indented JSON document: the --json output of
// commands that print one result (query, index, doctor, enrich; plan,
// retrieve and solve write the same style with an encoder of their own).
// HTML characters are escaped, as encoding/json does by default.
func encodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// encodeJSONArray writes vs as encodeJSON does, the same bytes, one
// element at a time through a buffered writer: 'cra task list --json' on
// 10,000 tasks spent a third of its time growing and re-indenting one
// document of 3.6 MB.
func encodeJSONArray[T any](w io.Writer, vs []T) error {
	if len(vs) == 0 {
		return encodeJSON(w, vs) // [] or null, as encodeJSON writes them
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	var elem bytes.Buffer
	enc := json.NewEncoder(&elem)
	enc.SetIndent("  ", "  ")
	bw.WriteString("[\n")
	for i, v := range vs {
		elem.Reset()
		if err := enc.Encode(v); err != nil {
			return err
		}
		bw.WriteString("  ")
		bw.Write(bytes.TrimSuffix(elem.Bytes(), []byte("\n")))
		if i < len(vs)-1 {
			bw.WriteString(",")
		}
		bw.WriteString("\n")
	}
	bw.WriteString("]\n")
	return bw.Flush()
}

// encodeJSONLines writes each of vs as compact JSON on a line of its own
// (JSON lines): the --json output of 'cra log', whose entries stream and
// are read line by line like the log itself. HTML characters are not
// escaped, so a log line's text reads as written.
func encodeJSONLines[T any](w io.Writer, vs ...T) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, v := range vs {
		if err := enc.Encode(v); err != nil {
			return err
		}
	}
	return nil
}

// writeColumns prints rows as columns two spaces apart, each line after
// indent and without trailing blanks; the columns listed in right are
// aligned right (numbers). A cell holding a control character is quoted
// (without the quotes), so one row stays one line.
func writeColumns(w io.Writer, indent string, rows [][]string, right ...int) {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			// A file may be named with a newline or a tab: one row stays
			// one line, its columns aligned.
			if strings.ContainsFunc(c, unicode.IsControl) {
				q := strconv.Quote(c)
				c = q[1 : len(q)-1]
				r[i] = c
			}
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		b.Reset()
		b.WriteString(indent)
		for i, c := range r {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if slices.Contains(right, i) {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// writeTable prints a header and rows as a table, columns two spaces
// apart, through text/tabwriter. Unlike writeColumns, the last cell of a
// line is written as it is and the cells before it are padded even when it
// is empty; cells must hold no tab or newline (the world log's are escaped).
func writeTable(w io.Writer, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// clipRunes shortens s to n runes, the last of them "…", to fit a table
// cell or a line on a terminal.
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// headBytes returns the first n bytes of s, or s when it is shorter: a
// short commit hash, the date of an RFC 3339 timestamp. For ASCII only.
func headBytes(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// firstLine returns the first non-blank line of s, trimmed.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// firstSentence returns the first sentence of the first paragraph of s (a
// docstring's synopsis), its lines joined by spaces.
func firstSentence(s string) string {
	var para []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			break
		}
		para = append(para, l)
	}
	text := strings.Join(para, " ")
	if i := strings.Index(text, ". "); i >= 0 {
		text = text[:i+1]
	}
	return text
}

// plural is the "s" of a count's noun: "" for 1.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// countNoun renders "1 line", "2 lines".
func countNoun(n int, noun string) string {
	return strconv.Itoa(n) + " " + noun + plural(n)
}

// terminalSafe returns a writer that shows every control character but
// newline and tab as its Go escape (`\x1b`, `\r`, `\u009b`), and a byte
// of invalid UTF-8 as `\xNN`: what an agent or a model wrote (a run's
// output, a review's evidence) reaches a person's terminal as text, so it
// cannot move the cursor over the lines above it, rewrite them, or set
// the clipboard (OSC 52). Each Write is taken whole: callers write lines.
func terminalSafe(w io.Writer) io.Writer { return safeWriter{w} }

type safeWriter struct{ w io.Writer }

func (s safeWriter) Write(p []byte) (int, error) {
	clean := true
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRune(p[i:])
		if (r == utf8.RuneError && size == 1) || (r != '\n' && r != '\t' && unicode.IsControl(r)) {
			clean = false
			break
		}
		i += size
	}
	if clean {
		return s.w.Write(p)
	}
	var b []byte
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRune(p[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = fmt.Appendf(b, `\x%02x`, p[i])
		case r != '\n' && r != '\t' && unicode.IsControl(r):
			q := strconv.QuoteRune(r)
			b = append(b, q[1:len(q)-1]...)
		default:
			b = append(b, p[i:i+size]...)
		}
		i += size
	}
	if _, err := s.w.Write(b); err != nil {
		return 0, err
	}
	return len(p), nil
}
