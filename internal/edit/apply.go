package edit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/cra-dev/cra/internal/atomicfile"
	"github.com/cra-dev/cra/internal/statedir"
)

// Statuses of a block after Apply.
const (
	StatusApplied        = "applied"
	StatusCreated        = "created"
	StatusAlreadyApplied = "already_applied" // its REPLACE is already in the file: nothing to do
	StatusFailed         = "failed"
)

// Rungs of the matching ladder, in the order they are tried.
const (
	// RungExact: the SEARCH lines are in the file as written.
	RungExact = "exact"
	// RungIndentation: the same lines with a consistent leading-whitespace
	// offset (and trailing whitespace ignored); REPLACE is shifted by it.
	RungIndentation = "indentation"
	// RungElision: "..." lines stand for unchanged text; each piece
	// between them matches once, and is replaced by its counterpart.
	RungElision = "elision"
)

// Result is what became of one edit block.
type Result struct {
	Block  int    `json:"block"` // 1-based, in the reply's order
	Path   string `json:"path"`
	Status string `json:"status"`
	Rung   string `json:"rung,omitempty"`
	// Message says why a block failed, with the closest lines of the file
	// ("did you mean"); it is written for the model.
	Message string `json:"message,omitempty"`
}

// OK reports whether the block is in the file now.
func (r Result) OK() bool { return r.Status != StatusFailed }

// PathError is an edit path refused because it would leave the
// repository or touch what edits must not (seed 001 §17).
type PathError struct {
	Path   string
	Reason string
}

func (e *PathError) Error() string { return fmt.Sprintf("refused path %q: %s", e.Path, e.Reason) }

// ValidPath checks the form of a repository path: relative, with forward
// slashes, no "..", nothing in .git or cra's state directory.
func ValidPath(p string) error {
	refuse := func(reason string) error { return &PathError{p, reason} }
	switch {
	case p == "":
		return refuse("empty path")
	case strings.ContainsFunc(p, unicode.IsControl):
		return refuse("control characters in the path")
	case strings.Contains(p, "\\"):
		return refuse("use forward slashes")
	case strings.Contains(p, "`"):
		return refuse("a backtick in the path")
	case path.IsAbs(p) || filepath.IsAbs(p) || filepath.VolumeName(p) != "" || len(p) >= 2 && p[1] == ':':
		return refuse("absolute path: paths are relative to the repository root")
	case strings.HasSuffix(p, "/"):
		return refuse("a directory, not a file")
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return refuse("'..' leads out of the repository")
		}
		if strings.EqualFold(part, ".git") {
			return refuse("inside .git: edits change the repository's files only")
		}
	}
	clean := path.Clean(p)
	if clean == "." {
		return refuse("not a file")
	}
	if first, _, _ := strings.Cut(clean, "/"); first == statedir.Name {
		return refuse("inside cra's state directory " + statedir.Name)
	}
	return nil
}

