package world

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzParseLine feeds arbitrary lines to the parser: it never panics, and
// whatever it accepts formats to a line that parses to the same entry
// (legacy lines are rewritten in the new format).
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		"[2025-01-02T03:04:05.678Z][event:bash][git-status] clean",
		"[2025-01-02T03:04:05.678Z][agent:start][T-12] add a flag | need: tests pass",
		"[2025-01-02T03:04:05.678Z][agent:failed][T-1] | need: solve captcha",
		`[2025-01-02T03:04:05.678Z][event:file][a\x5b1\x5d] x\ny\\ \| need: z \u2028`,
		"[2025-01-02T03:04:05.678+02:00][event:user][s]",
		"[2025-01-02 03:04:05] [claude] [abc123:done] all green",
		"[2025-01-02T03:04:05Z] [chrome] [x:visited] y",
		"[][][]", "[", "", "]]", "[x] [y] [z:]",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := ParseLine(line)
		if err != nil {
			return
		}
		e.Legacy = false
		out, err := Format(e)
		if err != nil {
			// Only times beyond what RFC 3339 can hold may be unwritable.
			if y := e.Time.Year(); y >= 0 && y <= 9999 {
				t.Fatalf("Format(ParseLine(%q)): %v", line, err)
			}
			return
		}
		if strings.ContainsAny(out, "\n\r") {
			t.Fatalf("Format gave a line break: %q", out)
		}
		back, err := ParseLine([]byte(out))
		if err != nil {
			t.Fatalf("ParseLine(%q) (from %q): %v", out, line, err)
		}
		e.Time = e.Time.Truncate(time.Millisecond)
		if diff := cmp.Diff(e, back); diff != "" {
			t.Fatalf("%q → %q (-first +second):\n%s", line, out, diff)
		}
	})
}

// FuzzEscape checks that escaping is reversible for every string, keeps a
// line one line, and that any output, need and identifier survive a whole
// line's round trip, need separator and all.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "plain", "a\nb", "\\", "| need: x", "a |", "a | need:", "\xff", "\u2028", "[]", "\\x41"} {
		f.Add(s, "c | need: d", "T-1")
	}
	f.Fuzz(func(t *testing.T, output, need, id string) {
		esc := Escape(output)
		back, err := Unescape(esc)
		if err != nil {
			t.Fatalf("Unescape(Escape(%q)) = error %v", output, err)
		}
		if back != output {
			t.Fatalf("Unescape(Escape(%q)) = %q", output, back)
		}
		if !utf8.ValidString(esc) {
			t.Fatalf("Escape(%q) = %q, not valid UTF-8", output, esc)
		}
		for _, r := range esc {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' {
				t.Fatalf("Escape(%q) = %q holds control %U", output, esc, r)
			}
		}
		if id == "" {
			id = "x"
		}
		e := Entry{Time: t0, Kind: KindAgent, Status: StatusStart, ID: id, Output: output, Need: need}
		line, err := Format(e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseLine([]byte(line))
		if err != nil {
			t.Fatalf("ParseLine(%q): %v", line, err)
		}
		if diff := cmp.Diff(e, got); diff != "" {
			t.Fatalf("round trip of %q (-want +got):\n%s", line, diff)
		}
	})
}

// FuzzReadIndex feeds arbitrary side indexes to the reader (the file sits
// in .clean_room/, where a hand can write): it never panics, and what it
// accepts saves and reads back the same.
func FuzzReadIndex(f *testing.F) {
	f.Add("cra-world-index 3\n7 42 1234 9 656e640a 1 99 2 24 3e8372c0\nT-1\tstart\t1\t0\t0\t1\t0\t0\t1\n\t5\t2\tT-1\t\tverified\t-\n")
	f.Add("cra-world-index 3\n0 0 0 0 - 0 0 0 0 0\n")
	f.Add("cra-world-index 2\n7 42 1234 9 656e640a 1 99 2\nT-1\tstart\t1\t0\t0\t1\t0\t0\t1\n\t5\t2\tT-1\t\tverified\t-\n")
	f.Add("cra-world-index 1\n7 42 1234 9 656e640a\n")
	f.Fuzz(func(t *testing.T, text string) {
		path := t.TempDir() + "/" + indexName
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		st := readIndex(path)
		if st == nil {
			return
		}
		if _, err := st.all(); err != nil {
			// Lines under a good checksum that do not parse (only a
			// hand that sums them writes such an index): refused whole.
			if !errors.Is(err, errIndexDamaged) {
				t.Fatal(err)
			}
			return
		}
		if err := st.save(path); err != nil {
			t.Fatal(err)
		}
		again := readIndex(path)
		if again == nil {
			t.Fatalf("saved index of %q does not read back", text)
		}
		if _, err := again.all(); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(st, again, cmp.AllowUnexported(state{}), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("(-first +again):\n%s", diff)
		}
	})
}

// FuzzIndexAgentLines feeds arbitrary agent lines to the side index's
// lazy reader, past the header a hand could write: a lookup never
// panics, and when the lines parse in order, each agent is found by its
// id alone, as reading them all finds it.
func FuzzIndexAgentLines(f *testing.F) {
	f.Add("T-1\tstart\t1\t0\t0\t1\t0\t0\t1\nT-2\tfinish\t1\t0\t0\t1\t0\t0\t1\n", "T-2")
	f.Add("a \\x5bb\\x5d c\tfinish\t2\t20\t1\t102\t1\t2\t0\nx\\n\tretry\t4\t40\t3\t104\t1\t4\t0\n", "x\n")
	f.Add("T-2\tstart\t1\t0\t0\t1\t0\t0\t1\nT-1\tstart\t1\t0\t0\t1\t0\t0\t1\n", "T-1")
	f.Add("no tab\n", "no tab")
	f.Fuzz(func(t *testing.T, lines, id string) {
		if lines == "" {
			return
		}
		if !strings.HasSuffix(lines, "\n") {
			lines += "\n" // readIndex takes only whole lines
		}
		path := filepath.Join(t.TempDir(), indexName)
		if err := os.WriteFile(path, []byte("head\n"+lines+"tail"), 0o644); err != nil {
			t.Fatal(err)
		}
		open := func() *state {
			file, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { file.Close() })
			return &state{byID: map[string]*agentState{}, rest: &agentLines{f: file, at: 5, end: int64(5 + len(lines))}}
		}
		open().get(id)
		all, err := open().all()
		if err != nil {
			return
		}
		for want, a := range all {
			got, err := open().get(want)
			if err != nil || got == nil || *got != *a {
				t.Fatalf("get(%q) = %+v, %v; all read %+v", want, got, err, a)
			}
		}
		if a, err := open().get(id); err == nil && (a == nil) != (all[id] == nil) {
			t.Fatalf("get(%q) = %+v; all read %+v", id, a, all[id])
		}
	})
}
