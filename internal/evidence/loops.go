package evidence

import (
	"cmp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cra-dev/cra/internal/lazyre"
)

// The kinds of Loop.
const (
	// LoopBlock is a block of consecutive lines repeated back to back.
	LoopBlock = "repeated_block"
	// LoopError is one error-looking line seen again and again.
	LoopError = "repeated_error"
)

// Bounds of DetectLoops.
const (
	// loopWindow is how many of the output's last lines are read.
	loopWindow = 400
	// maxBlock is the longest block looked for.
	maxBlock = 8
	// minBlockRepeats is how often a block must come back to back.
	minBlockRepeats = 4
	// minErrorRepeats is how often an error line must come in the window.
	minErrorRepeats = 5
	// maxLineBytes clips a line before it is normalised: what makes two
	// lines the same is at their start.
	maxLineBytes = 512
	// maxLoopLine clips a Loop's line, in characters.
	maxLoopLine = 200
	// maxLoops bounds the loops reported.
	maxLoops = 8
)

// Loop is a sign that a run went round in circles, read from its output
// the way OpenHands' StuckDetector reads an agent's event stream, but on
// plain text.
type Loop struct {
	// Kind is LoopBlock or LoopError.
	Kind string `json:"kind"`
	// Line is the first line of the block, or the error line, as it
	// first appeared on a terminal (trimmed, clipped to 200 characters).
	Line string `json:"line"`
	// Lines is the block's length in lines (1 for LoopError).
	Lines int `json:"lines"`
	// Count is how often the block came back to back, or how often the
	// error line appeared.
	Count int `json:"count"`
}

// DetectLoops reads the last 400 lines of a run's output for two signs
// of a stuck agent:
//
//   - a block of 1 to 8 lines repeated at least 4 times back to back
//     (LoopBlock);
//   - a line that looks like an error (error, exception, traceback,
//     failed, fatal, in any case) seen at least 5 times (LoopError), that
//     is not already part of a repeated block.
//
// Lines are compared normalised: what a terminal shows of a line
// redrawn with carriage returns, without colour codes, trimmed, blanks
// collapsed, and timestamps, durations, hexadecimal ids (0x…, hashes,
// UUIDs), line numbers after a file name (x.go:12:5, "line 12") and
// numbers of five digits or more (pids, ports, temporary names) replaced
// by placeholders. Short numbers stay: they are counts, percentages and
// the names of numbered subtests, so a progress bar or a table test's
// "=== RUN TestX/#01", "#02", … is not a loop. Blank lines and lines
// without a letter or a digit (braces, rules) are skipped.
//
// The work is linear in the output's size; it never panics, whatever
// the bytes. Loops come blocks first, in the order they appear, at most 8.
func DetectLoops(output string) []Loop {
	var orig, norm []string
	for _, l := range lastLines(output, loopWindow) {
		if len(l) > maxLineBytes {
			l = l[:maxLineBytes]
		}
		n := normalizeLine(l)
		if !hasAlnum(n) {
			continue
		}
		orig = append(orig, strings.TrimSpace(displayLine(l)))
		norm = append(norm, n)
	}
	ids := make([]int, len(norm))
	index := map[string]int{}
	for i, n := range norm {
		id, ok := index[n]
		if !ok {
			id = len(index)
			index[n] = id
		}
		ids[i] = id
	}

	loops := []Loop{}
	inBlock := map[int]bool{} // ids of lines in a reported block
	type found struct{ start, k, reps int }
	var blocks []found
	for k := 1; k <= maxBlock; k++ {
		for i := 0; i+k < len(ids); {
			// The longest stretch from i where each line equals the one
			// k further on is a region of period k.
			j := i
			for j+k < len(ids) && ids[j] == ids[j+k] {
				j++
			}
			if j == i {
				i++
				continue
			}
			reps := (j - i + k) / k
			if reps >= minBlockRepeats && !hasSmallerPeriod(ids[i:i+k]) {
				blocks = append(blocks, found{i, k, reps})
			}
			i = j
		}
	}
	// Blocks in the order they appear; an earlier start first, then the
	// shorter block.
	slices.SortFunc(blocks, func(a, b found) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.k, b.k))
	})
	for _, b := range blocks {
		for _, id := range ids[b.start : b.start+b.k] {
			inBlock[id] = true
		}
		if len(loops) < maxLoops {
			loops = append(loops, Loop{Kind: LoopBlock, Line: clipLine(orig[b.start]), Lines: b.k, Count: b.reps})
		}
	}

	count := map[int]int{}
	first := map[int]int{}
	var order []int
	for i, id := range ids {
		if inBlock[id] || !looksLikeError(norm[i]) {
			continue
		}
		if count[id] == 0 {
			first[id] = i
			order = append(order, id)
		}
		count[id]++
	}
	for _, id := range order {
		if count[id] >= minErrorRepeats && len(loops) < maxLoops {
			loops = append(loops, Loop{Kind: LoopError, Line: clipLine(orig[first[id]]), Lines: 1, Count: count[id]})
		}
	}
	return loops
}