// resolvePath maps a repository path to the file to write under realRoot
// (root with its symlinks resolved), following symlinks only while they
// stay inside it. It returns the file and its path relative to realRoot.
// Every way p can fail to name a file there (a component that is a file
// or leads nowhere, a symlink out of the repository or into .git, a name
// the file system refuses) is a *PathError naming the component at
// fault, so the model can choose another path (issue 19, defect 1).
func resolvePath(realRoot, p string) (string, string, error) {
	if err := ValidPath(p); err != nil {
		return "", "", err
	}
	parts := strings.Split(path.Clean(p), "/")
	cur := realRoot
	for i, part := range parts {
		next := filepath.Join(cur, part)
		shown := strings.Join(parts[:i+1], "/") // the path so far, as the block wrote it
		last := i == len(parts)-1
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			cur = filepath.Join(append([]string{next}, parts[i+1:]...)...)
			break
		}
		if err != nil {
			return "", "", &PathError{p, fmt.Sprintf("%s: %s", shown, errText(err))}
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, err := filepath.EvalSymlinks(next)
			if err != nil {
				return "", "", &PathError{p, shown + " is a symlink that leads nowhere: edit the file it should point to, or choose another path"}
			}
			if !inside(realRoot, target) {
				return "", "", &PathError{p, shown + " is a symlink that leads outside the repository: edits change the repository's files only"}
			}
			if reason := forbidden(realRoot, target); reason != "" {
				return "", "", &PathError{p, shown + " is a symlink into " + reason}
			}
			if fi, err = os.Stat(target); err != nil {
				return "", "", &PathError{p, fmt.Sprintf("%s: %s", shown, errText(err))}
			}
			if !last && !fi.IsDir() {
				rel, _ := filepath.Rel(realRoot, target)
				return "", "", &PathError{p, fmt.Sprintf("%s is a symlink to the file %s, not a directory: no path can go through it; edit %s itself or choose another path",
					shown, filepath.ToSlash(rel), filepath.ToSlash(rel))}
			}
			next = target
		}
		if !last && !fi.IsDir() {
			return "", "", &PathError{p, fmt.Sprintf("%s is a file, not a directory: no path can go through it; edit %s itself or choose another path", shown, shown)}
		}
		cur = next
	}
	rel, err := filepath.Rel(realRoot, cur)
	if err != nil {
		return "", "", &PathError{p, errText(err)}
	}
	rel = filepath.ToSlash(rel)
	if rel == "." {
		return "", "", &PathError{p, "a symlink to the repository's root, not a file"}
	}
	if reason := forbidden(realRoot, cur); reason != "" {
		return "", "", &PathError{p, "a symlink into " + reason}
	}
	return cur, rel, nil
}

// forbidden names what abs, inside realRoot, is in that edits must not
// touch: .git or cra's state directory; "" when neither.
func forbidden(realRoot, abs string) string {
	rel, err := filepath.Rel(realRoot, abs)
	if err != nil {
		return "an unknown place"
	}
	first, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
	switch {
	case strings.EqualFold(first, ".git"):
		return ".git: edits change the repository's files only"
	case first == statedir.Name:
		return "cra's state directory " + statedir.Name
	}
	return ""
}

// errText is err without the absolute path an *fs.PathError carries:
// the model sees repository paths only.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		err = le.Err
	}
	return err.Error()
}

func inside(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// editFile is a file as the blocks of one Apply see it.
type editFile struct {
	abs, rel string
	content  string
	exists   bool
	mode     fs.FileMode
	changed  bool
}

// Apply applies blocks in order to the files under root and writes the
// files that changed, each atomically. Blocks that fail leave their file
// as the blocks before them made it; the others are applied, so the
// feedback can say which are done. It returns each block's result and the
// changed files (relative to root, sorted).
//
// Whatever is wrong with one block's path (it goes through a file, a
// symlink leads out of the repository, into .git or nowhere, the file
// system refuses the name, the file cannot be written) fails that block
// only, with a reason for the model. The error is for what no other path
// would mend: the root is gone, or the file system takes no writes at all
// (issue 19, defect 1).
func Apply(root string, blocks []Block) ([]Result, []string, error) {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, nil, fmt.Errorf("apply edits: %w", err)
	}
	files := map[string]*editFile{}
	var order []*editFile
	results := make([]Result, 0, len(blocks))
	owners := make([]*editFile, 0, len(blocks)) // the file of each result
	for i, b := range blocks {
		res := Result{Block: i + 1, Path: b.Path}
		f, ferr := loadEditFile(realRoot, b.Path, files)
		if ferr != nil {
			var pe *PathError
			if !errors.As(ferr, &pe) {
				if runStopping(realRoot, ferr) {
					return nil, nil, fmt.Errorf("apply edits: %w", ferr)
				}
				ferr = &PathError{b.Path, errText(ferr)}
			}
		}
		switch {
		case ferr != nil:
			res.Status, res.Message = StatusFailed, ferr.Error()
		case f.mode&fs.ModeType != 0:
			res.Status, res.Message = StatusFailed, fmt.Sprintf("%s is not a regular file", b.Path)
		case strings.IndexByte(f.content, 0) >= 0:
			res.Status, res.Message = StatusFailed, fmt.Sprintf("%s is a binary file: SEARCH/REPLACE edits text only", b.Path)
		case !f.exists && isBlank(b.Search):
			f.content, f.exists, f.changed = b.Replace, true, true
			res.Status = StatusCreated
		case !f.exists:
			res.Status = StatusFailed
			res.Message = fmt.Sprintf("%s does not exist; to create it, leave SEARCH empty and put the whole file in REPLACE", b.Path)
			if similar := similarPaths(realRoot, b.Path, 3); len(similar) > 0 {
				res.Message = fmt.Sprintf("%s does not exist. Did you mean %s? To create a new file, leave SEARCH empty", b.Path, strings.Join(similar, " or "))
			}
		default:
			next, r := ApplyText(f.content, b)
			res.Status, res.Rung, res.Message = r.Status, r.Rung, r.Message
			if next != f.content {
				f.content, f.changed = next, true
			}
		}
		if f != nil && !slices.Contains(order, f) {
			order = append(order, f)
		}
		results = append(results, res)
		owners = append(owners, f)
	}
	var changed []string
	for _, f := range order {
		if !f.changed {
			continue
		}
		mode := f.mode.Perm()
		if mode == 0 {
			mode = 0o644
		}
		if err := atomicfile.Write(f.abs, []byte(f.content), mode); err != nil {
			if runStopping(realRoot, err) {
				return results, changed, fmt.Errorf("apply edits: %w", err)
			}
			// The file is as it was: its blocks did not apply.
			msg := fmt.Sprintf("could not write %s: %s; choose another path", f.rel, errText(err))
			for i, o := range owners {
				if o == f && (results[i].Status == StatusApplied || results[i].Status == StatusCreated) {
					results[i].Status, results[i].Rung, results[i].Message = StatusFailed, "", msg
				}
			}
			continue
		}
		changed = append(changed, f.rel)
	}
	sort.Strings(changed)
	return results, changed, nil
}

