package lang

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ClassifyComment returns the kind of a cleaned comment (one of the Comment*
// constants) and whether it explains why the code is as it is (seed 001
// §4.5, inline_comments.kind and is_rationale).
//
// The kind is decided in this order:
//  1. A marker at the start, upper case and followed by a non-letter, or in
//     any case when followed by ":" or "(" ("TODO", "todo(ann):", "Note:"):
//     TODO → todo; FIXME, FIX, XXX, BUG, BROKEN → fixme (PEP 350 files XXX
//     and BUG under FIXME); HACK, KLUDGE, WORKAROUND → hack; NOTE, NB, N.B.,
//     WARNING, WARN, CAVEAT, IMPORTANT → note.
//  2. A reference to an issue anywhere: "#1234" (two digits or more),
//     "GH-12", a tracker key such as "JIRA-123" (but not "UTF-8",
//     "SHA-256", "ISO-8601", "RFC-2616" and the like), "bug 123",
//     "issue #45", "ticket 12345", "PR #7", "b/123456", or a URL into an
//     issue tracker → bug_ref.
//  3. A rationale cue (below) → rationale.
//  4. Otherwise general.
//
// isRationale is true for every comment that has a rationale cue, whatever
// its kind, so "HACK: sleep because the server is slow" is a hack that is
// also a rationale; a rationale kind always has it. The cues are words and
// phrases that give a cause, a purpose or a constraint (rationaleCues):
// because, since (as a cause: not followed by a number, a version, "then",
// "when", "last", ...), so that, so we/it/the/this/they, so as to, in order
// to/for, otherwise, due to, as a result, the reason, why, hence, therefore,
// thus, workaround/work around, we need, need(s) to, needed, must,
// required, necessary, note that, to avoid/prevent/ensure/make sure/
// guarantee/keep/preserve/speed up, avoiding, don't/do not want, instead of,
// rather than, can't/cannot/won't, doesn't/does not work, would/will break,
// breaks, would/will fail, compatibility phrases, for performance/speed/
// efficiency/security/safety/consistency/simplicity, safe to/is safe/not
// safe, assume, relies/rely on, depends on, expected by, intentional(ly),
// deliberately, on purpose, trade-off. A bare marker ("NOTE:", "XXX") is not
// a rationale by itself: many notes say what, not why.
func ClassifyComment(text string) (kind string, isRationale bool) {
	norm := normalizeWords(text)
	isRationale = hasRationaleCue(norm)
	if k := markerKind(text); k != "" {
		return k, isRationale
	}
	if hasBugRef(text, norm) {
		return CommentBugRef, isRationale
	}
	if isRationale {
		return CommentRationale, true
	}
	return CommentGeneral, false
}

// markers maps a leading marker word, upper case, to a comment kind.
var markers = map[string]string{
	"TODO": CommentTodo, "TODOS": CommentTodo,
	"FIXME": CommentFixme, "FIX": CommentFixme, "XXX": CommentFixme, "BUG": CommentFixme, "BROKEN": CommentFixme,
	"HACK": CommentHack, "KLUDGE": CommentHack, "WORKAROUND": CommentHack,
	"NOTE": CommentNote, "NB": CommentNote, "WARNING": CommentNote, "WARN": CommentNote,
	"CAVEAT": CommentNote, "IMPORTANT": CommentNote,
}

// markerKind is the kind of the marker text starts with, or "".
func markerKind(text string) string {
	s := strings.TrimLeft(text, " \t\r\n#/*!-")
	tag := strings.HasPrefix(s, "@") // a JSDoc @todo is a marker in any case
	s = strings.TrimLeft(s, "@")
	if len(s) >= 4 && strings.EqualFold(s[:4], "n.b.") {
		return CommentNote
	}
	end := 0
	for end < len(s) && isASCIILetter(s[end]) {
		end++
	}
	word, rest := s[:end], s[end:]
	kind, ok := markers[strings.ToUpper(word)]
	if !ok {
		return ""
	}
	if tag && (rest == "" || !isWordByte(rest[0])) {
		return kind
	}
	if rest == "" {
		if word == strings.ToUpper(word) {
			return kind
		}
		return ""
	}
	switch next := rest[0]; {
	case next == ':' || next == '(' || next == '[':
		return kind // "todo:", "Note(ann):"
	case word == strings.ToUpper(word) && !isWordByte(next):
		return kind // "TODO fix", "XXX!", but not "TODOs" nor "BUG_URL"
	}
	return ""
}

// startsWithMarker reports whether a comment line begins a new marked row.
func startsWithMarker(text string) bool { return markerKind(text) != "" }

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// normalizeWords lower-cases text and turns every run of characters that
// are not letters or digits into one space, with a space at each end, so
// that cues can be matched as " word ".
func normalizeWords(text string) string {
	var b strings.Builder
	b.Grow(len(text) + 2)
	b.WriteByte(' ')
	space := true
	for _, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
			space = false
		} else if !space {
			b.WriteByte(' ')
			space = true
		}
	}
	if !space {
		b.WriteByte(' ')
	}
	return b.String()
}

