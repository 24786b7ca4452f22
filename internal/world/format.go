package world

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// timeLayout is RFC 3339 in UTC with milliseconds, the only timestamp cra
// writes. Its fixed width keeps the log sortable and grep-able.
const timeLayout = "2006-01-02T15:04:05.000Z"

// needSep separates an agent entry's output from its criteria.
const needSep = " | need: "

// MaxLineBytes bounds one line, newline included. A longer entry is refused
// on write, and a longer line is reported as malformed on read, so that a
// damaged file cannot make a reader hold gigabytes.
const MaxLineBytes = 16 << 20

// Format renders e as one line in the current format, without the newline.
// Output, need and identifier are escaped, so the line holds no control
// character and parses back to e (with its time cut to milliseconds).
func Format(e Entry) (string, error) {
	b, err := appendLine(nil, e)
	return string(b), err
}

// appendLine appends e's line, without newline, to dst.
func appendLine(dst []byte, e Entry) ([]byte, error) {
	if err := e.check(); err != nil {
		return dst, err
	}
	dst = append(dst, '[')
	dst = e.Time.UTC().AppendFormat(dst, timeLayout)
	dst = append(dst, "]["...)
	dst = append(dst, e.Kind...)
	dst = append(dst, ':')
	if e.Kind == KindEvent {
		dst = append(dst, e.Source...)
	} else {
		dst = append(dst, e.Status...)
	}
	dst = append(dst, "]["...)
	dst = appendEscaped(dst, e.ID, true)
	dst = append(dst, ']')
	if e.Output != "" {
		dst = append(dst, ' ')
		dst = appendEscaped(dst, e.Output, false)
	}
	if e.Need != "" {
		dst = append(dst, needSep...)
		dst = appendEscaped(dst, e.Need, false)
	}
	return dst, nil
}

// check reports whether e can be written: the shape Format needs. Whether
// the source is known and the transition legal is the Log's business.
func (e Entry) check() error {
	if y := e.Time.UTC().Year(); y < 0 || y > 9999 {
		return fmt.Errorf("entry time %v is outside years 0-9999", e.Time)
	}
	switch e.Kind {
	case KindEvent:
		if !sourcePattern().MatchString(string(e.Source)) {
			return fmt.Errorf("event source %q is not a source name (lowercase letters, digits, '-', '_')", e.Source)
		}
		if e.Status != "" {
			return fmt.Errorf("an event has no status (got %q)", e.Status)
		}
	case KindAgent:
		if !e.Status.Valid() {
			return fmt.Errorf("agent status %q is not one of %s", e.Status, joinStatuses(Statuses()))
		}
		if e.Source != "" {
			return fmt.Errorf("an agent entry has no source (got %q)", e.Source)
		}
	default:
		return fmt.Errorf("entry kind %q is neither %q nor %q", e.Kind, KindEvent, KindAgent)
	}
	if e.ID == "" {
		return errors.New("entry has no identifier")
	}
	return nil
}

// Escape makes s safe for one line: '\' becomes `\\`; newline, carriage
// return and tab become `\n`, `\r`, `\t`; other C0 controls, DEL and bytes
// of invalid UTF-8 become `\xNN`; C1 controls and the Unicode line and
// paragraph separators become `\uNNNN`; and a '|' that could be read as the
// start of the need separator " | need: " (a '|' after a space, or first,
// followed by " need: " or by a prefix of it up to the end) becomes `\|`.
// Unescape(Escape(s)) == s for every s, valid UTF-8 or not.
func Escape(s string) string {
	if !needsEscape(s, false) {
		return s
	}
	return string(appendEscaped(nil, s, false))
}

// needsEscape is the fast path of appendEscaped: most outputs are plain.
func needsEscape(s string, id bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '\\' || c == '|' || (id && (c == '[' || c == ']')) {
			return true
		}
	}
	return false
}

const hexDigits = "0123456789abcdef"

