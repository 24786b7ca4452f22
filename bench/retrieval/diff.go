package main

import (
	"sort"
	"strconv"
	"strings"
)

// lineRange is an inclusive range of 1-based lines.
type lineRange struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

func (r lineRange) overlaps(o lineRange) bool { return r.Start <= o.End && o.Start <= r.End }

// fileDiff is one file's part of a unified diff, seen from the old side.
type fileDiff struct {
	OldPath string // "" when the file is new (--- /dev/null)
	NewPath string // "" when the file is deleted (+++ /dev/null)
	// Ranges are the old-side lines the change touches: removed or
	// replaced lines, and for a pure insertion the lines on either side
	// of it. Sorted and merged.
	Ranges []lineRange
	Binary bool

	markersSeen bool // the ---/+++ pair was read
}

// parseDiff reads a unified diff: git's (with or without context, -U0
// included), or a plain one without "diff --git" headers. Hunk bodies are
// consumed by their header's line counts, so a removed line that reads
// "-- a" is not taken for a file header.
func parseDiff(text string) []fileDiff {
	var (
		out []fileDiff
		cur *fileDiff
	)
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSuffix(lines[i], "\r")
		switch {
		case strings.HasPrefix(l, "diff --git "):
			out = append(out, fileDiff{})
			cur = &out[len(out)-1]
			cur.OldPath, cur.NewPath = gitHeaderPaths(strings.TrimPrefix(l, "diff --git "))
		case strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ "):
			// A second pair means another file: plain diffs have no
			// "diff --git" line between files.
			if cur == nil || cur.markersSeen {
				out = append(out, fileDiff{})
				cur = &out[len(out)-1]
			}
			cur.OldPath = markerPath(l[4:], "a/")
			cur.NewPath = markerPath(strings.TrimSuffix(lines[i+1], "\r")[4:], "b/")
			cur.markersSeen = true
			i++
		case cur != nil && strings.HasPrefix(l, "new file mode"):
			cur.OldPath = ""
		case cur != nil && strings.HasPrefix(l, "deleted file mode"):
			cur.NewPath = ""
		case cur != nil && strings.HasPrefix(l, "rename from "):
			cur.OldPath = unquotePath(strings.TrimPrefix(l, "rename from "))
		case cur != nil && strings.HasPrefix(l, "rename to "):
			cur.NewPath = unquotePath(strings.TrimPrefix(l, "rename to "))
		case cur != nil && (strings.HasPrefix(l, "Binary files ") || l == "GIT binary patch"):
			cur.Binary = true
		case cur != nil && strings.HasPrefix(l, "@@ "):
			oldStart, oldCount, newCount, ok := hunkHeader(l)
			if !ok {
				continue
			}
			i = cur.hunk(lines, i+1, oldStart, oldCount, newCount) - 1
		}
	}
	for i := range out {
		out[i].Ranges = mergeRanges(out[i].Ranges)
	}
	return out
}

// hunk consumes a hunk body starting at lines[i] and returns the index of
// the first line after it.
func (d *fileDiff) hunk(lines []string, i, oldStart, oldCount, newCount int) int {
	old := oldStart
	if oldCount == 0 {
		old = oldStart + 1 // "-a,0": the insertion goes after line a
	}
	oldLeft, newLeft := oldCount, newCount
	blockRemoves, blockInserted := false, false
	for ; i < len(lines) && (oldLeft > 0 || newLeft > 0); i++ {
		l := strings.TrimSuffix(lines[i], "\r")
		c := byte(' ') // a context line whose trailing space was stripped
		if l != "" {
			c = l[0]
		}
		switch c {
		case ' ':
			old++
			oldLeft--
			newLeft--
			blockRemoves, blockInserted = false, false
		case '-':
			d.Ranges = append(d.Ranges, lineRange{max(old, 1), max(old, 1)})
			old++
			oldLeft--
			blockRemoves = true
		case '+':
			if !blockRemoves && !blockInserted {
				d.Ranges = append(d.Ranges, lineRange{max(old-1, 1), max(old, 1)})
				blockInserted = true
			}
			newLeft--
		case '\\': // "\ No newline at end of file"
		default:
			return i
		}
	}
	// A trailing "\ No newline" belongs to the hunk.
	for i < len(lines) && strings.HasPrefix(lines[i], "\\") {
		i++
	}
	return i
}

