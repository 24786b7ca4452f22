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
func Each(text string, fn func(term string)) {
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
		word(text[i:j], fn)
		i = j
	}
}

func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// word emits an identifier and its parts.
func word(w string, fn func(string)) {
	w = strings.Trim(w, "_")
	if w == "" {
		return
	}
	parts := Split(w)
	whole := strings.ToLower(w)
	if len(parts) != 1 || parts[0] != whole {
		emit(strings.ReplaceAll(whole, "_", ""), fn)
	}
	for _, p := range parts {
		emit(p, fn)
	}
}

func emit(t string, fn func(string)) {
	if len(t) < 2 || len(t) > MaxTermLen || stop[t] || isNumber(t) {
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
				parts = append(parts, strings.ToLower(string(rs[start:i])))
				start = i
			}
		}
		parts = append(parts, strings.ToLower(string(rs[start:])))
	}
	return parts
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
	}
}

// IsStop reports whether t is dropped as a stop word.
func IsStop(t string) bool { return stop[t] }