// appendEscaped appends Escape(s) to dst. For an identifier (id) it also
// escapes '[' and ']' as `\x5b` and `\x5d`, which keeps the bracket that
// ends the identifier unambiguous; the need separator cannot occur there.
func appendEscaped(dst []byte, s string, id bool) []byte {
	if !needsEscape(s, id) {
		return append(dst, s...)
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '\\':
				dst = append(dst, `\\`...)
			case c == '\n':
				dst = append(dst, `\n`...)
			case c == '\r':
				dst = append(dst, `\r`...)
			case c == '\t':
				dst = append(dst, `\t`...)
			case c < 0x20 || c == 0x7f || (id && (c == '[' || c == ']')):
				dst = append(dst, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
			case !id && c == '|' && (i == 0 || s[i-1] == ' ') && needAhead(s[i+1:]):
				dst = append(dst, `\|`...)
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029':
			dst = append(dst, `\u`...)
			dst = append(dst, fmt.Sprintf("%04x", r)...)
		default:
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return dst
}

// needAhead reports whether rest, the text after a '|', would complete the
// need separator: either now, or together with a separator that Format
// appends after it.
func needAhead(rest string) bool {
	const tail = " need: "
	if len(rest) >= len(tail) {
		return rest[:len(tail)] == tail
	}
	return tail[:len(rest)] == rest
}

// Unescape reverses Escape. It also accepts `\xNN` for any byte and
// `\uNNNN` for any non-surrogate rune, and refuses any other escape.
func Unescape(s string) (string, error) {
	i := strings.IndexByte(s, '\\')
	if i < 0 {
		return s, nil
	}
	b := make([]byte, 0, len(s))
	b = append(b, s[:i]...)
	for i < len(s) {
		c := s[i]
		if c != '\\' {
			b = append(b, c)
			i++
			continue
		}
		if i+1 >= len(s) {
			return "", errors.New("trailing backslash")
		}
		switch e := s[i+1]; e {
		case '\\', '|':
			b = append(b, e)
			i += 2
		case 'n':
			b = append(b, '\n')
			i += 2
		case 'r':
			b = append(b, '\r')
			i += 2
		case 't':
			b = append(b, '\t')
			i += 2
		case 'x':
			if i+4 > len(s) {
				return "", fmt.Errorf("short escape %q", s[i:])
			}
			v, err := strconv.ParseUint(s[i+2:i+4], 16, 8)
			if err != nil {
				return "", fmt.Errorf("bad escape %q", s[i:i+4])
			}
			b = append(b, byte(v))
			i += 4
		case 'u':
			if i+6 > len(s) {
				return "", fmt.Errorf("short escape %q", s[i:])
			}
			v, err := strconv.ParseUint(s[i+2:i+6], 16, 16)
			if err != nil || (v >= 0xd800 && v < 0xe000) {
				return "", fmt.Errorf("bad escape %q", s[i:i+6])
			}
			b = utf8.AppendRune(b, rune(v))
			i += 6
		default:
			return "", fmt.Errorf("unknown escape %q", s[i:i+2])
		}
	}
	return string(b), nil
}

// LineError is a malformed line: where it is and what is wrong. Readers
// report it and go on with the next line (seed 002: warn on malformed).
type LineError struct {
	Line int64 // 1-based
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// ParseLine parses one line without its newline (a trailing '\r' is
// ignored). It reads the current format and the old one,
// "[timestamp] [source] [task-id:status] description", which it maps as
// parseLegacy says.
func ParseLine(line []byte) (Entry, error) {
	s := string(line)
	s = strings.TrimSuffix(s, "\r")
	if !strings.HasPrefix(s, "[") {
		return Entry{}, errors.New("does not start with '['")
	}
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return Entry{}, errors.New("unterminated timestamp")
	}
	ts, rest := s[1:end], s[end+1:]
	if strings.HasPrefix(rest, " [") {
		return parseLegacy(ts, rest[1:])
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return Entry{}, fmt.Errorf("bad timestamp %q", ts)
	}
	e := Entry{Time: t.UTC()}

	kv, rest, err := bracketed(rest, "kind")
	if err != nil {
		return Entry{}, err
	}
	kind, val, _ := strings.Cut(kv, ":")
	switch Kind(kind) {
	case KindEvent:
		if !sourcePattern().MatchString(val) {
			return Entry{}, fmt.Errorf("bad event source %q", val)
		}
		e.Kind, e.Source = KindEvent, Source(val)
	case KindAgent:
		if !Status(val).Valid() {
			return Entry{}, fmt.Errorf("bad agent status %q", val)
		}
		e.Kind, e.Status = KindAgent, Status(val)
	default:
		return Entry{}, fmt.Errorf("bad kind %q: want event:SOURCE or agent:STATUS", kv)
	}

	rawID, rest, err := bracketed(rest, "identifier")
	if err != nil {
		return Entry{}, err
	}
	if e.ID, err = Unescape(rawID); err != nil {
		return Entry{}, fmt.Errorf("identifier: %w", err)
	}
	if e.ID == "" {
		return Entry{}, errors.New("empty identifier")
	}

	out, need, hasNeed := strings.Cut(rest, needSep)
	if out != "" {
		if out[0] != ' ' {
			return Entry{}, errors.New("no space after the identifier")
		}
		out = out[1:]
	}
	if e.Output, err = Unescape(out); err != nil {
		return Entry{}, fmt.Errorf("output: %w", err)
	}
	if hasNeed {
		if e.Need, err = Unescape(need); err != nil {
			return Entry{}, fmt.Errorf("need: %w", err)
		}
	}
	return e, nil
}

// bracketed splits "[x]rest" into x and rest.
func bracketed(s, what string) (inner, rest string, err error) {
	if !strings.HasPrefix(s, "[") {
		return "", "", fmt.Errorf("missing [%s]", what)
	}
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return "", "", fmt.Errorf("unterminated [%s]", what)
	}
	return s[1:end], s[end+1:], nil
}

// legacyStatus maps the old format's task statuses, and their common
// synonyms, onto agent statuses.
func legacyStatus(s string) (Status, bool) {
	switch strings.ToLower(s) {
	case "start", "started", "new", "created":
		return StatusStart, true
	case "active", "running", "in-progress", "in_progress", "working":
		return StatusActive, true
	case "finish", "finished", "done", "complete", "completed":
		return StatusFinish, true
	case "verified", "success", "succeeded":
		return StatusVerified, true
	case "retry", "retrying":
		return StatusRetry, true
	case "failed", "fail", "error", "blocked":
		return StatusFailed, true
	}
	return "", false
}

// parseLegacy reads "[source] [task-id:status] description" after the
// timestamp (seed 002: read old, write new). A lifecycle status, or one of
// its old synonyms, makes an agent entry; any other line becomes an event
// from its source (or "system" when the source is not a source name), with
// a non-lifecycle status kept in front of the output as "status: ".
// Descriptions were never escaped, so they are taken verbatim.
func parseLegacy(ts, rest string) (Entry, error) {
	var t time.Time
	var err error
	// Timestamps without a zone are read as UTC.
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999"} {
		if t, err = time.Parse(layout, ts); err == nil {
			break
		}
	}
	if err != nil {
		return Entry{}, fmt.Errorf("bad timestamp %q", ts)
	}
	src, rest, err := bracketed(rest, "source")
	if err != nil {
		return Entry{}, err
	}
	if !strings.HasPrefix(rest, " [") {
		return Entry{}, errors.New("missing [task-id:status]")
	}
	tag, desc, err := bracketed(rest[1:], "task-id:status")
	if err != nil {
		return Entry{}, err
	}
	if desc != "" {
		if desc[0] != ' ' {
			return Entry{}, errors.New("no space after [task-id:status]")
		}
		desc = desc[1:]
	}
	id, st := tag, ""
	if i := strings.LastIndexByte(tag, ':'); i >= 0 {
		id, st = tag[:i], tag[i+1:]
	}
	if id == "" {
		return Entry{}, errors.New("empty task id")
	}
	e := Entry{Time: t.UTC(), ID: id, Output: desc, Legacy: true}
	if status, ok := legacyStatus(st); ok {
		e.Kind, e.Status = KindAgent, status
		return e, nil
	}
	e.Kind, e.Source = KindEvent, Source(strings.ToLower(src))
	if !sourcePattern().MatchString(string(e.Source)) {
		e.Source = SourceSystem
	}
	if st != "" {
		e.Output = st + ": " + desc
	}
	return e, nil
}

func joinStatuses(ss []Status) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = string(s)
	}
	return strings.Join(parts, ", ")
}
