package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestWriteColumnsOneLinePerRow: a cell with a newline or a tab (a file
// may be named so) is escaped, so each row stays one aligned line.
func TestWriteColumnsOneLinePerRow(t *testing.T) {
	var b bytes.Buffer
	writeColumns(&b, "", [][]string{{"odd\nname.py", "python"}, {"tab\there.py", "python"}, {`quote".py`, "python"}})
	want := "odd\\nname.py  python\ntab\\there.py  python\nquote\".py     python\n"
	if got := b.String(); got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

// TestWriteTable: the log's layout pads every cell but the last, even
// before an empty last cell, and leaves the last as it is.
func TestWriteTable(t *testing.T) {
	var b bytes.Buffer
	if err := writeTable(&b, [][]string{{"ID", "STATUS", "OUTPUT"}, {"T-1", "active", ""}, {"T-22", "failed", "no  "}}); err != nil {
		t.Fatal(err)
	}
	want := "ID    STATUS  OUTPUT\nT-1   active  \nT-22  failed  no  \n"
	if got := b.String(); got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

// TestEncodeJSONStyles: a document is indented and escapes HTML, and an
// array written element by element is the same document; JSON lines are
// compact, one value a line, and do not.
func TestEncodeJSONStyles(t *testing.T) {
	v := map[string]string{"a": "<b>"}
	var doc, lines bytes.Buffer
	if err := encodeJSON(&doc, v); err != nil {
		t.Fatal(err)
	}
	if got, want := doc.String(), "{\n  \"a\": \"\\u003cb\\u003e\"\n}\n"; got != want {
		t.Errorf("encodeJSON: got %q, want %q", got, want)
	}
	type row struct {
		ID   string            `json:"id"`
		Tags []string          `json:"tags,omitempty"`
		Sub  map[string]string `json:"sub,omitempty"`
	}
	for _, rows := range [][]row{nil, {}, {{ID: "<1>"}}, {{ID: "a", Tags: []string{"x", "y"}, Sub: v}, {ID: "b"}, {ID: "c&d"}}} {
		var whole, array bytes.Buffer
		if err := encodeJSON(&whole, rows); err != nil {
			t.Fatal(err)
		}
		if err := encodeJSONArray(&array, rows); err != nil {
			t.Fatal(err)
		}
		if array.String() != whole.String() {
			t.Errorf("encodeJSONArray of %d rows:\n%s\nwant what encodeJSON writes:\n%s", len(rows), array.String(), whole.String())
		}
	}
	if err := encodeJSONLines(&lines, v, v); err != nil {
		t.Fatal(err)
	}
	if got, want := lines.String(), strings.Repeat("{\"a\":\"<b>\"}\n", 2); got != want {
		t.Errorf("encodeJSONLines: got %q, want %q", got, want)
	}
}

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		name, got, want string
	}{
		{"runes short", clipRunes("héllo", 5), "héllo"},
		{"runes cut", clipRunes("héllo wörld", 6), "héllo…"},
		{"runes keep space", clipRunes(" a ", 3), " a "},
		{"head short", headBytes("abc", 7), "abc"},
		{"head cut", headBytes("2025-01-02T03:04:05Z", 10), "2025-01-02"},
		{"first line", firstLine("\n  \n  first  \nsecond"), "first"},
		{"first line none", firstLine(" \n "), ""},
		{"first sentence", firstSentence("  Opens it. Then more.\n"), "Opens it."},
		{"first sentence joins lines", firstSentence("Opens\n  the db\n\nDetails."), "Opens the db"},
		{"count one", countNoun(1, "line"), "1 line"},
		{"count many", countNoun(0, "line"), "0 lines"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
}