// rationaleCues are matched against normalizeWords output.
var rationaleCues = []string{
	" because ", " cause ", " so that ", " so we ", " so it ", " so the ", " so this ", " so they ",
	" in order to ", " in order for ", " otherwise ", " due to ", " as a result ", " the reason ",
	" reason is ", " why ", " hence ", " therefore ", " thus ",
	" workaround ", " work around ", " works around ", " worked around ",
	" we need ", " need to ", " needs to ", " needed ", " must ", " required ", " necessary ",
	" note that ", " to avoid ", " to prevent ", " to ensure ", " to make sure ", " to guarantee ",
	" to keep ", " to preserve ", " instead of ", " rather than ", " so as to ", " avoiding ",
	" don t want ", " do not want ", " to speed up ", " for perf ",
	" can t ", " cannot ", " won t ", " doesn t work ", " does not work ", " would break ",
	" will break ", " breaks ", " would fail ", " will fail ",
	" for compatibility ", " for compat ", " backwards compat", " backward compat", " compatibility with ",
	" for performance ", " for speed ", " for efficiency ", " for security ", " for safety ",
	" for consistency ", " for simplicity ", " safe to ", " is safe ", " not safe ", " s safe ",
	" assume ", " assumes ", " assuming ", " relies on ", " rely on ", " depends on ", " expected by ",
	" intentional ", " intentionally ", " deliberately ", " on purpose ", " trade off ", " tradeoff ",
}

func hasRationaleCue(norm string) bool {
	for _, c := range rationaleCues {
		if strings.Contains(norm, c) {
			return true
		}
	}
	return hasCausalSince(norm)
}

// temporalAfterSince are words after "since" that make it mean "from a time
// on" rather than "because".
var temporalAfterSince = map[string]bool{
	"then": true, "when": true, "last": true, "version": true, "release": true, "python": true,
	"django": true, "go": true, "node": true, "v": true, "before": true, "after": true,
	"startup": true, "forever": true, "ages": true, "yesterday": true, "today": true,
	"january": true, "february": true, "march": true, "april": true, "may": true, "june": true,
	"july": true, "august": true, "september": true, "october": true, "november": true, "december": true,
}

// hasCausalSince reports a "since" that gives a cause.
func hasCausalSince(norm string) bool {
	for s := norm; ; {
		i := strings.Index(s, " since ")
		if i < 0 {
			return false
		}
		before := strings.TrimSpace(s[:i])
		after := s[i+len(" since "):]
		s = s[i+len(" since")-1:]
		if strings.HasSuffix(before, " ever") || before == "ever" {
			continue
		}
		word, rest, _ := strings.Cut(after, " ")
		if word == "" {
			continue
		}
		if word[0] >= '0' && word[0] <= '9' || word[0] == 'v' && len(word) > 1 && word[1] >= '0' && word[1] <= '9' {
			continue
		}
		if temporalAfterSince[word] {
			continue
		}
		if word == "the" {
			w2, _, _ := strings.Cut(rest, " ")
			if w2 == "beginning" || w2 == "start" || w2 == "last" || w2 == "first" {
				continue
			}
		}
		return true
	}
}

