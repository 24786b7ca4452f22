package terms

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"parseHTTPHeader", []string{"parse", "http", "header"}},
		{"XMLHttpRequest2", []string{"xml", "http", "request", "2"}},
		{"snake_case_name", []string{"snake", "case", "name"}},
		{"__init__", []string{"init"}},
		{"HTTPServer", []string{"http", "server"}},
		{"simple", []string{"simple"}},
		{"ABC", []string{"abc"}},
		{"utf8Decode", []string{"utf", "8", "decode"}},
		{"Éclair_façade", []string{"éclair", "façade"}},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, Split(tc.in)); diff != "" {
			t.Errorf("Split(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestList(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"Fix the pager in `_pager_contextmanager`", []string{"fix", "pager", "pagercontextmanager", "pager", "contextmanager"}},
		{"def parseHTTPHeader(self):", []string{"parsehttpheader", "parse", "http", "header"}},
		{"click/_termui_impl.py:42", []string{"click", "termuiimpl", "termui", "impl", "py"}},
		{"a b 12 x_1", []string{"x1"}},
		{"ValueError: bad value", []string{"valueerror", "value", "error", "bad", "value"}},
	}
	for _, tc := range tests {
		got := List(tc.in)
		if got == nil {
			got = []string{}
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("List(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
	if got := Unique("Pager pager PAGER"); !cmp.Equal(got, []string{"pager"}) {
		t.Errorf("Unique: got %v", got)
	}
	if got := Joined("fooBar baz"); got != "foobar foo bar baz" {
		t.Errorf("Joined: got %q", got)
	}
}

// FuzzEach checks that any input yields lowercase, bounded, valid terms
// without stop words and without the separators the index splits on.
func FuzzEach(f *testing.F) {
	f.Add("parseHTTPHeader snake_case __dunder__ 123abc ÉCLAIR")
	f.Add("\xff\xfe invalid utf8 \x00")
	f.Fuzz(func(t *testing.T, s string) {
		Each(s, func(term string) {
			if len(term) < 2 || len(term) > MaxTermLen || IsStop(term) || strings.ContainsAny(term, " \t\n_") {
				t.Fatalf("bad term %q from %q", term, s)
			}
			if !utf8.ValidString(term) && utf8.ValidString(s) {
				t.Fatalf("invalid UTF-8 term %q from valid input %q", term, s)
			}
		})
	})
}

// FuzzSplitASCII: the ASCII fast path splits exactly as the rune path.
func FuzzSplitASCII(f *testing.F) {
	f.Add("parseHTTPHeader_v2XMLx")
	f.Add("__a__B9c")
	f.Fuzz(func(t *testing.T, s string) {
		if !isASCII(s) {
			return
		}
		var fast, slow []string
		splitEach(s, func(p string) { fast = append(fast, p) })
		splitRunes(s, func(p string) { slow = append(slow, p) })
		if !cmp.Equal(fast, slow) {
			t.Fatalf("%q: fast %q, runes %q", s, fast, slow)
		}
	})
}