// runStopping reports whether err, met on one block's file, is about the
// run rather than the block: the root is gone, or the file system takes
// no writes at all. Anything else fails the block only.
func runStopping(realRoot string, err error) bool {
	if fi, serr := os.Stat(realRoot); serr != nil || !fi.IsDir() {
		return true
	}
	return fsUnusable(err)
}

// loadEditFile returns the file p names, reading it on first use. A path
// this Apply cannot write, because an earlier block creates a file where
// it needs a directory or the other way round, is a *PathError.
func loadEditFile(realRoot, p string, files map[string]*editFile) (*editFile, error) {
	abs, rel, err := resolvePath(realRoot, p)
	if err != nil {
		return nil, err
	}
	if f, ok := files[abs]; ok {
		return f, nil
	}
	f := &editFile{abs: abs, rel: rel}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := clash(realRoot, p, abs, files); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	default:
		f.exists, f.mode = true, fi.Mode()
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(abs)
			if err != nil {
				return nil, err
			}
			f.content = string(data)
		}
	}
	files[abs] = f
	return f, nil
}

// clash checks abs, new to this Apply and not on disk, against the files earlier blocks
// create: none may be a directory of abs, and abs may not be a directory
// of any of them.
func clash(realRoot, p, abs string, files map[string]*editFile) error {
	for dir := filepath.Dir(abs); inside(realRoot, dir) && dir != realRoot; dir = filepath.Dir(dir) {
		if f, ok := files[dir]; ok && f.exists && f.mode&fs.ModeDir == 0 {
			return &PathError{p, fmt.Sprintf("%s is a file, not a directory (an earlier block creates it): no path can go through it; choose another path", f.rel)}
		}
	}
	rel, _ := filepath.Rel(realRoot, abs)
	for _, f := range files {
		if f.exists && strings.HasPrefix(f.abs, abs+string(filepath.Separator)) {
			return &PathError{p, fmt.Sprintf("%s is a directory: an earlier block creates %s in it; choose another path", filepath.ToSlash(rel), f.rel)}
		}
	}
	return nil
}

