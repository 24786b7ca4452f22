package index

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// gomodIndex is what Go resolution needs to know about the tree.
type gomodIndex struct {
	// modDirs are the directories holding a go.mod.
	modDirs map[string]bool
	// byPath maps a module path (or a replaced one) to where it lives.
	byPath map[string][]gomodDir
	// pkgFiles maps a directory to its non-test .go files, sorted.
	pkgFiles map[string][]string
}

// gomodDir is a directory a module path maps to: the directory of the
// go.mod declaring it, or the local directory of a replace directive.
type gomodDir struct {
	dir string
	// replacedBy is the directory of the go.mod whose replace directive
	// gives dir; "" with replace false for a module's own go.mod.
	replacedBy string
	replace    bool
}

// buildGo reads every go.mod of the tree and groups .go files by
// directory. paths are clean and sorted.
func (r *Resolver) buildGo(paths []string, read func(string) ([]byte, error)) {
	r.gomod = gomodIndex{
		modDirs:  make(map[string]bool),
		byPath:   make(map[string][]gomodDir),
		pkgFiles: make(map[string][]string),
	}
	for _, p := range paths {
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			d := resolveDir(p)
			r.gomod.pkgFiles[d] = append(r.gomod.pkgFiles[d], p)
		}
		if resolveBase(p) != "go.mod" {
			continue
		}
		dir := resolveDir(p)
		r.gomod.modDirs[dir] = true
		data, err := read(p)
		if err != nil {
			r.warnings = append(r.warnings, fmt.Errorf("read go.mod %s: %w", p, err))
			continue
		}
		mod, replaces := gomodParse(data)
		if mod == "" {
			r.warnings = append(r.warnings, fmt.Errorf("parse go.mod %s: no module directive", p))
		} else {
			r.gomod.byPath[mod] = append(r.gomod.byPath[mod], gomodDir{dir: dir})
		}
		for _, old := range slices.Sorted(maps.Keys(replaces)) {
			if t, ok := resolveJoin(dir, replaces[old]); ok {
				r.gomod.byPath[old] = append(r.gomod.byPath[old], gomodDir{dir: t, replacedBy: dir, replace: true})
			}
		}
	}
}

// gomodParse returns the module path of a go.mod and its replace
// directives whose target is a local directory ("./x", "../y"), old module
// path to target. A replace of one version only ("old v1.2.3 => ../x") is
// taken for the whole module: the tree has one copy of it anyway.
func gomodParse(data []byte) (module string, replaces map[string]string) {
	replaces = make(map[string]string)
	block := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := gomodFields(sc.Text())
		if len(f) == 0 {
			continue
		}
		verb := block
		switch {
		case block != "" && f[0] == ")":
			block = ""
			continue
		case block == "" && len(f) == 2 && f[1] == "(":
			block = f[0]
			continue
		case block == "":
			verb, f = f[0], f[1:]
		}
		switch verb {
		case "module":
			if len(f) > 0 {
				module = f[0]
			}
		case "replace":
			i := 0
			for i < len(f) && f[i] != "=>" {
				i++
			}
			if i == 0 || i+1 >= len(f) {
				continue
			}
			if t := f[i+1]; t == "." || t == ".." || strings.HasPrefix(t, "./") || strings.HasPrefix(t, "../") {
				replaces[f[0]] = t
			}
		}
	}
	return module, replaces
}

// gomodFields splits a go.mod line into tokens, dropping a "//" comment and
// unquoting quoted tokens.
func gomodFields(line string) []string {
	var out []string
	for {
		line = strings.TrimLeft(line, " \t\r")
		if line == "" || strings.HasPrefix(line, "//") {
			return out
		}
		if line[0] == '"' || line[0] == '`' {
			end := strings.IndexByte(line[1:], line[0])
			if end < 0 {
				return append(out, line[1:])
			}
			tok := line[:end+2]
			if s, err := strconv.Unquote(tok); err == nil {
				tok = s
			} else {
				tok = tok[1 : len(tok)-1]
			}
			out = append(out, tok)
			line = line[end+2:]
			continue
		}
		end := strings.IndexAny(line, " \t\r")
		if end < 0 {
			end = len(line)
		}
		tok := line[:end]
		if i := strings.Index(tok, "//"); i >= 0 {
			return append(out, tok[:i])
		}
		out = append(out, tok)
		line = line[end:]
	}
}

// resolveGo returns the package files of a Go import path: the non-test
// .go files directly in the directory the path maps to through a module
// (or replace directive) of the tree. A directory belongs to the module of
// its nearest go.mod, so "a.com/x/sub/p" does not resolve through module
// a.com/x when sub has its own go.mod. When several modules could provide
// the path, the winner is, in order: a replace directive in the importing
// file's go.mod, the importing file's own module, any other module, any
// other replace; then the longest module path; then the directory name.
// Files excluded by build constraints are included.
func (r *Resolver) resolveGo(from, ip string) []string {
	if !gomodImportPathOK(ip) {
		return nil
	}
	importer, _ := r.gomodOwner(resolveDir(from))
	var best []string
	bestClass, bestLen, bestDir := 4, 0, ""
	for prefix := ip; ; {
		for _, m := range r.gomod.byPath[prefix] {
			target, ok := resolveJoin(m.dir, strings.TrimPrefix(ip[len(prefix):], "/"))
			if !ok || !r.gomodOwns(m.dir, target) {
				continue
			}
			files := r.gomod.pkgFiles[target]
			if len(files) == 0 {
				continue
			}
			class := 3
			switch {
			case m.replace && m.replacedBy == importer:
				class = 0
			case !m.replace && m.dir == importer:
				class = 1
			case !m.replace:
				class = 2
			}
			// Longer module paths are met first, so within a class only
			// the same path with a smaller directory beats the best.
			if class < bestClass || class == bestClass && len(prefix) == bestLen && target < bestDir {
				best, bestClass, bestLen, bestDir = files, class, len(prefix), target
			}
		}
		i := strings.LastIndexByte(prefix, '/')
		if i < 0 {
			break
		}
		prefix = prefix[:i]
	}
	return best
}

// gomodOwner returns the directory of the nearest go.mod at or above dir.
func (r *Resolver) gomodOwner(dir string) (string, bool) {
	for d := dir; ; d = resolveDir(d) {
		if r.gomod.modDirs[d] {
			return d, true
		}
		if d == "" {
			return "", false
		}
	}
}

// gomodOwns reports whether target, a directory at or below the module
// directory dir, belongs to that module rather than to a module nested in
// it. A replace target without a go.mod of its own owns what no nested
// go.mod claims.
func (r *Resolver) gomodOwns(dir, target string) bool {
	owner, ok := r.gomodOwner(target)
	if r.gomod.modDirs[dir] {
		return ok && owner == dir
	}
	return !ok || !resolveUnder(owner, dir)
}

// gomodImportPathOK reports whether ip is a well-formed Go import path:
// non-empty, slash-separated, without empty, "." or ".." elements, spaces
// or backslashes.
func gomodImportPathOK(ip string) bool {
	if ip == "" || strings.ContainsAny(ip, "\\ \t\n\r\x00") {
		return false
	}
	for seg := range strings.SplitSeq(ip, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}
