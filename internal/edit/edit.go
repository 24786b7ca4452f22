// Package edit reads and applies SEARCH/REPLACE edit blocks, the single
// output format of code generation (seed 001 §19; EditBlock in §18).
//
// A coding model answers with blocks, each the file's path alone on a
// line, then
//
//	<<<<<<< SEARCH
//	lines to find
//	=======
//	lines to put instead
//	>>>>>>> REPLACE
//
// usually inside a ``` fence; or, instead, with one NEED_CONTEXT request
// naming what it is missing (seed 001 §13). Parse reads the blocks of a
// reply (ParseMarked also finds the NEED_CONTEXT line, whose request
// agent.ParseReply reads), Format writes blocks back, and a reply that breaks the format is
// a *FormatError whose message is written for the model. An empty SEARCH
// creates a file.
//
// Apply finds each SEARCH in its file by a ladder: exact, then with one
// consistent indentation offset, then with "..." lines standing for
// unchanged text, each rung requiring exactly one match. A block that
// fails leaves its file alone and says why, with the closest lines of the
// file, so the model can correct it; a block already in the file is
// reported as such, not applied twice.
//
// Edits stay inside the repository (seed 001 §17): ValidPath refuses
// absolute paths, "..", backslashes, .git and cra's state directory, and
// Apply follows a symlink only while it leads to a place inside the root.
// A refused path is a *PathError on its block, never a write, and never
// the error of the whole Apply: a path through a file, a symlink that
// leads nowhere or a name the file system refuses fails its block alone,
// so the other blocks of the reply apply and the model hears why. Changed
// files are written whole, with atomicfile, so a reader or a crash sees
// the old content or the new.
package edit

import (
	"fmt"
	"strings"
)

// Block is one SEARCH/REPLACE edit (seed 001 §18, §19): lines to find
// in a file and the lines that take their place.
type Block struct {
	// Path is the file, relative to the repository, with forward slashes.
	Path string `json:"path"`
	// Search and Replace are whole lines, each ending in "\n". An empty
	// (or blank) Search creates the file.
	Search  string `json:"search"`
	Replace string `json:"replace"`
	// Line is the 1-based line of the block's SEARCH marker in the reply.
	Line int `json:"line"`
}

// The markers of an edit block. Small models vary the length of the
// runs, so 5 to 9 characters are accepted, as aider does.
func isSearchMarker(l string) bool  { return isMarker(l, '<', "SEARCH") }
func isDividerMarker(l string) bool { return isMarker(l, '=', "") }
func isReplaceMarker(l string) bool { return isMarker(l, '>', "REPLACE") }

func isMarker(l string, c byte, word string) bool {
	l = strings.TrimRight(l, " \t\r")
	n := 0
	for n < len(l) && l[n] == c {
		n++
	}
	if n < 5 || n > 9 {
		return false
	}
	rest := l[n:]
	if word == "" {
		return rest == ""
	}
	rest = strings.TrimPrefix(rest, " ")
	return rest == word || (c == '<' && rest == word+">")
}

// needMarker reports whether a line opens a NEED_CONTEXT request:
// NEED_CONTEXT alone, as a fence's info string, or before its JSON.
func needMarker(l string) bool {
	t, ok := strings.CutPrefix(strings.TrimLeft(l, " \t`*#"), "NEED_CONTEXT")
	return ok && (t == "" || strings.ContainsRune(" \t`*:{", rune(t[0])))
}

// FormatError is a reply that does not follow the edit-block format; the
// message is written for the model, which gets it back.
type FormatError struct {
	Line int // 1-based line of the reply; 0 for the reply as a whole
	Msg  string
}