// similarPaths returns up to n files under root with p's base name.
func similarPaths(root, p string, n int) []string {
	base := path.Base(p)
	var out []string
	seen := 0
	filepath.WalkDir(root, func(q string, d fs.DirEntry, err error) error {
		seen++
		if err != nil || seen > 50000 || len(out) >= n {
			return filepath.SkipAll
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", statedir.Name, "node_modules", "vendor", "__pycache__":
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() == base {
			if rel, err := filepath.Rel(root, q); err == nil {
				out = append(out, filepath.ToSlash(rel))
			}
		}
		return nil
	})
	return out
}

// fileText is a file's content as lines without their endings.
type fileText struct {
	lines   []string
	crlf    bool // lines end in "\r\n"
	finalNL bool // the last line ends in a newline
	bom     bool // the file starts with a UTF-8 byte order mark, kept apart from line 1
}

// utf8BOM is the byte order mark Windows editors put first in UTF-8
// files; no model copies it into a SEARCH.
const utf8BOM = "\ufeff"

func splitText(s string) fileText {
	bom := strings.HasPrefix(s, utf8BOM)
	s = strings.TrimPrefix(s, utf8BOM)
	if s == "" {
		return fileText{bom: bom}
	}
	n := strings.Count(s, "\n")
	t := fileText{crlf: n > 0 && strings.Count(s, "\r\n")*2 >= n, finalNL: strings.HasSuffix(s, "\n"), bom: bom}
	body := strings.TrimSuffix(s, "\n")
	if t.crlf {
		body = strings.TrimSuffix(body, "\r")
	}
	t.lines = strings.Split(body, "\n")
	if t.crlf {
		for i, l := range t.lines {
			t.lines[i] = strings.TrimSuffix(l, "\r")
		}
	}
	return t
}

func (t fileText) join() string {
	if len(t.lines) == 0 {
		return ""
	}
	eol := "\n"
	if t.crlf {
		eol = "\r\n"
	}
	s := strings.Join(t.lines, eol)
	if t.finalNL {
		s += eol
	}
	if t.bom {
		s = utf8BOM + s
	}
	return s
}

// blockLines splits a block's Search or Replace into lines.
func blockLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func isBlank(s string) bool { return strings.TrimSpace(s) == "" }

func allBlank(lines []string) bool {
	for _, l := range lines {
		if !isBlank(l) {
			return false
		}
	}
	return true
}

// match is one place a pattern matches, with the indentation offset of
// the indentation rung (add to the pattern, or remove from it).
type match struct {
	at          int
	add, remove string
}

// findExact returns where pat occurs in lines as a run of whole lines.
func findExact(lines, pat []string) []match {
	var out []match
	for i := 0; i+len(pat) <= len(lines); i++ {
		ok := true
		for j := range pat {
			if lines[i+j] != pat[j] {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, match{at: i})
		}
	}
	return out
}

// findIndented returns where pat occurs in lines with one consistent
// leading-whitespace offset, trailing whitespace ignored.
func findIndented(lines, pat []string) []match {
	var out []match
	for i := 0; i+len(pat) <= len(lines); i++ {
		if m, ok := indentAt(lines[i:i+len(pat)], pat); ok {
			m.at = i
			out = append(out, m)
		}
	}
	return out
}

func trimRight(s string) string { return strings.TrimRight(s, " \t\r") }

func indentAt(lines, pat []string) (match, bool) {
	first := -1
	for j, p := range pat {
		if !isBlank(p) {
			first = j
			break
		}
	}
	if first < 0 {
		return match{}, false
	}
	var m match
	f, p := trimRight(lines[first]), trimRight(pat[first])
	switch {
	case strings.HasSuffix(f, p) && strings.Trim(f[:len(f)-len(p)], " \t") == "":
		m.add = f[:len(f)-len(p)]
	case strings.HasSuffix(p, f) && strings.Trim(p[:len(p)-len(f)], " \t") == "":
		m.remove = p[:len(p)-len(f)]
	default:
		return match{}, false
	}
	for j := range pat {
		pl, fl := trimRight(pat[j]), trimRight(lines[j])
		switch {
		case strings.TrimSpace(pl) == "":
			if strings.TrimSpace(fl) != "" {
				return match{}, false
			}
		case m.remove != "":
			if !strings.HasPrefix(pl, m.remove) || pl[len(m.remove):] != fl {
				return match{}, false
			}
		default:
			if fl != m.add+pl {
				return match{}, false
			}
		}
	}
	return m, true
}

// shift applies a match's indentation offset to replacement lines.
func shift(lines []string, m match) []string {
	if m.add == "" && m.remove == "" {
		return lines
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		switch {
		case isBlank(l):
			out[i] = ""
		case m.add != "":
			out[i] = m.add + l
		case strings.HasPrefix(l, m.remove):
			out[i] = l[len(m.remove):]
		default:
			// Less indented than the offset: drop what whitespace there is.
			n := 0
			for n < len(l) && n < len(m.remove) && (l[n] == ' ' || l[n] == '\t') {
				n++
			}
			out[i] = l[n:]
		}
	}
	return out
}

// find tries the exact rung, then the indentation rung.
func find(lines, pat []string) ([]match, string) {
	if ms := findExact(lines, pat); len(ms) > 0 {
		return ms, RungExact
	}
	if ms := findIndented(lines, pat); len(ms) > 0 {
		return ms, RungIndentation
	}
	return nil, ""
}

func splice(lines []string, at, n int, with []string) []string {
	out := make([]string, 0, len(lines)-n+len(with))
	out = append(out, lines[:at]...)
	out = append(out, with...)
	return append(out, lines[at+n:]...)
}

// isElision reports whether a line stands for elided text.
func isElision(l string) bool {
	t := strings.TrimSpace(l)
	return t == "..." || t == "…"
}

func hasElision(lines []string) bool { return slices.ContainsFunc(lines, isElision) }

// ApplyText applies one block to the content of an existing file: the
// ladder exact → indentation → elision, each requiring exactly one
// match. It returns the new content and the result (Block and Path
// unset); a failed block leaves content as it was, and its message names
// the file as b.Path.
func ApplyText(content string, b Block) (string, Result) {
	name := b.Path
	if name == "" {
		name = "the file"
	}
	t := splitText(content)
	search, repl := blockLines(b.Search), blockLines(b.Replace)
	if t.bom {
		// A model that copied the mark with line 1 means line 1.
		for _, ls := range [][]string{search, repl} {
			if len(ls) > 0 {
				ls[0] = strings.TrimPrefix(ls[0], utf8BOM)
			}
		}
	}
	if allBlank(search) {
		switch {
		case isBlank(content):
			return b.Replace, Result{Status: StatusApplied}
		case sameText(content, b.Replace):
			return content, Result{Status: StatusAlreadyApplied}
		}
		return content, Result{Status: StatusFailed, Message: name + " already exists: an empty SEARCH only creates new files; to change this one, SEARCH for the lines to replace"}
	}
	ms, rung := find(t.lines, search)
	if !allBlank(repl) && !hasElision(repl) {
		if rm, _ := find(t.lines, repl); len(rm) == 1 {
			within := true
			for _, m := range ms {
				if m.at < rm[0].at || m.at+len(search) > rm[0].at+len(repl) {
					within = false
				}
			}
			// REPLACE in the file says the block was applied, unless the
			// lines it deletes are still there, mis-copied in SEARCH.
			if within && (len(ms) > 0 || !misCopiedDeletion(t.lines, rm[0].at, search, repl)) {
				return content, Result{Status: StatusAlreadyApplied}
			}
		}
	}
	switch {
	case len(ms) == 1:
		t.lines = splice(t.lines, ms[0].at, len(search), shift(repl, ms[0]))
		return t.join(), Result{Status: StatusApplied, Rung: rung}
	case len(ms) > 1:
		return content, Result{Status: StatusFailed, Message: ambiguous("SEARCH", name, ms)}
	case hasElision(search):
		return applyElision(t, content, name, search, repl)
	}
	return content, Result{Status: StatusFailed, Message: noMatch("SEARCH", name, t.lines, search)}
}

// misCopiedDeletion reports whether a block that deletes lines (REPLACE
// is SEARCH's head or tail) found REPLACE at at while SEARCH matched
// nothing because the model mis-copied the lines it deletes: lines like
// them still stand where they would have gone. Had the block been applied,
// the lines beside REPLACE would be others.
func misCopiedDeletion(lines []string, at int, search, repl []string) bool {
	n := len(repl)
	if n >= len(search) {
		return false
	}
	var gone, there []string
	switch {
	case sameLines(search[:n], repl):
		gone = search[n:]
		there = lines[min(at+n, len(lines)):min(at+n+len(gone), len(lines))]
	case sameLines(search[len(search)-n:], repl):
		gone = search[:len(search)-n]
		there = lines[max(at-len(gone), 0):at]
		gone = gone[len(gone)-len(there):]
	default:
		return false
	}
	if len(there) == 0 {
		return false
	}
	sum := 0.0
	for i := range there {
		sum += dice(bigramsOf(there[i]), bigramsOf(gone[i]))
	}
	return sum/float64(len(there)) >= 0.5
}

// sameLines reports whether a and b are the same lines, whitespace aside.
func sameLines(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if strings.TrimSpace(a[i]) != strings.TrimSpace(b[i]) {
			return false
		}
	}
	return true
}

