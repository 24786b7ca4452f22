package bootstrap

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cra-dev/cra/internal/agent"
	"github.com/cra-dev/cra/internal/edit"
	"github.com/cra-dev/cra/internal/gitx"
)

// change is one file of a commit: its content before and after, and the
// hunks between them.
type change struct {
	gitx.FileHunks
	Old, New []byte // nil when the file does not exist on that side
}

// Path is the file's path: the new one, or the old one of a deletion.
func (c change) Path() string {
	if c.NewPath != "" {
		return c.NewPath
	}
	return c.OldPath
}

// errNotEditable is a change SEARCH/REPLACE blocks cannot make.
var errNotEditable = errors.New("not expressible as edit blocks")

// maxContext bounds the context lines a block takes to match once.
const maxContext = 12

// mergeGap joins hunks this close (in unchanged lines) into one block.
const mergeGap = 2

// editBlocks returns the SEARCH/REPLACE blocks that turn every file of
// changes from its old content into its new one, as a coding model should
// write them (agent.CodeSystem): a new file is one block with an empty
// SEARCH; a change is one block per hunk (hunks a line or two apart are
// one), its SEARCH the changed lines and only as many lines around them
// as it takes to match once in the file as the blocks before left it.
// Each block is checked with edit.ApplyText as it is made. Deleted files,
// renames, binary files and changes of mode have no blocks: the error
// wraps errNotEditable.
func editBlocks(changes []change) ([]edit.Block, error) {
	var out []edit.Block
	for _, c := range changes {
		switch {
		case c.Binary || c.ModeChanged:
			return nil, fmt.Errorf("%s: binary or mode change: %w", c.Path(), errNotEditable)
		case c.NewPath == "":
			return nil, fmt.Errorf("%s is deleted: %w", c.OldPath, errNotEditable)
		case c.OldPath == "":
			if len(c.New) == 0 {
				return nil, fmt.Errorf("%s is created empty: %w", c.NewPath, errNotEditable)
			}
			out = append(out, edit.Block{Path: c.NewPath, Replace: string(c.New)})
			continue
		}
		bs, err := fileBlocks(c)
		if err != nil {
			return nil, err
		}
		out = append(out, bs...)
	}
	return out, nil
}

// fileBlocks is editBlocks for one changed file.
func fileBlocks(c change) ([]edit.Block, error) {
	cur := splitLines(string(c.Old))
	newLines := splitLines(string(c.New))
	var out []edit.Block
	delta := 0 // lines the blocks so far added
	for _, h := range mergeHunks(c.Hunks) {
		// Where the hunk's old lines start in cur, 0-based; an insertion
		// goes after line OldStart.
		at := h.OldStart - 1 + delta
		if h.OldLines == 0 {
			at = h.OldStart + delta
		}
		from := h.NewStart - 1
		if h.NewLines == 0 {
			from = h.NewStart
		}
		if at < 0 || at+h.OldLines > len(cur) || from < 0 || from+h.NewLines > len(newLines) {
			return nil, fmt.Errorf("%s: hunk %+v out of range: %w", c.NewPath, h, errNotEditable)
		}
		repl := newLines[from : from+h.NewLines]
		next := splice(cur, at, h.OldLines, repl)
		want := strings.Join(next, "")
		block, ok := uniqueBlock(c.NewPath, cur, at, h.OldLines, repl, want)
		if !ok {
			return nil, fmt.Errorf("%s: no SEARCH within %d lines of context matches once: %w", c.NewPath, maxContext, errNotEditable)
		}
		out = append(out, block)
		cur = next
		delta += h.NewLines - h.OldLines
	}
	if strings.Join(cur, "") != string(c.New) {
		return nil, fmt.Errorf("%s: the blocks do not make the new content: %w", c.NewPath, errNotEditable)
	}
	return out, nil
}

