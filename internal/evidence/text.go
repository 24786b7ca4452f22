package evidence

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cra-dev/cra/internal/gitx"
)

// Bounds of Text.
const (
	maxText      = 3000 // bytes of the whole block
	maxTextLine  = 300  // bytes of one line
	maxCommand   = 120  // bytes of a validation command
	maxTextNames = 10   // names in a blocker's list
)

// Blockers says why the evidence does not allow a full_complete verdict,
// one short sentence each: the run failed; validation failed, or was
// configured but did not run again; the branch has no diff (unless the
// task expects no change) or none could be read; a test file was
// deleted; assertions were removed from a test file. None means the
// evidence allows full_complete. A project without validation commands
// is not blocked for that: there is nothing to run.
func (e *Evidence) Blockers(noChangeExpected bool) []string {
	out := []string{}
	if s := e.Run.failure(); s != "" {
		out = append(out, "the run failed: "+s)
	}
	switch {
	case !e.ValidationConfigured:
	case e.Validation == nil:
		reason := e.ValidationSkipped
		if reason == "" {
			reason = "no result was recorded"
		}
		out = append(out, "validation is configured but did not run again: "+reason)
	default:
		failed := false
		for _, c := range e.Validation.Checks {
			if !c.Passed {
				failed = true
				out = append(out, fmt.Sprintf("validation %s failed: %s", c.Name, checkResult(c.TimedOut, c.Timeout.String(), c.ExitCode)))
			}
		}
		if !failed && !e.Validation.Success {
			out = append(out, "validation failed")
		}
	}
	switch {
	case e.Diff.Unavailable != "":
		out = append(out, "the branch's diff cannot be read: "+e.Diff.Unavailable)
	case e.Diff.Empty && !noChangeExpected:
		s := "the branch changes nothing against its base " + short(e.Diff.Base)
		if n := len(e.Uncommitted); n > 0 {
			s += fmt.Sprintf(" (%d uncommitted path(s) in the worktree)", n)
		}
		out = append(out, s)
	}
	if len(e.DeletedTests) > 0 {
		out = append(out, "test file(s) deleted: "+names(e.DeletedTests, maxTextNames))
	}
	for _, w := range e.WeakenedTests {
		if w.Removed > w.Added {
			out = append(out, fmt.Sprintf("assertions removed from %s: %d removed, %d added", w.Path, w.Removed, w.Added))
		}
		if w.SkipsAdded > 0 {
			out = append(out, fmt.Sprintf("tests skipped in %s: %d more skip(s) or .only", w.Path, w.SkipsAdded))
		}
	}
	return out
}

// failure describes a run that did not exit 0, or is "".
func (r Run) failure() string {
	switch {
	case r.TimedOut:
		return "timed out"
	case r.ExitCode != nil && *r.ExitCode != 0:
		return "exit " + strconv.Itoa(*r.ExitCode)
	case r.ExitCode == nil:
		return "killed or never started (no exit code)"
	case r.Failed:
		return "exit 0 but recorded as failed"
	}
	return ""
}

func checkResult(timedOut bool, timeout string, exit int) string {
	if timedOut {
		return "timed out after " + timeout
	}
	return "exit " + strconv.Itoa(exit)
}

