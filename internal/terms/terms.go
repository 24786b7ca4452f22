// Package terms turns text and code into search terms. The indexer and the
// retrieval stages use the same rules, so a query term matches what was
// indexed: identifiers are kept whole and also split into their camelCase
// and snake_case parts ("parseHTTPHeader" → parsehttpheader, parse, http,
// header), everything is lowercased, and English stop words and one-letter
// tokens are dropped.
package terms

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxTermLen bounds a term; longer runs (hashes, base64, minified code) are
// noise for ranking.
const MaxTermLen = 40

// Each calls fn for every term of text in order, with repetitions.
// ASCII, nearly all of source code, is classified a byte at a time;
// other text a rune at a time.
func Each(text string, fn func(term string)) {
	i := 0
	for i < len(text) {
		if c := text[i]; c < utf8.RuneSelf {
			if !wordByte[c] {
				i++
				continue
			}
		} else if r, size := utf8.DecodeRuneInString(text[i:]); !isWordRune(r) {
			i += size
			continue
		}
		j := i
		for j < len(text) {
			if c := text[j]; c < utf8.RuneSelf {
				if !wordByte[c] {
					break
				}
				j++
				continue
			}
			r, size := utf8.DecodeRuneInString(text[j:])
			if !isWordRune(r) {
				break
			}
			j += size
		}
		word(text[i:j], fn)
		i = j
	}
}

// wordByte marks the ASCII bytes isWordRune accepts.
var wordByte = func() (t [utf8.RuneSelf]bool) {
	for c := range t {
		t[c] = isWordRune(rune(c))
	}
	return t
}()

func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// word emits an identifier and its parts.
func word(w string, fn func(string)) {
	switch lowerWord(w) {
	case 1:
		// Its only part is itself: most words of code and prose.
		emit(w, fn)
		return
	case 2:
		// snake_case in lower case: the parts are the runs between
		// underscores, as splitEach has them.
		if w = strings.Trim(w, "_"); w == "" {
			return
		}
		if strings.IndexByte(w, '_') < 0 {
			emit(w, fn)
			return
		}
		emit(strings.ReplaceAll(w, "_", ""), fn)
		for w != "" {
			i := strings.IndexByte(w, '_')
			if i < 0 {
				emit(w, fn)
				return
			}
			if i > 0 {
				emit(w[:i], fn)
			}
			w = w[i+1:]
		}
		return
	}
	w = strings.Trim(w, "_")
	if w == "" {
		return
	}
	whole := lowerASCII(strings.ReplaceAll(w, "_", ""))
	if !isASCII(w) {
		whole = strings.ToLower(strings.ReplaceAll(w, "_", ""))
	}
	var buf [8]string // most identifiers have fewer parts: no allocation
	parts := buf[:0]
	splitEach(w, func(p string) { parts = append(parts, p) })
	if len(parts) != 1 || parts[0] != whole {
		emit(whole, fn)
	}
	for _, p := range parts {
		emit(p, fn)
	}
}