// uniqueBlock finds the smallest context around cur[at:at+n] that makes a
// block edit.ApplyText applies to cur, giving want.
func uniqueBlock(path string, cur []string, at, n int, repl []string, want string) (edit.Block, bool) {
	text := strings.Join(cur, "")
	minCtx := 0
	if n == 0 {
		minCtx = 1 // an insertion needs an anchor
	}
	for k := minCtx; k <= maxContext; k++ {
		// Lines above alone, then below alone, then both: the fewest.
		sides := [][2]int{{k, 0}, {0, k}, {k, k}}
		if k == 0 {
			sides = sides[:1]
		}
		for _, side := range sides {
			before, after := min(side[0], at), min(side[1], len(cur)-at-n)
			if before+n+after == 0 {
				continue
			}
			search := strings.Join(cur[at-before:at+n+after], "")
			replace := strings.Join(cur[at-before:at], "") + strings.Join(repl, "") + strings.Join(cur[at+n:at+n+after], "")
			b := edit.Block{Path: path, Search: search, Replace: replace}
			if got, r := edit.ApplyText(text, b); r.Status == edit.StatusApplied && r.Rung == edit.RungExact && got == want {
				return b, true
			}
		}
	}
	return edit.Block{}, false
}

// mergeHunks joins hunks at most mergeGap unchanged lines apart.
func mergeHunks(hs []gitx.Hunk) []gitx.Hunk {
	var out []gitx.Hunk
	for _, h := range hs {
		if len(out) > 0 {
			// Only hunks that change old lines merge: an insertion's
			// OldStart is the line before it.
			p := &out[len(out)-1]
			gap := h.OldStart - (p.OldStart + p.OldLines) // unchanged lines between
			if p.OldLines > 0 && h.OldLines > 0 && gap >= 0 && gap <= mergeGap {
				// git gives a hunk without new lines the line before them.
				pNew, hNew := firstNew(*p), firstNew(h)
				p.OldLines = h.OldStart + h.OldLines - p.OldStart
				p.NewStart, p.NewLines = pNew, hNew+h.NewLines-pNew
				if p.NewLines == 0 {
					p.NewStart--
				}
				continue
			}
		}
		out = append(out, h)
	}
	return out
}

// firstNew is the 1-based line where a hunk's new lines start (would
// start, for a deletion).
func firstNew(h gitx.Hunk) int {
	if h.NewLines == 0 {
		return h.NewStart + 1
	}
	return h.NewStart
}

// splitLines splits text into lines that keep their "\n"; the last line
// may lack it.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

func splice(lines []string, at, n int, with []string) []string {
	out := make([]string, 0, len(lines)-n+len(with))
	out = append(out, lines[:at]...)
	out = append(out, with...)
	return append(out, lines[at+n:]...)
}

// reproduce applies a reply's edit blocks to the old content of the
// changed files, in a scratch directory as the parent commit has them,
// with edit.Apply as cra applies a coding model's reply, and compares
// every file with the commit's. It returns nil when they are the same
// byte for byte.
func reproduce(reply string, changes []change) error {
	r, err := agent.ParseReply(reply)
	if err != nil {
		return fmt.Errorf("the reply does not parse: %w", err)
	}
	dir, err := os.MkdirTemp("", "cra-bootstrap-verify-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for _, c := range changes {
		if c.OldPath == "" {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(c.OldPath))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, c.Old, 0o644); err != nil {
			return err
		}
	}
	results, _, err := edit.Apply(dir, r.Edits)
	if err != nil {
		return err
	}
	for _, res := range results {
		if res.Status != edit.StatusApplied && res.Status != edit.StatusCreated {
			return fmt.Errorf("block %d (%s): %s %s", res.Block, res.Path, res.Status, res.Message)
		}
	}
	for _, c := range changes {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(c.Path())))
		if c.NewPath == "" {
			if err == nil {
				return fmt.Errorf("%s should be deleted", c.OldPath)
			}
			continue
		}
		if err != nil {
			return err
		}
		if !bytes.Equal(got, c.New) {
			return fmt.Errorf("%s differs from the commit's", c.NewPath)
		}
	}
	return nil
}
