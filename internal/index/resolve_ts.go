package index

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/cra-dev/cra/internal/lang"
)

// tsIndex is what TS/JS resolution needs to know about the tree.
type tsIndex struct {
	// configs maps a directory to the settings of its tsconfig.json (or,
	// when it has none, its jsconfig.json), with "extends" applied.
	configs map[string]*tsSettings
	// manifests maps a directory to its package.json.
	manifests map[string]*tsManifest
	// workspace maps a package name to the directory of the package.json
	// declaring it, so that monorepo packages importing each other by name
	// resolve to source.
	workspace map[string]string
	// nodeModules tells whether any package.json lies under a
	// node_modules directory, so that bare specifiers skip the search
	// for one in the common case of none.
	nodeModules bool
}

// tsSettings are the module resolution settings of one tsconfig.json.
type tsSettings struct {
	// baseURL is the effective compilerOptions.baseUrl as a repository
	// directory, when hasBaseURL.
	baseURL    string
	hasBaseURL bool
	// pathsBase is the directory "paths" substitutions are relative to:
	// baseUrl when set, else the directory of the config defining paths.
	pathsBase string
	// configDir replaces "${configDir}" in paths: the directory of the
	// config in effect, not of the one that defined the value.
	configDir string
	// outDir and rootDir are compilerOptions.outDir and rootDir (by
	// default the config's directory) as repository directories: a
	// package.json naming build output under outDir is mapped back to
	// the source under rootDir.
	outDir    string
	hasOutDir bool
	rootDir   string
	// patterns are the "paths" entries in match order.
	patterns []tsPattern
}

// tsPattern is one "paths" entry (or package.json "exports" subpath):
// a key with at most one "*" and its substitutions, tried in order.
type tsPattern struct {
	prefix, suffix string
	wildcard       bool
	subs           []string
}

// newTSPattern reads a paths or exports key: exact, or with one '*'
// matching any text; a key with more is rejected, as tsc rejects it.
func newTSPattern(key string, subs []string) (tsPattern, bool) {
	pat := tsPattern{prefix: key, subs: subs}
	switch strings.Count(key, "*") {
	case 0:
	case 1:
		pat.prefix, pat.suffix, _ = strings.Cut(key, "*")
		pat.wildcard = true
	default:
		return tsPattern{}, false
	}
	return pat, true
}

// tsManifest is what resolution uses of a package.json.
type tsManifest struct {
	name string
	// entries are the targets for the package root, best first:
	// exports ".", types, typings, module, main.
	entries []string
	// subpaths are the "exports" subpath entries other than ".".
	subpaths []tsPattern
}

