package cli

import (
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

// The output helpers of every command: the two JSON styles and the two
// table layouts. Commands print data through these so that one style is
// written one way.

// encodeJSON writes v as one indented JSON document: the --json output of
// commands that print one result (query, index, plan, retrieve, solve,
// doctor, enrich). HTML characters are escaped, as encoding/json does by
// default.
func encodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
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
