package terms

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// eachReference is Each as it was before its ASCII fast paths: a rune at
// a time, every word through Trim, ReplaceAll and splitEach, every term
// through the stop-word map. The fast Each must give exactly its terms,
// since the index and retrieval compare them.
func eachReference(text string, fn func(term string)) {
	i := 0
	for i < len(text) {
		r, size := utf8.DecodeRuneInString(text[i:])
		if !isWordRune(r) {
			i += size
			continue
		}
		j := i + size
		for j < len(text) {
			r2, s2 := utf8.DecodeRuneInString(text[j:])
			if !isWordRune(r2) {
				break
			}
			j += s2
		}
		w := strings.Trim(text[i:j], "_")
		i = j
		if w == "" {
			continue
		}
		whole := lowerASCII(strings.ReplaceAll(w, "_", ""))
		if !isASCII(w) {
			whole = strings.ToLower(strings.ReplaceAll(w, "_", ""))
		}
		var parts []string
		splitEach(w, func(p string) { parts = append(parts, p) })
		emitRef := func(t string) {
			if len(t) < 2 || len(t) > MaxTermLen || stop[t] || isNumber(t) {
				return
			}
			fn(t)
		}
		if len(parts) != 1 || parts[0] != whole {
			emitRef(whole)
		}
		for _, p := range parts {
			emitRef(p)
		}
	}
}

func listBoth(s string) (fast, ref []string) {
	Each(s, func(t string) { fast = append(fast, t) })
	eachReference(s, func(t string) { ref = append(ref, t) })
	return fast, ref
}

// TestEachMatchesReference runs both on this module's Go sources and on
// text that takes every path: stop words, long runs, digits, non-ASCII
// letters and digits, invalid UTF-8.
func TestEachMatchesReference(t *testing.T) {
	texts := []string{
		"the a an itself whether between xmlHTTPRequest2 snake_case __init__ _ __ a1 11 1a éclair Éclair ÉCLAIR_x café_Noir ٣٤ x٣ \xff\xfeab\x00cd",
		strings.Repeat("z", MaxTermLen) + " " + strings.Repeat("y", MaxTermLen+1) + " " + strings.Repeat("Ab", 30),
	}
	files, _ := filepath.Glob("../*/*.go")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, string(b))
	}
	if len(texts) < 10 {
		t.Fatalf("found %d texts, want this module's sources", len(texts))
	}
	for i, s := range texts {
		fast, ref := listBoth(s)
		if diff := cmp.Diff(ref, fast); diff != "" {
			t.Errorf("text %d: Each (+) differs from the reference (-):\n%s", i, diff)
		}
	}
}

// FuzzEachMatchesReference: any input, the same terms in the same order.
func FuzzEachMatchesReference(f *testing.F) {
	f.Add("parseHTTPHeader snake_case __dunder__ 123abc ÉCLAIR the itself")
	f.Add("\xff\xfe invalid utf8 \x00 ab_\xc3")
	f.Fuzz(func(t *testing.T, s string) {
		fast, ref := listBoth(s)
		if !cmp.Equal(fast, ref) {
			t.Fatalf("%q: Each %q, reference %q", s, fast, ref)
		}
	})
}
