package gitx

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
)

// The statuses of a ChangedFile, from git's status letters.
const (
	StatusAdded       = "added"
	StatusModified    = "modified"
	StatusDeleted     = "deleted"
	StatusRenamed     = "renamed"
	StatusCopied      = "copied"
	StatusTypeChanged = "type_changed"
)

// ChangedFile is one file a diff between two commits touches.
type ChangedFile struct {
	// Status is one of the Status constants.
	Status string
	// Path is the file's path at the newer commit (at the older one for a
	// deletion), relative to the repository's top level.
	Path string
	// OldPath is the path at the older commit of a renamed or copied
	// file, else "".
	OldPath string
	// Insertions and Deletions count lines; both are -1 for a binary
	// file.
	Insertions int
	Deletions  int
}

// DiffFiles returns the files changed from commit base to rev, in git's
// order (by path), with their line counts: git diff --raw --numstat -z,
// renames found (-M) whatever the user's configuration says. Paths come
// as they are, spaces, tabs and non-ASCII letters included.
func DiffFiles(ctx context.Context, dir, base, rev string) ([]ChangedFile, error) {
	out, err := run(ctx, dir, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M", "--raw", "--numstat", "-z", base, rev, "--")
	if err != nil {
		return nil, err
	}
	files, err := parseRawNumstat(out)
	if err != nil {
		return nil, fmt.Errorf("git diff %.12s..%.12s: %w", base, rev, err)
	}
	return files, nil
}

// parseRawNumstat reads the output of git diff --raw --numstat -z: every
// raw record (":mode mode sha sha X\0path\0", a second path for R and C),
// then one numstat record per file in the same order ("ins\tdel\tpath\0",
// or "ins\tdel\t\0old\0new\0" for R and C; "-" counts for binary files).
func parseRawNumstat(out []byte) ([]ChangedFile, error) {
	fields := bytes.Split(out, []byte{0})
	if n := len(fields); n > 0 && len(fields[n-1]) == 0 {
		fields = fields[:n-1]
	}
	next := func() (string, bool) {
		if len(fields) == 0 {
			return "", false
		}
		f := string(fields[0])
		fields = fields[1:]
		return f, true
	}
	var files []ChangedFile
	for len(fields) > 0 && len(fields[0]) > 0 && fields[0][0] == ':' {
		meta, _ := next()
		parts := strings.Fields(meta)
		if len(parts) != 5 || parts[4] == "" {
			return nil, fmt.Errorf("malformed raw record %.80q", meta)
		}
		f := ChangedFile{Insertions: -1, Deletions: -1}
		two := false
		switch parts[4][0] {
		case 'A':
			f.Status = StatusAdded
		case 'D':
			f.Status = StatusDeleted
		case 'M':
			f.Status = StatusModified
		case 'T':
			f.Status = StatusTypeChanged
		case 'R':
			f.Status, two = StatusRenamed, true
		case 'C':
			f.Status, two = StatusCopied, true
		default:
			return nil, fmt.Errorf("unexpected status %q in raw record %.80q", parts[4], meta)
		}
		p, ok := next()
		if !ok || p == "" {
			return nil, fmt.Errorf("raw record %.80q has no path", meta)
		}
		f.Path = p
		if two {
			if p, ok = next(); !ok || p == "" {
				return nil, fmt.Errorf("raw record %.80q has no second path", meta)
			}
			f.OldPath, f.Path = f.Path, p
		}
		files = append(files, f)
	}
	for i := range files {
		rec, ok := next()
		if !ok {
			return nil, fmt.Errorf("%d raw records but %d numstat records", len(files), i)
		}
		parts := strings.SplitN(rec, "\t", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("malformed numstat record %.80q", rec)
		}
		path := parts[2]
		if path == "" { // a rename or a copy: old and new path follow
			old, ok1 := next()
			nw, ok2 := next()
			if !ok1 || !ok2 || old != files[i].OldPath {
				return nil, fmt.Errorf("numstat record %d does not match raw record %q", i, files[i].OldPath+" -> "+files[i].Path)
			}
			path = nw
		}
		if path != files[i].Path {
			return nil, fmt.Errorf("numstat record %d is for %q, raw record for %q", i, path, files[i].Path)
		}
		ins, errI := strconv.Atoi(parts[0])
		del, errD := strconv.Atoi(parts[1])
		if errI == nil && errD == nil {
			files[i].Insertions, files[i].Deletions = ins, del
		}
	}
	if len(fields) > 0 {
		return nil, fmt.Errorf("unexpected record %.80q after the numstat records", fields[0])
	}
	return files, nil
}

// DefaultMaxPatch caps DiffPatch's output when its max is 0.
const DefaultMaxPatch = 1 << 20

// DiffPatch returns the unified diff from commit base to rev of the
// given paths (all files when paths is empty), renames found among them
// (give both paths of a rename), in a fixed format whatever the user's
// configuration says: a/ and b/ prefixes, three lines of context, no
// colour, no external tools. Paths are literal: no globs, no pathspec
// magic. The patch is cut at a line boundary to at most max bytes (0
// means DefaultMaxPatch), and cut says so.
func DiffPatch(ctx context.Context, dir, base, rev string, paths []string, max int) (patch string, cut bool, err error) {
	if max <= 0 {
		max = DefaultMaxPatch
	}
	args := []string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/", "-U3", "-M", base, rev, "--"}
	for _, p := range paths {
		args = append(args, ":(literal)"+p)
	}
	out, err := run(ctx, dir, args...)
	if err != nil {
		return "", false, err
	}
	if len(out) <= max {
		return string(out), false, nil
	}
	out = out[:max]
	if i := bytes.LastIndexByte(out, '\n'); i >= 0 {
		out = out[:i+1]
	}
	return string(out), true, nil
}

// Hunk is one changed region of a file, as git's -U0 diff gives it:
// OldLines lines from OldStart of the older file became NewLines lines
// from NewStart of the newer one. A pure insertion has OldLines 0 and
// OldStart the line it follows (0 at the top); a pure deletion has
// NewLines 0.
type Hunk struct {
	OldStart, OldLines int
	NewStart, NewLines int
}

// FileHunks is one file of a diff with its hunks.
type FileHunks struct {
	// OldPath is the file at the older commit, "" when it was added;
	// NewPath at the newer one, "" when it was deleted.
	OldPath, NewPath string
	// Binary: git shows no lines for it. ModeChanged: its mode changed
	// (the executable bit, a symlink).
	Binary, ModeChanged bool
	Hunks               []Hunk
}

// DiffHunks returns the files changed from commit base to rev and their
// hunks (git diff -U0, renames as a deletion and an addition), in a fixed
// format whatever the user's configuration says.
func DiffHunks(ctx context.Context, dir, base, rev string) ([]FileHunks, error) {
	out, err := run(ctx, dir, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames",
		"--src-prefix=a/", "--dst-prefix=b/", "-U0", base, rev, "--")
	if err != nil {
		return nil, err
	}
	files, err := parseHunks(string(out))
	if err != nil {
		return nil, fmt.Errorf("git diff %.12s..%.12s: %w", base, rev, err)
	}
	return files, nil
}

// parseHunks reads git diff -U0 output: per file a "diff --git" line,
// extended headers, "---"/"+++" lines (absent for a binary file or a
// change of mode alone), then "@@ -a,b +c,d @@" hunk headers and their
// lines.
func parseHunks(out string) ([]FileHunks, error) {
	var files []FileHunks
	var f *FileHunks
	inHunks := false // past the file's headers: lines are the hunks' own
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "diff --git "):
			files = append(files, FileHunks{})
			f, inHunks = &files[len(files)-1], false
			// "a/P b/P": the paths until ---/+++ say more (a binary file
			// or a change of mode has none).
			rest := l[len("diff --git "):]
			if n := (len(rest) - 1) / 2; len(rest)%2 == 1 && rest[n] == ' ' && strings.HasPrefix(rest, "a/") && rest[n+1:] == "b/"+rest[2:n] {
				f.OldPath, f.NewPath = rest[2:n], rest[2:n]
			}
		case f == nil:
			if l != "" {
				return nil, fmt.Errorf("unexpected line %.80q before the first file", l)
			}
		case inHunks && !strings.HasPrefix(l, "@@ "):
			// a line of a hunk
		case strings.HasPrefix(l, "new file mode "):
			f.OldPath = ""
		case strings.HasPrefix(l, "deleted file mode "):
			f.NewPath = ""
		case strings.HasPrefix(l, "old mode "):
			f.ModeChanged = true
		case strings.HasPrefix(l, "--- "):
			f.OldPath = diffPath(l[4:], "a/")
		case strings.HasPrefix(l, "+++ "):
			f.NewPath = diffPath(l[4:], "b/")
		case strings.HasPrefix(l, "Binary files "):
			f.Binary = true
		case strings.HasPrefix(l, "@@ "):
			inHunks = true
			var h Hunk
			old, nw, ok := strings.Cut(strings.TrimPrefix(l, "@@ -"), " +")
			if !ok {
				return nil, fmt.Errorf("malformed hunk header %.80q", l)
			}
			nw, _, ok = strings.Cut(nw, " @@")
			if !ok {
				return nil, fmt.Errorf("malformed hunk header %.80q", l)
			}
			var err1, err2 error
			h.OldStart, h.OldLines, err1 = hunkRange(old)
			h.NewStart, h.NewLines, err2 = hunkRange(nw)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("malformed hunk header %.80q", l)
			}
			f.Hunks = append(f.Hunks, h)
		}
	}
	return files, nil
}

// diffPath reads the path of a ---/+++ line: "" for /dev/null, else the
// path without its prefix, unquoted.
func diffPath(p, prefix string) string {
	p = strings.TrimSuffix(p, "\t")
	if p == "/dev/null" {
		return ""
	}
	return strings.TrimPrefix(unquote(p), prefix)
}

// hunkRange reads "start,count" or "start" (a count of 1).
func hunkRange(s string) (int, int, error) {
	a, b, ok := strings.Cut(s, ",")
	start, err := strconv.Atoi(a)
	if err != nil {
		return 0, 0, err
	}
	if !ok {
		return start, 1, nil
	}
	n, err := strconv.Atoi(b)
	return start, n, err
}
