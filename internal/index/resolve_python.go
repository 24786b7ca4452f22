package index

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cra-dev/cra/internal/lang"
)

// pyIndex is what Python resolution needs to know about the tree.
type pyIndex struct {
	// pkgDirs are the directories holding an __init__.py or __init__.pyi:
	// regular packages.
	pkgDirs map[string]bool
	// modules maps a dotted module name to the file it names under each
	// source root that has one, sorted by root.
	modules map[string][]pyModule
}

// pyModule is the file a dotted module name names under one source root.
type pyModule struct {
	root string
	file string
	rank int
}

// Ranks of the files a module name can name, best first. A package wins
// over a module of the same name as in Python's own finder; a .pyi stub
// counts only when the implementation is absent, because the edge should
// lead to the code.
const (
	pyRankPackage     = iota // a/__init__.py
	pyRankModule             // a.py
	pyRankPackageStub        // a/__init__.pyi
	pyRankModuleStub         // a.pyi
)

// buildPython finds the packages and source roots of the tree and indexes
// every module under every root. paths are clean and sorted.
//
// The source roots are the repository root, every directory that is the
// parent of a top-level package (a package whose parent is not one: the
// directory Python would need on sys.path, as src/ in a src layout or
// tests/ in Django), and every non-package directory named "src" above a
// Python file (src layouts of loose modules and namespace packages).
func (r *Resolver) buildPython(paths []string) {
	r.py.pkgDirs = make(map[string]bool)
	var files []string
	for _, p := range paths {
		if !strings.HasSuffix(p, ".py") && !strings.HasSuffix(p, ".pyi") {
			continue
		}
		files = append(files, p)
		if b := resolveBase(p); b == "__init__.py" || b == "__init__.pyi" {
			r.py.pkgDirs[resolveDir(p)] = true
		}
	}
	roots := map[string]bool{"": true}
	for d := range r.py.pkgDirs {
		if d != "" && !r.py.pkgDirs[resolveDir(d)] {
			roots[resolveDir(d)] = true
		}
	}
	for _, f := range files {
		for d := resolveDir(f); d != ""; d = resolveDir(d) {
			if resolveBase(d) == "src" && !r.py.pkgDirs[d] {
				roots[d] = true
			}
		}
	}

	type entry struct {
		name string
		pyModule
	}
	var entries []entry
	for _, f := range files {
		d := resolveDir(f)
		for {
			if roots[d] {
				rel := f
				if d != "" {
					rel = f[len(d)+1:]
				}
				if name, rank, ok := pyModuleName(rel); ok {
					entries = append(entries, entry{name, pyModule{root: d, file: f, rank: rank}})
				}
			}
			if d == "" {
				break
			}
			d = resolveDir(d)
		}
	}
	slices.SortFunc(entries, func(a, b entry) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := strings.Compare(a.root, b.root); c != 0 {
			return c
		}
		return a.rank - b.rank
	})
	r.py.modules = make(map[string][]pyModule)
	for i, e := range entries {
		if i > 0 && entries[i-1].name == e.name && entries[i-1].root == e.root {
			continue // a worse file for the same module under the same root
		}
		r.py.modules[e.name] = append(r.py.modules[e.name], e.pyModule)
	}
}

// pyModuleName returns the dotted module name of the Python file at rel, a
// path relative to a source root, and the rank of that file. It reports
// false for files no import statement can name (a path element that is not
// an identifier, the root's own __init__.py).
func pyModuleName(rel string) (string, int, bool) {
	stub := strings.HasSuffix(rel, ".pyi")
	rel = strings.TrimSuffix(strings.TrimSuffix(rel, ".pyi"), ".py")
	rank := pyRankModule
	if b := resolveBase(rel); b == "__init__" {
		rel = resolveDir(rel)
		rank = pyRankPackage
		if rel == "" {
			return "", 0, false
		}
	}
	if stub {
		rank += pyRankPackageStub - pyRankPackage // the stub rank of the same kind
	}
	for seg := range strings.SplitSeq(rel, "/") {
		if !pyIdent(seg) {
			return "", 0, false
		}
	}
	return strings.ReplaceAll(rel, "/", "."), rank, true
}

// pyIdent reports whether s is a Python identifier.
func pyIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c == utf8.RuneError || !(c == '_' || unicode.IsLetter(c) || i > 0 && unicode.IsDigit(c)) {
			return false
		}
	}
	return true
}