// hasSmallerPeriod reports whether block is itself a shorter block
// repeated: such a region is reported at the shorter length.
func hasSmallerPeriod(block []int) bool {
	k := len(block)
	for d := 1; d < k; d++ {
		if k%d != 0 {
			continue
		}
		periodic := true
		for i := 0; i+d < k; i++ {
			if block[i] != block[i+d] {
				periodic = false
				break
			}
		}
		if periodic {
			return true
		}
	}
	return false
}

// lastLines returns the last n lines of s, without their line ends.
func lastLines(s string, n int) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	start := len(s)
	for count := 0; start > 0; start-- {
		if s[start-1] == '\n' {
			if count++; count == n {
				break
			}
		}
	}
	return strings.Split(s[start:], "\n")
}

var (
	ansiCode  = lazyre.New(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]`)
	spaces    = lazyre.New(`\s+`)
	timestamp = lazyre.New(`\d{4}[-/]\d{2}[-/]\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)?|\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b`)
	uuid      = lazyre.New(`\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b`)
	hexPrefix = lazyre.New(`\b0[xX][0-9a-fA-F]+\b`)
	hexWord   = lazyre.New(`\b[0-9a-fA-F]{7,}\b`)
	duration  = lazyre.New(`\b(?:\d+(?:\.\d+)?(?:h|m(?:in)?|s|ms|us|µs|ns)){1,3}\b|\b\d+(?:\.\d+)? ?(?:hours?|minutes?|mins?|seconds?|secs?|milliseconds?)\b`)
	fileLine  = lazyre.New(`(\.[A-Za-z][A-Za-z0-9]*):\d+(?::\d+)?\b`)
	pyLine    = lazyre.New(`\bline \d+\b`)
	longNum   = lazyre.New(`\d{5,}`)
	errorWord = lazyre.New(`(?i)error|exception|traceback|failed|fatal`)
)

// displayLine is what a terminal shows of a line: the last drawing of a
// line redrawn with carriage returns, without colour and cursor codes.
func displayLine(l string) string {
	l = strings.TrimRight(l, "\r")
	if i := strings.LastIndexByte(l, '\r'); i >= 0 {
		l = l[i+1:]
	}
	if strings.IndexByte(l, 0x1b) >= 0 {
		l = ansiCode().ReplaceAllString(l, "")
	}
	return l
}

// normalizeLine is the form lines are compared in (see DetectLoops).
func normalizeLine(l string) string {
	l = strings.TrimSpace(spaces().ReplaceAllString(displayLine(l), " "))
	l = timestamp().ReplaceAllString(l, "<time>")
	l = uuid().ReplaceAllString(l, "<hex>")
	l = hexPrefix().ReplaceAllString(l, "<hex>")
	l = hexWord().ReplaceAllStringFunc(l, func(w string) string {
		if strings.ContainsAny(w, "0123456789") && strings.ContainsAny(w, "abcdefABCDEF") {
			return "<hex>"
		}
		return w
	})
	l = duration().ReplaceAllString(l, "<dur>")
	l = fileLine().ReplaceAllString(l, "$1:<n>")
	l = pyLine().ReplaceAllString(l, "line <n>")
	return longNum().ReplaceAllString(l, "<n>")
}

func hasAlnum(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return true
		}
	}
	return false
}

func looksLikeError(s string) bool { return errorWord().MatchString(s) }

// clipLine makes a line safe to store and show: valid UTF-8, no control
// characters, at most maxLoopLine characters.
func clipLine(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if utf8.RuneCountInString(s) <= maxLoopLine {
		return s
	}
	n := 0
	for i := range s {
		if n == maxLoopLine-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// tail returns the last n lines of output, at most max bytes of them,
// as a terminal would show them: a line redrawn with carriage returns
// as its last drawing, colour codes left out, invalid UTF-8 replaced.
func tail(output string, n, max int) string {
	// What could survive the cut, with room for colour codes, is all that
	// is cleaned.
	if len(output) > 16*max {
		output = output[len(output)-16*max:]
	}
	lines := lastLines(output, n)
	for i, l := range lines {
		lines[i] = displayLine(l)
	}
	s := strings.ToValidUTF8(strings.Join(lines, "\n"), "\uFFFD")
	if len(s) <= max {
		return s
	}
	s = s[len(s)-max:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
		return s[i+1:]
	}
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return s
}