// Text renders the evidence for a model's prompt and a note's
// "Validation evidence" section: one fact a line, at most about 3,000
// bytes, the same text for the same evidence. The output tail is not in
// it; a prompt shows OutputTail on its own.
func (e *Evidence) Text() string {
	var lines []string
	add := func(format string, args ...any) {
		lines = append(lines, clipBytes(strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", " "), maxTextLine))
	}

	if s := e.Run.failure(); s != "" {
		add("run: failed: %s", s)
	} else {
		add("run: exit 0")
	}

	switch {
	case !e.ValidationConfigured:
		add("validation: not configured")
	case e.Validation == nil:
		add("validation: configured but not run again: %s", e.ValidationSkipped)
	default:
		for _, c := range e.Validation.Checks {
			result := "passed"
			if !c.Passed {
				result = "FAILED, " + checkResult(c.TimedOut, c.Timeout.String(), c.ExitCode)
			}
			add("validation %s: %s: %s", c.Name, result, clipBytes(c.Command, maxCommand))
		}
		if len(e.Validation.FailingTests) > 0 {
			add("failing tests: %s", fitList(quoteAll(e.Validation.FailingTests), maxTextLine-len("failing tests: ")))
		}
	}

	switch {
	case e.Diff.Unavailable != "":
		add("diff: unavailable: %s", e.Diff.Unavailable)
	case e.Diff.Empty:
		add("diff: empty (base %s)", short(e.Diff.Base))
	default:
		var files []string
		for _, f := range e.Diff.Files {
			files = append(files, fileText(f))
		}
		head := fmt.Sprintf("diff: base %s, %d file(s), +%d -%d: ", short(e.Diff.Base), len(e.Diff.Files), e.Diff.LinesAdded, e.Diff.LinesRemoved)
		add("%s%s", head, fitList(files, maxTextLine-len(head)))
	}
	if len(e.DeletedTests) > 0 {
		add("deleted tests: %s", fitList(quoteAll(e.DeletedTests), maxTextLine-len("deleted tests: ")))
	}
	if len(e.WeakenedTests) > 0 {
		var weak []string
		for _, w := range e.WeakenedTests {
			what := fmt.Sprintf("%d assertion line(s) removed, %d added", w.Removed, w.Added)
			if w.SkipsAdded > 0 {
				what += fmt.Sprintf(", %d more skip(s)", w.SkipsAdded)
			}
			weak = append(weak, fmt.Sprintf("%s (%s)", quoteName(w.Path), what))
		}
		add("weakened tests: %s", fitList(weak, maxTextLine-len("weakened tests: ")))
	}
	if e.TestsUnchecked > 0 {
		add("tests not checked for removed assertions: %d file(s)", e.TestsUnchecked)
	}
	if len(e.Uncommitted) > 0 {
		// Porcelain lines quote unusual paths themselves.
		add("uncommitted in the worktree: %s", fitList(e.Uncommitted, maxTextLine-len("uncommitted in the worktree: ")))
	} else if e.WorktreeProblem != "" && !e.ValidationConfigured {
		add("worktree: %s", e.WorktreeProblem)
	}
	for _, l := range e.Loops {
		what := "repeated error"
		if l.Kind == LoopBlock {
			what = fmt.Sprintf("block of %d line(s) repeated", l.Lines)
		}
		// The line is the agent's output: quoted, so that it reads as what
		// the agent printed, not as the harness's word.
		add("loop: %s %d times: %s", what, l.Count, strconv.Quote(clipBytes(l.Line, maxTextLine-60)))
	}

	var b strings.Builder
	for i, l := range lines {
		if b.Len()+len(l)+1 > maxText {
			fmt.Fprintf(&b, "(%d more line(s) left out)\n", len(lines)-i)
			break
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// fileText is one file of the diff line: "M a.go +3 -1",
// "R old.go -> new.go", "A logo.png (binary)".
func fileText(f File) string {
	letter := map[string]string{gitx.StatusAdded: "A", gitx.StatusModified: "M", gitx.StatusDeleted: "D",
		gitx.StatusRenamed: "R", gitx.StatusCopied: "C", gitx.StatusTypeChanged: "T"}[f.Status]
	if letter == "" {
		letter = "?"
	}
	s := letter + " "
	if f.OldPath != "" {
		s += quoteName(f.OldPath) + " -> "
	}
	s += quoteName(f.Path)
	switch {
	case f.LinesAdded < 0:
		s += " (binary)"
	case f.LinesAdded > 0 || f.LinesRemoved > 0:
		s += fmt.Sprintf(" +%d -%d", f.LinesAdded, f.LinesRemoved)
	}
	return s
}

// names lists at most n names, quoted when they hold blanks or
// separators, and says how many more there are.
func names(items []string, n int) string {
	var out []string
	for i, s := range items {
		if i == n {
			out = append(out, fmt.Sprintf("and %d more", len(items)-n))
			break
		}
		out = append(out, quoteName(s))
	}
	return strings.Join(out, ", ")
}

func quoteAll(items []string) []string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = quoteName(s)
	}
	return out
}

// fitList joins items with commas in at most about budget bytes: the
// items that fit, then how many more there are.
func fitList(items []string, budget int) string {
	const reserve = len(", and 99999 more")
	var b strings.Builder
	for i, s := range items {
		sep := ""
		if i > 0 {
			sep = ", "
		}
		room := budget - b.Len() - len(sep)
		if i < len(items)-1 {
			room -= reserve
		}
		if len(s) > room {
			if i == 0 {
				b.WriteString(clipBytes(s, max(budget-reserve, 10)))
				i++
				sep = ", "
			}
			if i < len(items) {
				fmt.Fprintf(&b, "%sand %d more", sep, len(items)-i)
			}
			break
		}
		b.WriteString(sep + s)
	}
	return b.String()
}

// quoteName quotes a path that would not read as one word in a list.
func quoteName(s string) string {
	if strings.ContainsAny(s, ", \t\n\r\"") || !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	return s
}

// short abbreviates a commit to 12 characters.
func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// clipBytes clips s to at most n bytes, on a character boundary, marking
// the cut.
func clipBytes(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