// notTrackerKeys are upper-case prefixes of "KEY-123" that name standards
// and encodings, not issue trackers.
var notTrackerKeys = map[string]bool{
	"UTF": true, "UCS": true, "SHA": true, "MD": true, "ISO": true, "RFC": true, "PEP": true, "AES": true,
	"RSA": true, "DES": true, "ES": true, "ECMA": true, "CP": true, "KOI": true, "IEC": true, "IEEE": true,
	"HTTP": true, "TLS": true, "SSL": true, "IPV": true, "BASE": true, "LATIN": true, "WIN": true,
	"WINDOWS": true, "ASCII": true, "ANSI": true, "HMAC": true, "CRC": true, "X": true, "MAC": true,
	"ARM": true, "GMT": true, "UTC": true, "TCP": true, "UDP": true, "DNS": true, "EUC": true, "JIS": true,
	"GB": true, "BIG": true, "OS": true, "POSIX": true, "C": true, "ANSII": true, "ISBN": true,
}

// hasBugRef reports a reference to an issue.
func hasBugRef(text, norm string) bool {
	// "#1234"
	for i := 0; i < len(text); i++ {
		if text[i] != '#' || i > 0 && (text[i-1] == '&' || isWordByte(text[i-1])) {
			continue
		}
		j := i + 1
		for j < len(text) && text[j] >= '0' && text[j] <= '9' {
			j++
		}
		digits := text[i+1 : j]
		if len(digits) < 2 || j < len(text) && isWordByte(text[j]) {
			continue
		}
		if (len(digits) == 3 || len(digits) == 6) && strings.Count(digits, digits[:1]) == len(digits) {
			continue // "#000", "#333333": a colour
		}
		return true
	}
	// "GH-12", "JIRA-123"
	for i := 0; i < len(text); i++ {
		if text[i] != '-' || i == 0 || i+1 >= len(text) || text[i+1] < '0' || text[i+1] > '9' {
			continue
		}
		k := i
		for k > 0 && (text[k-1] >= 'A' && text[k-1] <= 'Z' || text[k-1] >= '0' && text[k-1] <= '9') {
			k--
		}
		key := text[k:i]
		if key == "" || key[0] < 'A' || key[0] > 'Z' || k > 0 && isWordByte(text[k-1]) {
			continue
		}
		j := i + 1
		for j < len(text) && text[j] >= '0' && text[j] <= '9' {
			j++
		}
		if j < len(text) && isWordByte(text[j]) {
			continue
		}
		letters := strings.TrimRight(key, "0123456789")
		if key == "GH" || !notTrackerKeys[key] && !notTrackerKeys[letters] && len(letters) >= 2 {
			return true
		}
	}
	// "bug 123", "issue #45", "b/123456"
	for _, w := range []string{" bug ", " issue ", " ticket ", " pr "} {
		for s := norm; ; {
			i := strings.Index(s, w)
			if i < 0 {
				break
			}
			s = s[i+len(w)-1:]
			if rest := s[1:]; rest != "" && rest[0] >= '0' && rest[0] <= '9' {
				return true
			}
		}
	}
	if i := strings.Index(text, "b/"); i >= 0 && (i == 0 || !isWordByte(text[i-1])) {
		j := i + 2
		for j < len(text) && text[j] >= '0' && text[j] <= '9' {
			j++
		}
		if j-i-2 >= 5 {
			return true
		}
	}
	return hasTrackerURL(text)
}

func isWordByte(c byte) bool {
	return isASCIILetter(c) || c >= '0' && c <= '9' || c == '_'
}

// trackerPaths are URL fragments of issue trackers.
var trackerPaths = []string{
	"/issues/", "/issue/", "/pull/", "/pulls/", "/merge_requests/", "/bugs/", "/bug/", "/ticket/",
	"/tickets/", "/browse/", "show_bug.cgi", "bugs.", "bugzilla.", "crbug.com/", "/+bug/", "issuetracker.",
	"/issue", "jira.",
}