// maxLine bounds the numbers of a hunk header, so that arithmetic on them
// cannot overflow.
const maxLine = 1 << 30

// hunkHeader parses "@@ -a[,b] +c[,d] @@ …".
func hunkHeader(l string) (oldStart, oldCount, newCount int, ok bool) {
	f := strings.Fields(l)
	if len(f) < 3 || !strings.HasPrefix(f[1], "-") || !strings.HasPrefix(f[2], "+") {
		return 0, 0, 0, false
	}
	oldStart, oldCount, ok1 := rangeSpec(f[1][1:])
	_, newCount, ok2 := rangeSpec(f[2][1:])
	return oldStart, oldCount, newCount, ok1 && ok2
}

func rangeSpec(s string) (start, count int, ok bool) {
	a, b, hasCount := strings.Cut(s, ",")
	start, err := strconv.Atoi(a)
	if err != nil || start < 0 || start > maxLine {
		return 0, 0, false
	}
	count = 1
	if hasCount {
		if count, err = strconv.Atoi(b); err != nil || count < 0 || count > maxLine {
			return 0, 0, false
		}
	}
	return start, count, true
}

// gitHeaderPaths splits "a/X b/Y". Unquoted paths with spaces are
// ambiguous unless both sides are equal; the ---/+++ lines settle the rest.
func gitHeaderPaths(s string) (oldPath, newPath string) {
	if strings.HasPrefix(s, `"`) {
		if q, rest, ok := cutQuoted(s); ok {
			return markerPath(q, "a/"), markerPath(strings.TrimSpace(rest), "b/")
		}
	}
	if n := (len(s) - 1) / 2; len(s)%2 == 1 && strings.HasPrefix(s, "a/") && s[n] == ' ' && strings.HasPrefix(s[n+1:], "b/") && s[2:n] == s[n+3:] {
		return s[2:n], s[2:n]
	}
	if a, b, ok := strings.Cut(s, " b/"); ok && strings.HasPrefix(a, "a/") {
		return a[2:], b
	}
	return "", ""
}

// cutQuoted splits a leading C-quoted string off s.
func cutQuoted(s string) (quoted, rest string, ok bool) {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return s[:i+1], s[i+1:], true
		}
	}
	return "", "", false
}

// markerPath reads the path of a ---/+++ line: "" for /dev/null, the
// prefix removed, a git C-quoted path unquoted, a trailing tab and
// timestamp (plain diff) dropped.
func markerPath(s, prefix string) string {
	if !strings.HasPrefix(s, `"`) {
		s, _, _ = strings.Cut(s, "\t")
	}
	s = unquotePath(strings.TrimSpace(s))
	if s == "/dev/null" {
		return ""
	}
	return strings.TrimPrefix(s, prefix)
}

// unquotePath undoes git's C-style quoting of unusual paths ("a/\303\251").
func unquotePath(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
	}
	return s
}

// mergeRanges sorts ranges and merges those that overlap or touch.
func mergeRanges(rs []lineRange) []lineRange {
	if len(rs) == 0 {
		return nil
	}
	rs = append([]lineRange(nil), rs...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].Start < rs[j].Start })
	out := rs[:1]
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if r.Start <= last.End+1 {
			last.End = max(last.End, r.End)
			continue
		}
		out = append(out, r)
	}
	return out
}

// changedRanges maps each old-side path of a diff to its changed ranges.
// New files have no old side and are left out; a file present with nil
// ranges changed without line information (binary, mode only).
func changedRanges(diffs []fileDiff) map[string][]lineRange {
	out := map[string][]lineRange{}
	for _, d := range diffs {
		if d.OldPath == "" {
			continue
		}
		out[d.OldPath] = append(out[d.OldPath], d.Ranges...)
	}
	for p, rs := range out {
		out[p] = mergeRanges(rs)
	}
	return out
}