// Extensions tried after an extensionless specifier, for importers written
// in TypeScript and in JavaScript: each prefers its own kind when both a
// source and its compiled output are in the tree.
var (
	tsExtsTS = []string{".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts"}
	tsExtsJS = []string{".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".d.ts", ".mts", ".cts"}
	// tsIndexExts are tried for index files of a directory.
	tsIndexExts = []string{".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs"}
)

// tsMaxDepth bounds package.json indirections (a "main" naming a directory
// with its own package.json) and tsconfig "extends" chains.
const tsMaxDepth = 8

// resolveTS resolves a TS/JS module specifier imported from the file from,
// in this order:
//
//  1. a relative specifier ("./x", "../y", ".") from the directory of from;
//  2. the "paths" of the nearest tsconfig.json/jsconfig.json above from:
//     exact key, else the wildcard key with the longest prefix, each
//     substitution in order;
//  3. its "baseUrl";
//  4. a package committed under a node_modules directory above from, the
//     nearest first, as Node looks;
//  5. a package of the repository by its package.json "name" (workspaces).
//
// Each candidate path is tried as a file (see tsFile), then as a directory
// (see tsDirectory). Anything else is a third-party package or a Node
// builtin and resolves to nothing. A "?query" suffix (bundler loaders as
// "./x.svg?raw") is ignored.
func (r *Resolver) resolveTS(from string, l lang.Language, spec string) (string, bool) {
	spec, _, _ = strings.Cut(spec, "?")
	if spec == "" || spec[0] == '/' {
		return "", false
	}
	fromTS := l != lang.JavaScript
	if spec == "." || spec == ".." || strings.HasPrefix(spec, "./") || strings.HasPrefix(spec, "../") {
		p, ok := resolveJoin(resolveDir(from), spec)
		if !ok {
			return "", false
		}
		return r.tsPath(p, tsDirOnly(spec), fromTS, 0)
	}
	if cfg := r.tsConfigFor(from); cfg != nil {
		if pat, star, ok := tsMatch(cfg.patterns, spec); ok {
			for _, sub := range pat.subs {
				base := cfg.pathsBase
				if rest, ok := strings.CutPrefix(sub, "${configDir}"); ok {
					base, sub = cfg.configDir, "./"+rest
				}
				sub = strings.Replace(sub, "*", star, 1)
				p, ok := resolveJoin(base, sub)
				if !ok {
					continue
				}
				if f, ok := r.tsPath(p, tsDirOnly(sub), fromTS, 0); ok {
					return f, true
				}
			}
		}
		if cfg.hasBaseURL {
			if p, ok := resolveJoin(cfg.baseURL, spec); ok {
				if f, ok := r.tsPath(p, tsDirOnly(spec), fromTS, 0); ok {
					return f, true
				}
			}
		}
	}
	return r.tsPackage(from, spec, fromTS)
}

// tsDirOnly reports whether spec can only name a directory.
func tsDirOnly(spec string) bool {
	return strings.HasSuffix(spec, "/") || spec == "." || spec == ".." ||
		strings.HasSuffix(spec, "/.") || strings.HasSuffix(spec, "/..")
}

// tsConfigFor returns the settings of the nearest tsconfig.json or
// jsconfig.json in the directory of from or above it, nil when none.
// Its "include" and "exclude" are not consulted.
func (r *Resolver) tsConfigFor(from string) *tsSettings {
	for d := resolveDir(from); ; d = resolveDir(d) {
		if s := r.ts.configs[d]; s != nil {
			return s
		}
		if d == "" {
			return nil
		}
	}
}

// tsMatch returns the first pattern of pats matching spec and the text the
// "*" stands for; pats are in match order.
func tsMatch(pats []tsPattern, spec string) (tsPattern, string, bool) {
	for _, p := range pats {
		if !p.wildcard {
			if spec == p.prefix {
				return p, "", true
			}
			continue
		}
		if len(spec) >= len(p.prefix)+len(p.suffix) && strings.HasPrefix(spec, p.prefix) && strings.HasSuffix(spec, p.suffix) {
			return p, spec[len(p.prefix) : len(spec)-len(p.suffix)], true
		}
	}
	return tsPattern{}, "", false
}

// tsPath resolves the repository path p as a file, unless dirOnly, then as
// a directory.
func (r *Resolver) tsPath(p string, dirOnly, fromTS bool, depth int) (string, bool) {
	if !dirOnly && p != "" {
		if f, ok := r.tsFile(p, fromTS); ok {
			return f, true
		}
	}
	return r.tsDirectory(p, fromTS, depth)
}

// tsFile resolves p as a file: p itself; p with a JavaScript extension
// swapped for its TypeScript source, as the TS ESM convention writes
// "./x.js" for x.ts (.js→.ts/.tsx/.d.ts, .jsx→.tsx/.d.ts, .mjs→.mts/.d.mts,
// .cjs→.cts/.d.cts); p with an extension appended. A TypeScript importer
// tries the swap before p itself, as tsc does; a JavaScript one after.
func (r *Resolver) tsFile(p string, fromTS bool) (string, bool) {
	if !fromTS && r.isFile(p) {
		return p, true
	}
	if f, ok := r.tsSwapped(p); ok {
		return f, true
	}
	if fromTS && r.isFile(p) {
		return p, true
	}
	exts := tsExtsTS
	if !fromTS {
		exts = tsExtsJS
	}
	for _, e := range exts {
		if r.isFile(p + e) {
			return p + e, true
		}
	}
	return "", false
}

// tsSwapped tries the TypeScript sources a JavaScript file name stands for.
func (r *Resolver) tsSwapped(p string) (string, bool) {
	var stem string
	var exts []string
	switch {
	case strings.HasSuffix(p, ".js"):
		stem, exts = p[:len(p)-3], []string{".ts", ".tsx", ".d.ts"}
	case strings.HasSuffix(p, ".jsx"):
		stem, exts = p[:len(p)-4], []string{".tsx", ".d.ts"}
	case strings.HasSuffix(p, ".mjs"):
		stem, exts = p[:len(p)-4], []string{".mts", ".d.mts"}
	case strings.HasSuffix(p, ".cjs"):
		stem, exts = p[:len(p)-4], []string{".cts", ".d.cts"}
	default:
		return "", false
	}
	for _, e := range exts {
		if r.isFile(stem + e) {
			return stem + e, true
		}
	}
	return "", false
}

// tsDirectory resolves the directory p: its package.json entry point,
// then its index file.
func (r *Resolver) tsDirectory(p string, fromTS bool, depth int) (string, bool) {
	if m := r.ts.manifests[p]; m != nil && depth < tsMaxDepth {
		if f, ok := r.tsTargets(p, m.entries, fromTS, depth+1); ok {
			return f, true
		}
	}
	for _, e := range tsIndexExts {
		if f, ok := resolveJoin(p, "index"+e); ok && r.isFile(f) {
			return f, true
		}
	}
	return "", false
}

// tsTargets resolves package.json targets relative to the package
// directory dir, the first that exists winning. Targets usually name build
// output that is not in the repository ("./dist/index.js"); when none
// exists, each is mapped back to its source: from the outDir of the
// package's tsconfig to its rootDir, as tsc compiled it; failing that, with
// its first element (dist, lib, build, out, esm, cjs) replaced by src,
// the layout nearly every TypeScript package compiles from. Mapped paths
// drop their extension so that the source's own is found.
func (r *Resolver) tsTargets(dir string, targets []string, fromTS bool, depth int) (string, bool) {
	for _, t := range targets {
		if p, ok := resolveJoin(dir, t); ok {
			if f, ok := r.tsPath(p, tsDirOnly(t), fromTS, depth); ok {
				return f, true
			}
		}
	}
	if cfg := r.tsConfigFor(resolveJoinFile(dir, "package.json")); cfg != nil && cfg.hasOutDir {
		for _, t := range targets {
			p, ok := resolveJoin(dir, t)
			if !ok || p == cfg.outDir || !resolveUnder(p, cfg.outDir) {
				continue
			}
			rel := tsStripOutputExt(strings.TrimPrefix(p[len(cfg.outDir):], "/"))
			if src, ok := resolveJoin(cfg.rootDir, rel); ok {
				if f, ok := r.tsPath(src, false, fromTS, depth); ok {
					return f, true
				}
			}
		}
	}
	for _, t := range targets {
		src, ok := tsSourceGuess(t)
		if !ok {
			continue
		}
		if p, ok := resolveJoin(dir, src); ok {
			if f, ok := r.tsPath(p, false, fromTS, depth); ok {
				return f, true
			}
		}
	}
	return "", false
}

// tsSourceGuess maps a build output path to where its source most likely is.
func tsSourceGuess(t string) (string, bool) {
	t = strings.TrimPrefix(t, "./")
	first, rest, ok := strings.Cut(t, "/")
	if !ok || rest == "" {
		return "", false
	}
	switch first {
	case "dist", "lib", "build", "out", "esm", "cjs":
	default:
		return "", false
	}
	return "src/" + tsStripOutputExt(rest), true
}

// tsStripOutputExt drops the extension of a compiled file name.
func tsStripOutputExt(p string) string {
	for _, e := range []string{".d.ts", ".d.mts", ".d.cts", ".js", ".mjs", ".cjs", ".jsx"} {
		if s, ok := strings.CutSuffix(p, e); ok {
			return s
		}
	}
	return p
}

// tsPackage resolves a bare specifier naming a package of the repository:
// "name" to its entry point (falling back to src/index), and "name/sub"
// through its "exports", then to name/sub and name/src/sub.
func (r *Resolver) tsPackage(from, spec string, fromTS bool) (string, bool) {
	name, sub := tsSplitPackage(spec)
	dir, ok := r.tsNodeModules(from, name)
	if !ok {
		dir, ok = r.ts.workspace[name]
	}
	if !ok {
		return "", false
	}
	m := r.ts.manifests[dir]
	if sub == "" {
		if f, ok := r.tsDirectory(dir, fromTS, 0); ok {
			return f, true
		}
		if p, ok := resolveJoin(dir, "src"); ok {
			return r.tsDirectory(p, fromTS, tsMaxDepth)
		}
		return "", false
	}
	if pat, star, ok := tsMatch(m.subpaths, "./"+sub); ok {
		targets := make([]string, len(pat.subs))
		for i, s := range pat.subs {
			targets[i] = strings.Replace(s, "*", star, 1)
		}
		if f, ok := r.tsTargets(dir, targets, fromTS, 0); ok {
			return f, true
		}
	}
	for _, rel := range []string{sub, "src/" + sub} {
		if p, ok := resolveJoin(dir, rel); ok && resolveUnder(p, dir) {
			if f, ok := r.tsPath(p, tsDirOnly(sub), fromTS, 0); ok {
				return f, true
			}
		}
	}
	return "", false
}

// tsNodeModules returns the directory of the package name in the nearest
// node_modules directory above from that has it.
func (r *Resolver) tsNodeModules(from, name string) (string, bool) {
	if !r.ts.nodeModules {
		return "", false
	}
	for d := resolveDir(from); ; d = resolveDir(d) {
		if p, ok := resolveJoin(d, "node_modules/"+name); ok && r.ts.manifests[p] != nil && resolveUnder(p, resolveJoinFile(d, "node_modules")) {
			return p, true
		}
		if d == "" {
			return "", false
		}
	}
}

// tsSplitPackage splits a bare specifier into the package name ("x" or
// "@scope/x") and the subpath after it.
func tsSplitPackage(spec string) (name, sub string) {
	n := 1
	if strings.HasPrefix(spec, "@") {
		n = 2
	}
	parts := strings.SplitN(spec, "/", n+1)
	if len(parts) <= n {
		return spec, ""
	}
	return strings.Join(parts[:n], "/"), parts[n]
}

// buildTS reads every tsconfig.json, jsconfig.json and package.json of the
// tree. paths are clean and sorted.
func (r *Resolver) buildTS(paths []string, read func(string) ([]byte, error)) {
	r.ts.configs = make(map[string]*tsSettings)
	r.ts.manifests = make(map[string]*tsManifest)
	r.ts.workspace = make(map[string]string)
	b := tsConfigLoader{r: r, read: read, raw: make(map[string]*tsRawConfig)}
	for _, p := range paths {
		switch resolveBase(p) {
		case "tsconfig.json":
			r.ts.configs[resolveDir(p)] = b.settings(p)
		case "jsconfig.json":
			if !r.isFile(resolveJoinFile(resolveDir(p), "tsconfig.json")) {
				r.ts.configs[resolveDir(p)] = b.settings(p)
			}
		case "package.json":
			m, err := tsReadManifest(read, p)
			if err != nil {
				r.warnings = append(r.warnings, err)
				continue
			}
			dir := resolveDir(p)
			r.ts.manifests[dir] = m
			// paths are sorted, so a name declared twice keeps the
			// shallowest, then first, directory. Packages under
			// node_modules are found by tsNodeModules only.
			if strings.Contains("/"+dir+"/", "/node_modules/") {
				r.ts.nodeModules = true
				continue
			}
			if m.name == "" {
				continue
			}
			if old, dup := r.ts.workspace[m.name]; !dup || strings.Count(dir, "/") < strings.Count(old, "/") {
				r.ts.workspace[m.name] = dir
			}
		}
	}
}

// resolveJoinFile joins the file name to the directory dir.
func resolveJoinFile(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// tsRawConfig is one tsconfig file as written.
type tsRawConfig struct {
	dir                      string
	extends                  []string
	baseURL, outDir, rootDir tsSetting
	paths                    map[string][]string
	hasPaths                 bool
}

// tsSetting is a directory-valued compiler option as written, with the
// directory of the config file that set it: a relative value is relative
// to that file, not to the config extending it.
type tsSetting struct {
	value, dir string
	set        bool
}

// resolve returns the setting as a repository directory; "${configDir}"
// stands for configDir, the directory of the config in effect.
func (v tsSetting) resolve(configDir string) (string, bool) {
	base, rel := v.dir, v.value
	if rest, ok := strings.CutPrefix(rel, "${configDir}"); ok {
		base, rel = configDir, "./"+rest
	}
	return resolveJoin(base, rel)
}

// tsConfigLoader reads tsconfig files and follows their "extends",
// reading each file once.
type tsConfigLoader struct {
	r    *Resolver
	read func(string) ([]byte, error)
	raw  map[string]*tsRawConfig // nil value: unreadable
}

// tsMerged is the result of applying an "extends" chain, before values
// are made relative to the config in effect.
type tsMerged struct {
	baseURL, outDir, rootDir tsSetting
	paths                    map[string][]string
	pathsDir                 string
	hasPaths                 bool
}

// settings returns the effective settings of the config file p.
func (b *tsConfigLoader) settings(p string) *tsSettings {
	m := b.merge(p, 0, map[string]bool{})
	dir := resolveDir(p)
	s := &tsSettings{configDir: dir, pathsBase: m.pathsDir, rootDir: dir}
	if m.baseURL.set {
		if u, ok := m.baseURL.resolve(dir); ok {
			s.baseURL, s.hasBaseURL, s.pathsBase = u, true, u
		} else {
			b.r.warnings = append(b.r.warnings, fmt.Errorf("tsconfig %s: baseUrl %q is outside the repository", p, m.baseURL.value))
		}
	}
	if m.outDir.set {
		if d, ok := m.outDir.resolve(dir); ok && d != "" {
			s.outDir, s.hasOutDir = d, true
		}
	}
	if m.rootDir.set {
		if d, ok := m.rootDir.resolve(dir); ok {
			s.rootDir = d
		}
	}
	for key, subs := range m.paths {
		if pat, ok := newTSPattern(key, subs); ok {
			s.patterns = append(s.patterns, pat)
		}
	}
	tsSortPatterns(s.patterns)
	return s
}

// tsSortPatterns puts patterns in match order: exact keys first, then the
// longest prefix, then the longest suffix, then by key.
func tsSortPatterns(pats []tsPattern) {
	slices.SortFunc(pats, func(a, b tsPattern) int {
		switch {
		case a.wildcard != b.wildcard:
			if !a.wildcard {
				return -1
			}
			return 1
		case len(a.prefix) != len(b.prefix):
			return len(b.prefix) - len(a.prefix)
		case len(a.suffix) != len(b.suffix):
			return len(b.suffix) - len(a.suffix)
		}
		return strings.Compare(a.prefix+"*"+a.suffix, b.prefix+"*"+b.suffix)
	})
}

// merge applies the "extends" chain of the config file p: the configs it
// extends in order, each overriding the one before, then p itself.
// Following "paths" and "baseUrl" semantics, each value is kept with the
// directory of the file that set it. Cycles and chains deeper than
// tsMaxDepth are cut with a warning; "extends" naming a package (not a
// relative path) is ignored, as packages are outside the repository.
func (b *tsConfigLoader) merge(p string, depth int, visiting map[string]bool) tsMerged {
	var m tsMerged
	if visiting[p] || depth > tsMaxDepth {
		b.r.warnings = append(b.r.warnings, fmt.Errorf("tsconfig %s: extends chain is cyclic or deeper than %d", p, tsMaxDepth))
		return m
	}
	raw := b.load(p)
	if raw == nil {
		return m
	}
	visiting[p] = true
	defer delete(visiting, p)
	over := func(from tsMerged) {
		for _, f := range []struct{ dst, src *tsSetting }{
			{&m.baseURL, &from.baseURL}, {&m.outDir, &from.outDir}, {&m.rootDir, &from.rootDir},
		} {
			if f.src.set {
				*f.dst = *f.src
			}
		}
		if from.hasPaths {
			m.paths, m.pathsDir, m.hasPaths = from.paths, from.pathsDir, true
		}
	}
	for _, e := range raw.extends {
		if ep, ok := b.extendsPath(raw.dir, e); ok {
			over(b.merge(ep, depth+1, visiting))
		}
	}
	over(tsMerged{baseURL: raw.baseURL, outDir: raw.outDir, rootDir: raw.rootDir, paths: raw.paths, pathsDir: raw.dir, hasPaths: raw.hasPaths})
	return m
}

// extendsPath returns the config file a relative "extends" value names
// from the directory dir: the path as written when it is a file of the
// tree or ends in ".json", else with ".json" added, as tsc does.
func (b *tsConfigLoader) extendsPath(dir, e string) (string, bool) {
	if e != "." && e != ".." && !strings.HasPrefix(e, "./") && !strings.HasPrefix(e, "../") {
		return "", false
	}
	p, ok := resolveJoin(dir, e)
	if !ok || p == "" {
		return "", false
	}
	if b.r.isFile(p) || strings.HasSuffix(p, ".json") {
		return p, true
	}
	return p + ".json", true
}

// load reads and parses the config file p once; nil when it cannot be
// read or parsed (with a warning).
func (b *tsConfigLoader) load(p string) *tsRawConfig {
	if raw, seen := b.raw[p]; seen {
		return raw
	}
	b.raw[p] = nil
	data, err := b.read(p)
	if err != nil {
		b.r.warnings = append(b.r.warnings, fmt.Errorf("read tsconfig %s: %w", p, err))
		return nil
	}
	var doc struct {
		Extends         json.RawMessage `json:"extends"`
		CompilerOptions struct {
			BaseURL *string             `json:"baseUrl"`
			OutDir  *string             `json:"outDir"`
			RootDir *string             `json:"rootDir"`
			Paths   map[string][]string `json:"paths"`
		} `json:"compilerOptions"`
	}
	if err := json.Unmarshal(stripJSONC(data), &doc); err != nil {
		b.r.warnings = append(b.r.warnings, fmt.Errorf("parse tsconfig %s: %w", p, err))
		return nil
	}
	dir := resolveDir(p)
	setting := func(v *string) tsSetting {
		if v == nil {
			return tsSetting{}
		}
		return tsSetting{value: *v, dir: dir, set: true}
	}
	co := doc.CompilerOptions
	raw := &tsRawConfig{
		dir:      dir,
		baseURL:  setting(co.BaseURL),
		outDir:   setting(co.OutDir),
		rootDir:  setting(co.RootDir),
		paths:    co.Paths,
		hasPaths: co.Paths != nil,
	}
	var one string
	if json.Unmarshal(doc.Extends, &one) == nil {
		raw.extends = []string{one}
	} else {
		_ = json.Unmarshal(doc.Extends, &raw.extends) // TS 5.0 arrays; anything else extends nothing
	}
	b.raw[p] = raw
	return raw
}

// tsReadManifest reads the package.json at p.
func tsReadManifest(read func(string) ([]byte, error), p string) (*tsManifest, error) {
	data, err := read(p)
	if err != nil {
		return nil, fmt.Errorf("read package.json %s: %w", p, err)
	}
	var doc struct {
		Name    any `json:"name"`
		Main    any `json:"main"`
		Module  any `json:"module"`
		Types   any `json:"types"`
		Typings any `json:"typings"`
		Exports any `json:"exports"`
	}
	if err := json.Unmarshal(stripJSONC(data), &doc); err != nil {
		return nil, fmt.Errorf("parse package.json %s: %w", p, err)
	}
	m := &tsManifest{}
	m.name, _ = doc.Name.(string)
	exports := tsExportMap(doc.Exports)
	m.entries = append(m.entries, exports["."]...)
	for _, v := range []any{doc.Types, doc.Typings, doc.Module, doc.Main} {
		if s, ok := v.(string); ok && s != "" {
			m.entries = append(m.entries, s)
		}
	}
	for key, targets := range exports {
		if key == "." || !strings.HasPrefix(key, "./") {
			continue
		}
		if pat, ok := newTSPattern(key, targets); ok {
			m.subpaths = append(m.subpaths, pat)
		}
	}
	tsSortPatterns(m.subpaths)
	return m, nil
}

// tsExportMap normalises a package.json "exports" value to its subpaths
// ("." for the package root) and, for each, the targets in the order they
// are tried.
func tsExportMap(v any) map[string][]string {
	obj, isObj := v.(map[string]any)
	if !isObj {
		if t := tsConditionTargets(v, 0); len(t) > 0 {
			return map[string][]string{".": t}
		}
		return nil
	}
	subpaths := false
	for k := range obj {
		if strings.HasPrefix(k, ".") {
			subpaths = true
			break
		}
	}
	if !subpaths {
		return map[string][]string{".": tsConditionTargets(obj, 0)}
	}
	out := make(map[string][]string)
	for k, val := range obj {
		if strings.HasPrefix(k, ".") {
			out[k] = tsConditionTargets(val, 0)
		}
	}
	return out
}

// tsConditions are the "exports" conditions in the order tried; other
// conditions follow in name order. Types and ESM first: they most often
// name the TypeScript source in a monorepo.
var tsConditions = []string{"types", "import", "module", "default", "require", "node", "browser"}

// tsConditionTargets flattens an "exports" target (a string, an array of
// fallbacks or an object of conditions) into its paths.
func tsConditionTargets(v any, depth int) []string {
	if depth > tsMaxDepth {
		return nil
	}
	switch t := v.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			out = append(out, tsConditionTargets(e, depth+1)...)
		}
		return out
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			if !slices.Contains(tsConditions, k) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		var out []string
		for _, k := range append(slices.Clone(tsConditions), keys...) {
			if val, ok := t[k]; ok {
				out = append(out, tsConditionTargets(val, depth+1)...)
			}
		}
		return out
	}
	return nil
}
