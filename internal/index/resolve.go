package index

import (
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/cra-dev/cra/internal/lang"
)

// Resolver maps import statements to files of one repository, so that the
// indexer can store file-level dependency edges (seed 001 §4.5, the
// dependencies table). Python module paths, TS/JS specifiers and Go import
// paths become the repository files they name; imports of anything outside
// the repository (standard libraries, third-party packages) resolve to
// nothing. Resolution is a pure function of the file list and the
// configuration files read by NewResolver: it never touches the disk again.
//
// A Resolver is immutable once built and safe for concurrent use.
type Resolver struct {
	files map[string]struct{}
	py    pyIndex
	ts    tsIndex
	gomod gomodIndex
	// warnings are the configuration files that could not be read or
	// parsed, in a deterministic order.
	warnings []error
}

// NewResolver builds a resolver over the repository's file list. read returns the
// content of a repository file (used for go.mod, tsconfig.json/jsconfig.json); it
// may return an error for files that do not exist.
//
// paths should list every file of the repository, not only source files:
// go.mod, tsconfig.json, jsconfig.json, package.json and __init__.py files
// are found through it. Paths are slash-separated and relative to the
// repository root; a path that is not in that clean form ("./a", "a//b",
// "/abs", "../x") is ignored, so every file Resolve returns is an element of
// paths. NewResolver reads go.mod, tsconfig.json, jsconfig.json and
// package.json files (and the files tsconfig "extends" names) once; a file
// that cannot be read or parsed is skipped and reported by Warnings. A nil
// read reads nothing.
func NewResolver(paths []string, read func(path string) ([]byte, error)) *Resolver {
	if read == nil {
		read = func(string) ([]byte, error) { return nil, fs.ErrNotExist }
	}
	r := &Resolver{files: make(map[string]struct{}, len(paths))}
	clean := make([]string, 0, len(paths))
	for _, p := range paths {
		if !resolveCleanPath(p) {
			continue
		}
		if _, dup := r.files[p]; dup {
			continue
		}
		r.files[p] = struct{}{}
		clean = append(clean, p)
	}
	slices.Sort(clean)
	r.buildPython(clean)
	r.buildTS(clean, read)
	r.buildGo(clean, read)
	return r
}

// Resolve returns the repository files the import in file from refers to, sorted, without from itself.
//
// l is the language of from; the dependency kind ("import", or "type_ref"
// for imp.TypeOnly) is the caller's to choose. A Python "import a.b" depends
// on a/b.py or a/b/__init__.py only, not on a/__init__.py, although Python
// runs it too: the edge records what the statement names. A Go import
// depends on every non-test .go file of the package directory. Resolve
// returns nil when nothing in the repository matches, including for a from
// that is not a clean repository path.
func (r *Resolver) Resolve(from string, l lang.Language, imp lang.Import) []string {
	if !resolveCleanPath(from) {
		return nil
	}
	var got []string
	switch l {
	case lang.Python:
		got = r.resolvePython(from, imp)
	case lang.TypeScript, lang.TSX, lang.JavaScript:
		if f, ok := r.resolveTS(from, l, imp.Path); ok {
			got = []string{f}
		}
	case lang.Go:
		got = r.resolveGo(from, imp.Path)
	}
	out := make([]string, 0, len(got))
	for _, f := range got {
		if f != from {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Warnings returns the configuration files (go.mod, tsconfig.json,
// jsconfig.json, package.json and tsconfig "extends" targets) that could not
// be read or parsed, one error per file naming it. Resolution goes on
// without them, so the indexer should show these to the user rather than
// fail (seed 001 §15).
func (r *Resolver) Warnings() []error {
	return slices.Clone(r.warnings)
}

// isFile reports whether p is a file of the repository.
func (r *Resolver) isFile(p string) bool {
	_, ok := r.files[p]
	return ok
}

// resolveCleanPath reports whether p is a clean, slash-separated path
// relative to the repository root that names something below it.
func resolveCleanPath(p string) bool {
	return p != "" && p != "." && path.Clean(p) == p && p[0] != '/' &&
		p != ".." && !strings.HasPrefix(p, "../")
}

// resolveJoin joins rel to the repository directory dir ("" is the root)
// and cleans the result; it reports false when the result leaves the
// repository or rel is absolute. The root itself is "".
func resolveJoin(dir, rel string) (string, bool) {
	if strings.HasPrefix(rel, "/") {
		return "", false
	}
	p := path.Join(dir, rel)
	switch {
	case p == ".":
		return "", true
	case p == ".." || strings.HasPrefix(p, "../") || strings.HasPrefix(p, "/"):
		return "", false
	}
	return p, true
}

// resolveDir returns the directory of the repository path p, "" for the root.
func resolveDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return ""
	}
	return p[:i]
}

// resolveBase returns the last element of the repository path p.
func resolveBase(p string) string {
	return p[strings.LastIndexByte(p, '/')+1:]
}

// resolveUnder reports whether p is dir itself or below it; every path is
// under the root "".
func resolveUnder(p, dir string) bool {
	return dir == "" || p == dir || len(p) > len(dir) && p[len(dir)] == '/' && p[:len(dir)] == dir
}
