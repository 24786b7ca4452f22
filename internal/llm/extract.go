package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrNoJSON is returned by ExtractJSON when a reply holds no JSON object.
var ErrNoJSON = errors.New("no JSON object in the reply")

// maxJSONStarts bounds how many '{' ExtractJSON tries as the start of an
// object, so that a long reply full of braces costs linear time.
const maxJSONStarts = 64

// ExtractJSON returns the JSON object in a model's reply. Small models
// wrap it even in JSON mode, so it looks, in order, at the whole reply,
// then, after dropping <think>…</think> blocks, at the rest, its ```
// fenced blocks and each balanced {...} in it; each candidate is taken as is or with
// its trailing commas removed. The first that is a valid JSON object
// wins. A reply without one is ErrNoJSON (seed 001 §15: the caller records
// the raw reply with the error).
func ExtractJSON(reply string) (json.RawMessage, error) {
	try := func(cand string) json.RawMessage {
		cand = strings.TrimSpace(cand)
		if !strings.HasPrefix(cand, "{") {
			return nil
		}
		if json.Valid([]byte(cand)) {
			return json.RawMessage(cand)
		}
		if fixed := removeTrailingCommas(cand); fixed != cand && json.Valid([]byte(fixed)) {
			return json.RawMessage(fixed)
		}
		return nil
	}
	if obj := try(reply); obj != nil {
		return obj, nil
	}
	text := StripThink(reply)
	if obj := try(text); obj != nil {
		return obj, nil
	}
	for _, block := range fencedBlocks(text) {
		if obj := try(block); obj != nil {
			return obj, nil
		}
	}
	starts := 0
	for i := 0; i < len(text) && starts < maxJSONStarts; i++ {
		if text[i] != '{' {
			continue
		}
		starts++
		end := matchBrace(text, i)
		if end < 0 {
			continue
		}
		if obj := try(text[i : end+1]); obj != nil {
			return obj, nil
		}
	}
	return nil, fmt.Errorf("%w: %s", ErrNoJSON, excerpt(reply, 200))
}

// StripThink blanks the <think>…</think> blocks reasoning models put
// before their answer, keeping their line breaks so that line numbers
// still point into the reply; an unclosed one is left alone. Only the
// blocks that lead the reply are thinking: a tag further on belongs to
// the answer (code that handles a reasoning model's output, a JSON
// string that quotes one).
func StripThink(s string) string {
	at := 0
	for {
		rest := strings.TrimLeft(s[at:], " \t\r\n")
		if !strings.HasPrefix(rest, "<think>") {
			return s
		}
		i := len(s) - len(rest)
		j := strings.Index(s[i:], "</think>")
		if j < 0 {
			return s
		}
		end := i + j + len("</think>")
		s = s[:i] + strings.Repeat("\n", strings.Count(s[i:end], "\n")) + s[end:]
		at = i
	}
}

// fencedBlocks returns the bodies of the ``` blocks of s, without the
// info string (```json) of the opening fence.
func fencedBlocks(s string) []string {
	var blocks []string
	for {
		i := strings.Index(s, "```")
		if i < 0 {
			return blocks
		}
		rest := s[i+3:]
		// The info string runs to the end of the line.
		if nl := strings.IndexByte(rest, '\n'); nl >= 0 && !strings.ContainsAny(rest[:nl], "{`") {
			rest = rest[nl+1:]
		}
		j := strings.Index(rest, "```")
		if j < 0 {
			return append(blocks, rest) // an unclosed fence: the reply was cut
		}
		blocks = append(blocks, rest[:j])
		s = rest[j+3:]
	}
}

// matchBrace returns the index of the '}' closing the '{' at s[i], minding
// JSON strings, or -1.
func matchBrace(s string, i int) int {
	depth := 0
	var js jsonStrings
	for j := i; j < len(s); j++ {
		c := s[j]
		if js.next(c) {
			continue
		}
		switch c {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				if c == '}' {
					return j
				}
				return -1
			}
			if depth < 0 {
				return -1
			}
		}
	}
	return -1
}

// jsonStrings follows a byte-by-byte walk over JSON text and knows whether
// it is inside a string.
type jsonStrings struct{ in, escaped bool }

// next takes the walk's next byte and reports whether it belongs to a
// string, its quotes included.
func (js *jsonStrings) next(c byte) bool {
	switch {
	case js.in:
		switch {
		case js.escaped:
			js.escaped = false
		case c == '\\':
			js.escaped = true
		case c == '"':
			js.in = false
		}
		return true
	case c == '"':
		js.in = true
		return true
	}
	return false
}

// removeTrailingCommas drops each comma that, outside strings, is followed
// only by blanks before a '}' or ']'.
func removeTrailingCommas(s string) string {
	var b bytes.Buffer
	b.Grow(len(s))
	var js jsonStrings
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !js.next(c) && c == ',' {
			j := i + 1
			for j < len(s) && strings.IndexByte(" \t\r\n", s[j]) >= 0 {
				j++
			}
			if j < len(s) && (s[j] == '}' || s[j] == ']') {
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// excerpt shortens s for an error message.
func excerpt(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return fmt.Sprintf("%q", s)
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return fmt.Sprintf("%q…", s[:cut])
}
