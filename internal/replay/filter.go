// Package replay walks a repository's history as it stood before each
// commit (seed 001 §16.4): Replay checks out each commit's parent in a
// scratch worktree and indexes it incrementally, Filter keeps the commits
// worth learning from, and TaskText makes a commit message a task.
// bootstrap builds training pairs from the steps, learn the ranking
// weights; neither needs the other.
package replay

import (
	"strings"
	"unicode"

	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/index"
	"github.com/cra-dev/cra/internal/lazyre"
	"github.com/cra-dev/cra/internal/retrieve"
)

// Why a commit is skipped (seed 001 §16.4.2), in the order Filter.Check
// tries them: the first that applies is the one counted.
const (
	SkipMerge          = "merge"           // conflates several changes
	SkipRoot           = "root"            // no parent to check out
	SkipNoFiles        = "no_files"        // changes nothing (an empty commit, a merge's own)
	SkipTooManyFiles   = "too_many_files"  // more than MaxFiles files
	SkipTooManyLines   = "too_many_lines"  // MaxLines or more lines changed
	SkipBinary         = "binary"          // a binary file: no lines to learn from
	SkipNotIndexed     = "not_indexed"     // a file the indexer skips (vendor/, a lockfile, …)
	SkipNoCode         = "no_code"         // no file in a language cra parses
	SkipShortMessage   = "short_message"   // fewer than MinWords words
	SkipGenericMessage = "generic_message" // "fix", "wip", "misc" and their kin
)

// SkipReasons lists the reasons in the order they are tried.
var SkipReasons = []string{SkipMerge, SkipRoot, SkipNoFiles, SkipTooManyFiles, SkipTooManyLines,
	SkipBinary, SkipNotIndexed, SkipNoCode, SkipShortMessage, SkipGenericMessage}

// Filter keeps the commits worth learning from (seed 001 §16.4.2): not
// merges; 1 to MaxFiles files and fewer than MaxLines changed lines;
// every file one the indexer reads as text, at least one in a language it
// parses (Python, TypeScript, JavaScript, Go); a descriptive message.
type Filter struct {
	MaxFiles int `json:"max_files"`
	MaxLines int `json:"max_lines"` // changed lines (insertions + deletions) must stay below it
	// MinWords is the fewest words the subject (less a conventional-commit
	// prefix such as "fix(core): ") may have.
	MinWords int `json:"min_words"`
	// Generic are the words a message made of nothing else does not
	// describe a change ("fix typo", "wip", "misc fixes").
	Generic []string `json:"generic_words"`
}

// DefaultFilter is seed 001 §16.4.2's: 1–5 files, under 200 lines, a
// subject of four words or more that says more than "fix" or "wip".
func DefaultFilter() Filter {
	return Filter{MaxFiles: 5, MaxLines: 200, MinWords: 4, Generic: []string{
		"fix", "fixes", "fixed", "fixing", "wip", "misc", "miscellaneous", "minor", "typo", "typos",
		"update", "updates", "updated", "cleanup", "clean", "up", "tweak", "tweaks", "stuff", "changes",
		"change", "small", "some", "more", "various", "bug", "bugs", "test", "tests", "lint", "format",
		"formatting", "style", "refactor", "and", "a", "the", "of", "to", "in", "for",
	}}
}

// Check returns why c is skipped, or "" to keep it.
func (f Filter) Check(c gitx.Commit) string {
	switch {
	case len(c.Parents) > 1:
		return SkipMerge
	case len(c.Parents) == 0:
		return SkipRoot
	case len(c.Files) == 0:
		return SkipNoFiles
	case len(c.Files) > f.MaxFiles:
		return SkipTooManyFiles
	}
	lines, binary := 0, false
	for _, fc := range c.Files {
		if fc.Insertions < 0 {
			binary = true
			continue
		}
		lines += fc.Insertions + fc.Deletions
	}
	if lines >= f.MaxLines {
		return SkipTooManyLines
	}
	if binary {
		return SkipBinary
	}
	code := false
	for _, fc := range c.Files {
		parse, skip := index.Classify(fc.Path)
		if skip == index.SkipBinary {
			return SkipBinary
		}
		if skip != "" {
			return SkipNotIndexed
		}
		code = code || parse != ""
	}
	if !code {
		return SkipNoCode
	}
	words := messageWords(c.Message)
	if len(words) < f.MinWords {
		return SkipShortMessage
	}
	for _, w := range words {
		if !containsFold(f.Generic, w) {
			return ""
		}
	}
	return SkipGenericMessage
}

// messageWords are the words of a message's subject, less its
// conventional-commit prefix ("fix(core): "), split at what is neither a
// letter nor a digit nor a code name's punctuation.
func messageWords(message string) []string {
	subject, _, _ := strings.Cut(strings.TrimSpace(message), "\n")
	subject = retrieve.StripScope(subject)
	return strings.FieldsFunc(subject, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("_.`()/-", r)
	})
}

func containsFold(list []string, w string) bool {
	w = strings.Trim(w, "`().-/")
	for _, x := range list {
		if strings.EqualFold(x, w) {
			return true
		}
	}
	return w == ""
}

var trailerRe = lazyre.New(`(?m)^[ \t]*[A-Za-z][A-Za-z-]*-[Bb]y:[^\n]*$`)

// TaskText is a commit message as a task: without its trailers
// (Signed-off-by: …, Co-authored-by: …).
func TaskText(message string) string {
	return strings.TrimSpace(trailerRe().ReplaceAllString(message, ""))
}
