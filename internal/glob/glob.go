// Package glob matches repository paths (forward slashes, relative to a
// repository's directory) against the patterns of [validation]
// protected: path.Match's syntax for each segment, and "**" as a whole
// segment for any number of directories, so "tests/**" is everything
// under tests/ and "**/conftest.py" every conftest.py.
package glob

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// ErrBad is a pattern Check refuses.
var ErrBad = errors.New("bad pattern")

// Check says why pattern is not one Match reads, or nil: it is relative
// (no leading /), has no empty, "." or ".." segment, uses "**" only as a
// whole segment, and each segment is path.Match syntax.
func Check(pattern string) error {
	switch {
	case pattern == "":
		return fmt.Errorf("%w: it is empty", ErrBad)
	case strings.HasPrefix(pattern, "/"):
		return fmt.Errorf("%w: %q is absolute; write it relative to the repository, like \"scripts/check.sh\"", ErrBad, pattern)
	case strings.Contains(pattern, `\`):
		return fmt.Errorf("%w: %q holds a backslash; separate directories with /", ErrBad, pattern)
	}
	for _, seg := range strings.Split(pattern, "/") {
		switch {
		case seg == "" || seg == "." || seg == "..":
			return fmt.Errorf("%w: %q has a segment %q; write a plain path inside the repository", ErrBad, pattern, seg)
		case seg == "**":
		case strings.Contains(seg, "**"):
			return fmt.Errorf("%w: %q uses ** inside a segment; ** stands alone between slashes, like \"tests/**\"", ErrBad, pattern)
		default:
			if _, err := path.Match(seg, ""); err != nil {
				return fmt.Errorf("%w: %q: %v", ErrBad, pattern, err)
			}
		}
	}
	return nil
}

// Match reports whether name matches pattern; a pattern Check refuses
// matches nothing.
func Match(pattern, name string) bool {
	if Check(pattern) != nil {
		return false
	}
	return match(strings.Split(pattern, "/"), strings.Split(name, "/"))
}

// match is a dynamic programme over (pattern segment, name segment), so
// that many "**" cost len(pat)*len(name) steps, not a power of them.
func match(pat, name []string) bool {
	// ok[j] says pat[i:] matches name[j:], for the i of the loop.
	ok := make([]bool, len(name)+1)
	ok[len(name)] = true
	for i := len(pat) - 1; i >= 0; i-- {
		next := make([]bool, len(name)+1)
		if pat[i] == "**" {
			// ** matches zero segments (ok[j]) or one more (next[j+1]).
			for j := len(name); j >= 0; j-- {
				next[j] = ok[j] || j < len(name) && next[j+1]
			}
		} else {
			for j := len(name) - 1; j >= 0; j-- {
				m, _ := path.Match(pat[i], name[j])
				next[j] = m && ok[j+1]
			}
		}
		ok = next
	}
	return ok[0]
}
