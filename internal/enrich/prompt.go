package enrich

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/llm"
)

// SystemPrompt is the system prompt of every enrichment call.
const SystemPrompt = `You are a senior engineer describing one source file of a repository for a code search index.
Reply with one JSON object and nothing else: no prose, no code fences.`

// schema is the reply format the prompt asks for.
const schema = `{
  "purpose": "one sentence: what this file is for",
  "module": "the module or package it belongs to",
  "domain": "the application area, one to three words (e.g. authentication, billing, storage)",
  "concepts": ["3 to 8 short noun phrases for the ideas it deals with"],
  "public_api_surface": ["names other files use: exported functions, classes, types, constants"],
  "complexity_notes": "what is subtle or easy to break here, or an empty string"
}`

// charsPerToken estimates tokens from characters, on the safe side for
// code (seed 001 §7.3 allows an estimate): a prompt never outgrows the
// window because of the estimate.
const charsPerToken = 3

// Shares of the prompt's character budget for the symbol list and the
// docstrings; the head of the file gets the rest.
const (
	symbolShare    = 4 // 1/4
	docstringShare = 5 // 1/5
	maxDocstring   = 400
)

// promptBudget is the characters a prompt may have: the window less the
// reply, the system prompt and room for one format retry (the bad reply
// and the correction).
func (e *Enricher) promptBudget() int {
	tokens := e.model.ContextWindow - 2*e.MaxReplyTokens - len(SystemPrompt)/charsPerToken - 200
	return max(tokens*charsPerToken, 1000)
}

// prompt builds the user prompt of a file: its path, symbols, docstrings
// and the head of its content, bounded by the reasoning model's window
// (seed 001 §3.3).
func (e *Enricher) prompt(f kb.File, symbols []kb.Symbol, docs []kb.Docstring, content []byte) string {
	budget := e.promptBudget()
	var b strings.Builder
	fmt.Fprintf(&b, "Describe this file as JSON with exactly these keys:\n%s\n\nPath: %s\nLanguage: %s\nLines: %d\n", schema, f.Path, f.Language, f.Lines)

	if len(symbols) > 0 {
		var s strings.Builder
		limit := budget / symbolShare
		for i, sym := range symbols {
			line := fmt.Sprintf("- %s %s (lines %d-%d)", sym.Kind, sym.QualifiedName(), sym.StartLine, sym.EndLine)
			if sym.Signature != "" {
				line += ": " + oneLine(sym.Signature, 160)
			}
			if s.Len()+len(line)+1 > limit {
				fmt.Fprintf(&s, "- … and %d more\n", len(symbols)-i)
				break
			}
			s.WriteString(line + "\n")
		}
		b.WriteString("\nSymbols:\n" + s.String())
	}
	if len(docs) > 0 {
		var s strings.Builder
		limit := budget / docstringShare
		for i, d := range docs {
			name := d.Symbol
			if name == "" {
				name = "(module)"
			}
			line := fmt.Sprintf("- %s: %s", name, oneLine(d.Content, maxDocstring))
			if s.Len()+len(line)+1 > limit {
				fmt.Fprintf(&s, "- … and %d more\n", len(docs)-i)
				break
			}
			s.WriteString(line + "\n")
		}
		b.WriteString("\nDocstrings:\n" + s.String())
	}
	head, lines, cut := headOf(content, e.HeadLines, budget-b.Len()-100)
	if lines > 0 {
		what := fmt.Sprintf("the whole file, %d lines", lines)
		if cut {
			what = fmt.Sprintf("the first %d lines", lines)
		}
		fmt.Fprintf(&b, "\nContent (%s):\n```\n%s\n```\n", what, strings.TrimRight(head, "\n"))
	}
	return b.String()
}

// headOf returns the first lines of content, at most maxLines and
// maxChars, whole lines only, and whether it cut anything.
func headOf(content []byte, maxLines, maxChars int) (string, int, bool) {
	if maxChars <= 0 || maxLines <= 0 {
		return "", 0, len(content) > 0
	}
	var b bytes.Buffer
	lines := 0
	rest := content
	for len(rest) > 0 && lines < maxLines {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i+1]
		}
		if b.Len()+len(line) > maxChars {
			break
		}
		b.Write(line)
		rest = rest[len(line):]
		lines++
	}
	return strings.ToValidUTF8(b.String(), "\uFFFD"), lines, len(rest) > 0
}

// oneLine flattens s to one line of at most n bytes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// formatRetryPrompt answers a malformed reply.
func formatRetryPrompt(err error) string {
	return fmt.Sprintf("That reply is not usable: %v\nReply again with only the JSON object, with exactly these keys:\n%s", err, schema)
}

// Metadata is a validated enrichment reply.
type Metadata struct {
	Purpose          string   `json:"purpose"`
	Module           string   `json:"module"`
	Domain           string   `json:"domain"`
	Concepts         []string `json:"concepts"`
	PublicAPISurface []string `json:"public_api_surface"`
	ComplexityNotes  string   `json:"complexity_notes"`
}

// Bounds of a valid reply: a small model that rambles is cut, not trusted.
const (
	maxListItems = 20
	maxItemLen   = 200
	maxTextLen   = 1000
)

// ParseReply extracts and validates the JSON object of an enrichment
// reply: purpose, module and domain are non-empty strings, concepts and
// public_api_surface lists of strings (a comma-separated string is read as
// a list; null as empty), complexity_notes a string or null. Items are
// trimmed and deduplicated, lists and texts bounded; other keys are
// ignored.
func ParseReply(reply string) (Metadata, error) {
	raw, err := llm.ExtractJSON(reply)
	if err != nil {
		return Metadata{}, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return Metadata{}, fmt.Errorf("reply is not a JSON object: %w", err)
	}
	var m Metadata
	var problems []string
	text := func(key string, required bool) string {
		v, ok := obj[key]
		if !ok {
			problems = append(problems, "missing key "+key)
			return ""
		}
		if string(v) == "null" && !required {
			return ""
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			problems = append(problems, key+" is not a string")
			return ""
		}
		s = oneLine(s, maxTextLen)
		if required && s == "" {
			problems = append(problems, key+" is empty")
		}
		return s
	}
	list := func(key string) []string {
		v, ok := obj[key]
		if !ok {
			problems = append(problems, "missing key "+key)
			return nil
		}
		var items []string
		var s string
		switch {
		case string(v) == "null":
		case json.Unmarshal(v, &items) == nil:
		case json.Unmarshal(v, &s) == nil:
			items = strings.Split(s, ",")
		default:
			problems = append(problems, key+" is not a list of strings")
			return nil
		}
		out := []string{}
		seen := map[string]bool{}
		for _, it := range items {
			it = oneLine(it, maxItemLen)
			if it == "" || seen[strings.ToLower(it)] {
				continue
			}
			seen[strings.ToLower(it)] = true
			out = append(out, it)
			if len(out) == maxListItems {
				break
			}
		}
		return out
	}
	m.Purpose = text("purpose", true)
	m.Module = text("module", true)
	m.Domain = text("domain", true)
	m.Concepts = list("concepts")
	m.PublicAPISurface = list("public_api_surface")
	m.ComplexityNotes = text("complexity_notes", false)
	if len(problems) > 0 {
		sort.Strings(problems)
		return Metadata{}, fmt.Errorf("invalid enrichment: %s", strings.Join(problems, "; "))
	}
	return m, nil
}