func sameText(a, b string) bool {
	return strings.TrimRight(strings.ReplaceAll(a, "\r\n", "\n"), " \t\n") == strings.TrimRight(b, " \t\n")
}

// applyElision is the third rung: SEARCH and REPLACE split at their
// "..." lines into as many pieces each; every SEARCH piece matches once
// and is replaced by the REPLACE piece in the same place.
func applyElision(t fileText, content, name string, search, repl []string) (string, Result) {
	sp, rp := splitElision(search), splitElision(repl)
	if len(sp) != len(rp) {
		return content, Result{Status: StatusFailed, Message: fmt.Sprintf(
			"SEARCH has %d \"...\" lines and REPLACE has %d: every \"...\" in SEARCH needs one in REPLACE at the same place", len(sp)-1, len(rp)-1)}
	}
	lines := t.lines
	applied := false
	already := -1 // the first piece taken for already applied
	for k := range sp {
		s, r := sp[k], rp[k]
		if allBlank(s) {
			if !allBlank(r) {
				return content, Result{Status: StatusFailed, Message: fmt.Sprintf(
					"piece %d of REPLACE has lines where SEARCH has none next to \"...\": nothing says where they go", k+1)}
			}
			continue
		}
		ms, _ := find(lines, s)
		switch {
		case len(ms) == 1:
			lines = splice(lines, ms[0].at, len(s), shift(r, ms[0]))
			// A piece the same in SEARCH and REPLACE is an anchor: it
			// changes nothing, and says nothing of whether the block was
			// applied before.
			applied = applied || !sameLines(s, r)
		case len(ms) > 1:
			return content, Result{Status: StatusFailed, Message: fmt.Sprintf("piece %d of SEARCH (between \"...\" lines): %s", k+1, ambiguous("it", name, ms))}
		default:
			if rm, _ := find(lines, r); len(rm) == 1 && !allBlank(r) && !misCopiedDeletion(lines, rm[0].at, s, r) {
				if already < 0 {
					already = k
				}
				continue // this piece is already applied, if the others are
			}
			return content, Result{Status: StatusFailed, Message: fmt.Sprintf("piece %d of SEARCH (between \"...\" lines): %s", k+1, noMatch("it", name, lines, s))}
		}
	}
	if !applied {
		return content, Result{Status: StatusAlreadyApplied, Rung: RungElision}
	}
	if already >= 0 {
		// A block applies whole: pieces applied now beside one "already
		// there" mean that piece's REPLACE was found elsewhere, and its
		// SEARCH matched nothing.
		return content, Result{Status: StatusFailed, Message: fmt.Sprintf("piece %d of SEARCH (between \"...\" lines): %s",
			already+1, noMatch("it", name, t.lines, sp[already]))}
	}
	t.lines = lines
	return t.join(), Result{Status: StatusApplied, Rung: RungElision}
}