func (e *FormatError) Error() string {
	if e.Line == 0 {
		return e.Msg
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
}

// Parse reads the edit blocks of a reply. Each block is the file's path
// alone on a line, usually a ``` fence, then
//
//	<<<<<<< SEARCH
//	lines to find
//	=======
//	lines to put instead
//	>>>>>>> REPLACE
//
// A block without a path line of its own edits the file of the block
// before it. Prose and fences between blocks are ignored; a marker out of
// place is a *FormatError. The reply comes without the thinking a
// reasoning model puts before its answer: the caller strips it
// (llm.StripThink), as it holds the model's reply.
func Parse(reply string) ([]Block, error) {
	blocks, _, err := ParseMarked(reply)
	return blocks, err
}

// ParseMarked is Parse that also returns the 1-based line of the first
// NEED_CONTEXT marker outside the blocks, or 0: where a reply asking for
// more context (agent.ParseReply) puts its request.
func ParseMarked(reply string) ([]Block, int, error) {
	lines := strings.Split(reply, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	var (
		blocks    []Block
		prevPath  string
		candidate string
		needLine  int
	)
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case isSearchMarker(l):
			start := i + 1
			path := candidate
			if path == "" {
				path = prevPath
			}
			if path == "" {
				return nil, 0, &FormatError{start, "no file path before <<<<<<< SEARCH: put the file's path alone on the line above the block"}
			}
			var search, replace []string
			for i++; i < len(lines) && !isDividerMarker(lines[i]); i++ {
				if isSearchMarker(lines[i]) || isReplaceMarker(lines[i]) {
					return nil, 0, &FormatError{i + 1, fmt.Sprintf("the block that starts at line %d has no ======= line between SEARCH and REPLACE", start)}
				}
				search = append(search, lines[i])
			}
			if i == len(lines) {
				return nil, 0, &FormatError{start, "the block has no ======= line after its SEARCH lines"}
			}
			for i++; i < len(lines) && !isReplaceMarker(lines[i]); i++ {
				if isSearchMarker(lines[i]) || isDividerMarker(lines[i]) {
					return nil, 0, &FormatError{i + 1, fmt.Sprintf("the block that starts at line %d has no >>>>>>> REPLACE line", start)}
				}
				replace = append(replace, lines[i])
			}
			if i == len(lines) {
				return nil, 0, &FormatError{start, "the block has no >>>>>>> REPLACE line at its end"}
			}
			blocks = append(blocks, Block{Path: path, Search: joinLines(search), Replace: joinLines(replace), Line: start})
			prevPath, candidate = path, ""
		case isDividerMarker(l), isReplaceMarker(l):
			return nil, 0, &FormatError{i + 1, fmt.Sprintf("%s outside a block: every block starts with <<<<<<< SEARCH", strings.TrimSpace(l))}
		case needMarker(l):
			if needLine == 0 {
				needLine = i + 1
			}
		default:
			t := strings.TrimSpace(l)
			if t == "" || strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
				continue
			}
			if p := pathOfLine(t); p != "" {
				candidate = p
			}
		}
	}
	return blocks, needLine, nil
}

// joinLines joins lines into text where every line ends in "\n".
func joinLines(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// pathOfLine returns the file path a line names, or "" for prose. Models
// decorate the path: `calc.go`, **calc.go**, # calc.go, File: calc.go,
// calc.go:.
func pathOfLine(t string) string {
	s := strings.TrimSpace(strings.TrimLeft(t, "#"))
	// "File: b.py", and in bold: "**File: b.py**", "**File:** `b.py`".
	// (Not underscores: __init__.py and _config.yml begin with them.)
	bold := strings.TrimSpace(strings.TrimLeft(s, "*"))
	for _, p := range []string{"file:", "filename:", "path:"} {
		if len(bold) >= len(p) && strings.EqualFold(bold[:len(p)], p) {
			s = strings.TrimSpace(strings.TrimLeft(bold[len(p):], "*"))
		}
	}
	s = strings.Trim(s, "`*\"'")
	s = strings.TrimSuffix(s, ":")
	s = strings.Trim(s, "`*\"'")
	if s == "" || len(s) > 512 || strings.ContainsAny(s, " \t") {
		return ""
	}
	s = strings.ReplaceAll(s, "\\", "/")
	for strings.HasPrefix(s, "./") {
		s = s[2:]
	}
	return s
}

// Format writes blocks in the format Parse reads.
func Format(blocks []Block) string {
	var b strings.Builder
	for i, e := range blocks {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(e.Path + "\n```\n<<<<<<< SEARCH\n" + e.Search + "=======\n" + e.Replace + ">>>>>>> REPLACE\n```\n")
	}
	return b.String()
}