func hasTrackerURL(text string) bool {
	for s := text; ; {
		i := strings.Index(s, "://")
		if i < 0 {
			return false
		}
		end := i + 3
		for end < len(s) && s[end] > ' ' && s[end] < utf8.RuneSelf {
			end++
		}
		u := strings.ToLower(s[i:end])
		for _, p := range trackerPaths {
			if strings.Contains(u, p) {
				return true
			}
		}
		s = s[end:]
	}
}

// isBlockComment reports a /* ... */ comment.
func isBlockComment(raw []byte) bool { return bytes.HasPrefix(raw, []byte("/*")) }

// cleanComment strips the comment syntax from raw: "#", "//" (and more
// slashes), or "/* */" with the " * " that starts each line of a block.
func cleanComment(raw []byte) string {
	s := validString(raw)
	switch {
	case strings.HasPrefix(s, "#"):
		s = strings.TrimLeft(s, "#")
		s = strings.TrimPrefix(s, ":") // Sphinx "#:" attribute comments
		return strings.TrimSpace(s)
	case strings.HasPrefix(s, "//"):
		return strings.TrimSpace(strings.TrimLeft(s, "/"))
	case strings.HasPrefix(s, "/*"):
		return cleanBlock(s)
	}
	return strings.TrimSpace(s)
}

// cleanBlock strips a /* */ or /** */ comment to its text, dedented.
func cleanBlock(s string) string {
	s = strings.TrimPrefix(s, "/*")
	s = strings.TrimSuffix(s, "*/")
	s = strings.TrimLeft(s, "*")
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	star := true
	for _, l := range lines[1:] {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "*") {
			star = false
			break
		}
	}
	if star {
		for i := 1; i < len(lines); i++ {
			t := strings.TrimLeft(lines[i], " \t")
			t = strings.TrimPrefix(t, "*")
			lines[i] = strings.TrimPrefix(t, " ")
		}
		lines[0] = strings.TrimSpace(lines[0])
		return strings.TrimSpace(dedentLines(lines, true))
	}
	return cleandoc(strings.Join(lines, "\n"))
}

// pragmaPrefixes are starts of cleaned comments, lower-cased, that are
// instructions to a tool rather than prose.
var pragmaPrefixes = []string{
	"type:", "noqa", "pylint:", "pragma:", "fmt:", "isort:", "mypy:", "pyright:", "pyre-", "flake8",
	"pytype:", "nosec", "#nosec", "nosemgrep", "nosonar", "-*-", "vim:",
	"eslint-disable", "eslint-enable", "eslint-env", "eslint ", "jshint", "jscs:", "@ts-", "prettier-ignore",
	"istanbul ignore", "c8 ignore", "tslint:", "webpackchunkname", "webpackignore", "@vite-ignore",
	"@jsx", "@flow", "#region", "#endregion", "<reference", "<amd-module", "noinspection", "language=",
	"nolint", "lint:", "+build",
	"spell-checker:", "cspell:", "codespell:", "@license", "@preserve", "jscpd:", "@internal",
}

// skipComment reports comments that are not worth a row: pragmas, the
// shebang, an encoding cookie, and decoration without letters or digits.
func skipComment(raw []byte, content string, line int) bool {
	if line == 1 && bytes.HasPrefix(raw, []byte("#!")) {
		return true
	}
	hasWord := false
	for _, r := range content {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			hasWord = true
			break
		}
	}
	if !hasWord {
		return true
	}
	low := strings.ToLower(content)
	if line <= 2 && (strings.Contains(low, "coding:") || strings.Contains(low, "coding=")) {
		return true
	}
	// Go directives are "//go:generate", "//line x.go:1", "//export F" (cgo):
	// no space after the slashes, which is what tells them from prose.
	if len(raw) > 2 && bytes.HasPrefix(raw, []byte("//")) && raw[2] != ' ' && raw[2] != '\t' && raw[2] != '/' {
		for _, p := range []string{"go:", "line ", "export ", "extern ", "cgo "} {
			if strings.HasPrefix(low, p) {
				return true
			}
		}
	}
	for _, p := range pragmaPrefixes {
		if strings.HasPrefix(low, p) {
			return true
		}
	}
	if isBlockComment(raw) && strings.HasPrefix(low, "global ") {
		return true // /* global window */ for ESLint
	}
	return false
}
