package evidence

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/outcome"
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
	out = append(out, e.protectedBlockers()...)
	out = append(out, e.testBlockers()...)
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

// protectedBlockers: a branch that changes a protected file has no claim
// of completion, unless its task may change tests.
func (e *Evidence) protectedBlockers() []string {
	if len(e.ProtectedChanges) == 0 || e.TestsMayChange {
		return nil
	}
	var items []string
	for _, c := range e.ProtectedChanges {
		items = append(items, fmt.Sprintf("%s (%s, %s)", quoteName(c.Path), c.Status, c.Why))
	}
	return []string{"the branch changes protected file(s), which the task may not (add it with --tests-may-change if it should): " + fitList(items, maxTextLine)}
}

// testBlockers: what the test-by-test comparison stands against.
func (e *Evidence) testBlockers() []string {
	t := e.Tests
	if t == nil {
		return nil
	}
	var out []string
	if t.BranchMissing != "" {
		out = append(out, "the branch's test run gave no per-test results, though the base's did ("+t.BranchMissing+"): it may have ended before its runner reported")
	}
	if len(t.Broken) > 0 {
		out = append(out, "test(s) that passed at the base fail on the branch: "+names(t.Broken, maxTextNames))
	}
	if !e.TestsMayChange {
		if len(t.Vanished) > 0 {
			out = append(out, "test(s) that passed at the base no longer run on the branch (a build constraint, a TestMain that does not run them, a conftest.py, a deletion?): "+names(t.Vanished, maxTextNames))
		}
		if len(t.Skipped) > 0 {
			out = append(out, "test(s) that passed at the base are skipped on the branch: "+names(t.Skipped, maxTextNames))
		}
	}
	for _, n := range t.Named {
		if !n.Stands() {
			out = append(out, fmt.Sprintf("the task names %s, which does not pass on the branch (base: %s, branch: %s)", quoteName(n.ID), statusText(n.Base), statusText(n.Branch)))
		}
	}
	return out
}

func statusText(s outcome.Status) string {
	if s == "" {
		return "did not run"
	}
	return string(s)
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
	if c := e.Checkout; c != nil {
		add("validation ran in a fresh checkout of %s, its protected files at the base %s", short(c.Commit), short(e.Diff.Base))
	}
	switch e.Sandbox {
	case "off":
		add("WARNING: validation ran unconfined ([board] sandbox = \"off\"): the code under test could write anywhere")
	case "landlock":
		add("validation ran sandboxed (Landlock): it could write only its checkout, its temp directory and [validation] caches")
	}
	if len(e.ProtectedChanges) > 0 {
		var items []string
		for _, c := range e.ProtectedChanges {
			s := fmt.Sprintf("%s (%s, %s", quoteName(c.Path), c.Status, c.Why)
			if c.Restored {
				s += "; validated as at the base"
			}
			items = append(items, s+")")
		}
		head := "protected files changed: "
		if e.TestsMayChange {
			head = "protected files changed (the task may change tests): "
		}
		add("%s%s", head, fitList(items, maxTextLine-len(head)))
	}
	if t := e.Tests; t != nil {
		e.testText(t, add)
	}
	if e.Weaker != "" {
		add("weaker evidence: %s", e.Weaker)
	}
	for _, n := range e.Notes {
		add("note: %s", n)
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

// testText adds the lines of the test-by-test comparison.
func (e *Evidence) testText(t *TestComparison, add func(string, ...any)) {
	base := "base " + short(t.BaseCommit)
	if t.BaseCached {
		base += " (cached)"
	}
	switch {
	case t.BaseUnreadable != "":
		add("tests: the base's results could not be read (%s): nothing to compare with", t.BaseUnreadable)
	case t.BranchMissing != "":
		add("tests: %s: %s; branch: no results (%s)", base, t.Base, t.BranchMissing)
	default:
		add("tests: %s: %s; branch: %s", base, t.Base, t.Branch)
	}
	list := func(head string, ids []string) {
		if len(ids) > 0 {
			add("%s%s", head, fitList(quoteAll(ids), maxTextLine-len(head)))
		}
	}
	list("tests fixed (fail → pass): ", t.Fixed)
	list("tests broken (pass → fail): ", t.Broken)
	list("tests that no longer run (pass → not run): ", t.Vanished)
	list("tests skipped now (pass → skip): ", t.Skipped)
	if len(t.Named) > 0 {
		var items []string
		for _, n := range t.Named {
			items = append(items, fmt.Sprintf("%s %s → %s", quoteName(n.ID), statusText(n.Base), statusText(n.Branch)))
		}
		add("tests the task names: %s", fitList(items, maxTextLine-len("tests the task names: ")))
	}
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