func splitElision(lines []string) [][]string {
	pieces := [][]string{nil}
	for _, l := range lines {
		if isElision(l) {
			pieces = append(pieces, nil)
			continue
		}
		pieces[len(pieces)-1] = append(pieces[len(pieces)-1], l)
	}
	return pieces
}

// ambiguous is the message for a pattern that matches several places.
func ambiguous(what, name string, ms []match) string {
	var at []string
	for i, m := range ms {
		if i == 5 {
			at = append(at, "…")
			break
		}
		at = append(at, fmt.Sprint(m.at+1))
	}
	return fmt.Sprintf("%s matches %d places in %s (lines %s): add the lines around the change so that it matches one place only",
		what, len(ms), name, strings.Join(at, ", "))
}

// maxExcerptLines bounds a "did you mean" excerpt.
const maxExcerptLines = 30

// noMatch is the message for a pattern that matches nothing: the closest
// lines of the file, so the model can copy them.
func noMatch(what, name string, lines, pat []string) string {
	start, n, score := closest(lines, pat)
	if score < 0.4 {
		return fmt.Sprintf("%s matches nothing in %s, and no lines there are close to it: check the path, and copy the lines exactly from the file", what, name)
	}
	ex := lines[start : start+n]
	more := ""
	if len(ex) > maxExcerptLines {
		ex, more = ex[:maxExcerptLines], "…\n"
	}
	where := fmt.Sprintf("lines %d-%d", start+1, start+n)
	if n == 1 {
		where = fmt.Sprintf("line %d", start+1)
	}
	return fmt.Sprintf("%s matches nothing in %s. Did you mean %s?\n```\n%s\n%s```\nCopy SEARCH lines exactly as they are in the file, indentation included",
		what, name, where, strings.Join(ex, "\n"), more)
}