// resolvePython resolves an "import a.b" or "from [dots]a.b import x, y".
// For a from-import each name that is a submodule gives that module's
// file, and the module's own file is added when any name is not a
// submodule (an attribute, or "*").
func (r *Resolver) resolvePython(from string, imp lang.Import) []string {
	if imp.Level < 0 || imp.Path == "" && imp.Level == 0 {
		return nil
	}
	var segs []string
	if imp.Path != "" {
		segs = strings.Split(imp.Path, ".")
		for _, s := range segs {
			if !pyIdent(s) {
				return nil
			}
		}
	}

	// find returns the file of the module named by segs plus extra, one
	// more name ("" for none).
	var find func(extra string) (string, bool)
	if imp.Level == 0 {
		find = func(extra string) (string, bool) {
			name := imp.Path
			if extra != "" {
				name += "." + extra
			}
			return r.pyAbsolute(from, name)
		}
	} else {
		base, ok := pyRelativeBase(from, imp.Level)
		if !ok {
			return nil
		}
		mod := base
		if len(segs) > 0 {
			mod, _ = resolveJoin(base, strings.Join(segs, "/"))
		}
		find = func(extra string) (string, bool) {
			if extra == "" {
				return r.pyFileAt(mod)
			}
			p, _ := resolveJoin(mod, extra)
			return r.pyFileAt(p)
		}
	}

	var out []string
	needModule := len(imp.Names) == 0
	for _, n := range imp.Names {
		n, _, _ = strings.Cut(strings.TrimSpace(n), " ") // tolerate "x as y"
		if pyIdent(n) {
			if f, ok := find(n); ok {
				out = append(out, f)
				continue
			}
		}
		needModule = true
	}
	if needModule {
		if f, ok := find(""); ok {
			out = append(out, f)
		}
	}
	return out
}

// pyRelativeBase returns the directory a relative import with level dots
// starts from: the package of from (its directory, also for an
// __init__.py), climbing one package per dot after the first. It reports
// false when the dots climb to the repository root or above it: Python
// then fails with "attempted relative import beyond top-level package".
// Where the top-level package starts depends on sys.path, so the bound is
// the repository root, not the source root: "from .. import x" in
// src/pkg/mod.py gives src/x.py although Python would refuse it; code like
// that does not run, so the leniency costs nothing in practice.
func pyRelativeBase(from string, level int) (string, bool) {
	dir := resolveDir(from)
	if dir == "" || level > strings.Count(dir, "/")+1 {
		return "", false
	}
	for range level - 1 {
		dir = resolveDir(dir)
	}
	return dir, true
}

// pyAbsolute returns the file of the absolute module name (dotted,
// identifiers only) as imported from the file from.
//
// Python searches sys.path in order; the order used here is: the
// directory of from when it is not a package (Python puts a script's
// directory first on sys.path, as pytest does for a test file outside a
// package), then the
// source roots that contain from, deepest first (the root a src-layout
// package is imported from), then the other roots, shallowest first, then
// by name.
func (r *Resolver) pyAbsolute(from, name string) (string, bool) {
	if dir := resolveDir(from); dir != "" && !r.py.pkgDirs[dir] {
		if p, ok := resolveJoin(dir, strings.ReplaceAll(name, ".", "/")); ok {
			if f, ok := r.pyFileAt(p); ok {
				return f, true
			}
		}
	}
	cands := r.py.modules[name]
	best := -1
	for i := range cands {
		if best < 0 || pyRootBefore(from, cands[i].root, cands[best].root) {
			best = i
		}
	}
	if best < 0 {
		return "", false
	}
	return cands[best].file, true
}

// pyRootBefore reports whether source root a comes before root b when
// resolving an import of the file from; see pyAbsolute.
func pyRootBefore(from, a, b string) bool {
	inA, inB := resolveUnder(from, a), resolveUnder(from, b)
	switch {
	case inA != inB:
		return inA
	case len(a) != len(b):
		return inA == (len(a) > len(b))
	}
	return a < b
}

// pyFileAt returns the file of the module at the slash path mod (a
// directory for a package, a file without extension for a module), by the
// ranks above. The root "" is a module only through its __init__.py.
func (r *Resolver) pyFileAt(mod string) (string, bool) {
	if mod == "" {
		for _, c := range []string{"__init__.py", "__init__.pyi"} {
			if r.isFile(c) {
				return c, true
			}
		}
		return "", false
	}
	for _, suffix := range pyFileSuffixes {
		if c := mod + suffix; r.isFile(c) {
			return c, true
		}
	}
	return "", false
}

// pyFileSuffixes make a module path into its candidate files, in rank order.
var pyFileSuffixes = [...]string{
	pyRankPackage:     "/__init__.py",
	pyRankModule:      ".py",
	pyRankPackageStub: "/__init__.pyi",
	pyRankModuleStub:  ".pyi",
}