// lowerWord is 1 when w is ASCII lower-case letters only, 2 when it also
// has underscores, 0 otherwise.
func lowerWord(w string) int {
	kind := 1
	for i := 0; i < len(w); i++ {
		switch c := w[i]; {
		case c == '_':
			kind = 2
		case c < 'a' || c > 'z':
			return 0
		}
	}
	return kind
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func emit(t string, fn func(string)) {
	if len(t) < 2 || len(t) > MaxTermLen || (len(t) <= maxStopLen && stop[t]) || isNumber(t) {
		return
	}
	fn(t)
}

func isNumber(t string) bool {
	for _, r := range t {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// Split breaks an identifier into lowercase parts at underscores, digits
// boundaries and case changes: "XMLHttpRequest2" → xml, http, request, 2;
// "snake_case" → snake, case.
func Split(ident string) []string {
	var parts []string
	splitEach(ident, func(p string) { parts = append(parts, p) })
	return parts
}

// splitEach is Split without the slice: ASCII identifiers, nearly all of
// them, are split in place without converting to runes.
func splitEach(ident string, fn func(string)) {
	ascii := true
	for i := 0; i < len(ident); i++ {
		if ident[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if !ascii {
		splitRunes(ident, fn)
		return
	}
	isUpper := func(c byte) bool { return c >= 'A' && c <= 'Z' }
	isLower := func(c byte) bool { return c >= 'a' && c <= 'z' }
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	start := -1
	flush := func(end int) {
		if start >= 0 && end > start {
			fn(lowerASCII(ident[start:end]))
		}
		start = -1
	}
	for i := 0; i < len(ident); i++ {
		c := ident[i]
		if !(isUpper(c) || isLower(c) || isDigit(c)) {
			flush(i)
			continue
		}
		if start < 0 {
			start = i
			continue
		}
		prev := ident[i-1]
		switch {
		case isLower(prev) && isUpper(c):
			flush(i)
			start = i
		case isUpper(prev) && isUpper(c) && i+1 < len(ident) && isLower(ident[i+1]):
			flush(i)
			start = i
		case isDigit(prev) != isDigit(c):
			flush(i)
			start = i
		}
	}
	flush(len(ident))
}

// lowerASCII lowercases without allocating when s is already lower case.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}

func splitRunes(ident string, fn func(string)) {
	for _, chunk := range strings.FieldsFunc(ident, func(r rune) bool { return r == '_' || !isWordRune(r) }) {
		rs := []rune(chunk)
		start := 0
		for i := 1; i < len(rs); i++ {
			prev, cur := rs[i-1], rs[i]
			boundary := false
			switch {
			case unicode.IsLower(prev) && unicode.IsUpper(cur):
				boundary = true // camelCase
			case unicode.IsUpper(prev) && unicode.IsUpper(cur) && i+1 < len(rs) && unicode.IsLower(rs[i+1]):
				boundary = true // HTTPServer: HTTP|Server
			case unicode.IsDigit(prev) != unicode.IsDigit(cur):
				boundary = true
			}
			if boundary {
				fn(strings.ToLower(string(rs[start:i])))
				start = i
			}
		}
		fn(strings.ToLower(string(rs[start:])))
	}
}

// List returns the terms of text in order, with repetitions.
func List(text string) []string {
	var out []string
	Each(text, func(t string) { out = append(out, t) })
	return out
}

// Unique returns the distinct terms of text in first-seen order.
func Unique(text string) []string {
	seen := map[string]bool{}
	var out []string
	Each(text, func(t string) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	})
	return out
}

// Joined returns the terms of text joined by spaces: the form stored in the
// full-text index, whose own tokenizer then splits on the spaces.
func Joined(text string) string {
	var b strings.Builder
	b.Grow(len(text) / 2)
	Each(text, func(t string) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t)
	})
	return b.String()
}

// stop lists English function words and a few keywords present in nearly
// every source file: they match everything and rank nothing. Words that can
// carry meaning in a task ("type", "class", "string") are left to BM25's
// inverse document frequency.
var stop = map[string]bool{}

// maxStopLen is the length of the longest stop word: a longer term needs
// no lookup.
var maxStopLen int

func init() {
	for _, w := range strings.Fields(`a an and are as at be been but by can could did do does
		for from had has have he her his how if in into is it its itself me more most my no nor not
		of off on once only or other our out over own same she should so some such than that the their
		them then there these they this those through to too under until up very was we were what when
		where which while who whom why will with would you your yours also just any all each few both
		after again against am any because before being below between during further here i let like
		make made may might must now one ones shall since us use used using via well whether yet
		def func return self cls var const import package none null nil true false else elif`) {
		stop[w] = true
		maxStopLen = max(maxStopLen, len(w))
	}
}

// IsStop reports whether t is dropped as a stop word.
func IsStop(t string) bool { return stop[t] }