// closest finds the window of lines most like pat: the mean similarity of
// its lines to pat's, line by line (bigram Dice coefficient). It returns
// the window's start, length and score in [0, 1].
func closest(lines, pat []string) (int, int, float64) {
	if len(lines) == 0 || len(pat) == 0 {
		return 0, 0, 0
	}
	if len(pat) > 60 {
		pat = pat[:60] // bounds the cost; the head of a block locates it
	}
	n := min(len(pat), len(lines))
	pp := make([]bigrams, len(pat))
	for i, p := range pat {
		pp[i] = bigramsOf(p)
	}
	fp := make([]bigrams, len(lines))
	for i, l := range lines {
		fp[i] = bigramsOf(l)
	}
	best, bestAt := -1.0, 0
	for i := 0; i+n <= len(lines); i++ {
		sum := 0.0
		for j := 0; j < n; j++ {
			sum += dice(fp[i+j], pp[j])
		}
		if s := sum / float64(len(pat)); s > best {
			best, bestAt = s, i
		}
	}
	return bestAt, n, best
}

// bigrams is a line's sorted byte bigrams, whitespace trimmed.
type bigrams struct {
	grams []uint16
	blank bool
}

func bigramsOf(s string) bigrams {
	s = strings.TrimSpace(s)
	if s == "" {
		return bigrams{blank: true}
	}
	g := make([]uint16, 0, len(s))
	if len(s) == 1 {
		g = append(g, uint16(s[0]))
	}
	for i := 0; i+1 < len(s); i++ {
		g = append(g, uint16(s[i])<<8|uint16(s[i+1]))
	}
	sort.Slice(g, func(a, b int) bool { return g[a] < g[b] })
	return bigrams{grams: g}
}

func dice(a, b bigrams) float64 {
	if a.blank || b.blank {
		if a.blank && b.blank {
			return 1
		}
		return 0
	}
	common := 0
	for i, j := 0, 0; i < len(a.grams) && j < len(b.grams); {
		switch {
		case a.grams[i] == b.grams[j]:
			common++
			i++
			j++
		case a.grams[i] < b.grams[j]:
			i++
		default:
			j++
		}
	}
	return 2 * float64(common) / float64(len(a.grams)+len(b.grams))
}
