package index

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/lang"
	"github.com/cra-dev/cra/internal/statedir"
)

// MaxFileSize is the largest file the indexer reads; larger files are
// counted as skipped (generated code, data dumps, bundles).
const MaxFileSize = 1 << 20

// Skip reasons, as counted in Result.Skipped.
const (
	SkipExcludedDir = "excluded directory"
	SkipSymlink     = "symlink"
	SkipNotRegular  = "not a regular file"
	SkipTooLarge    = "larger than 1 MiB"
	SkipBinary      = "binary"
	SkipLockfile    = "lockfile"
	SkipMinified    = "minified"
	SkipUnreadable  = "unreadable"
	SkipReadError   = "read error"
)

// excludedDirs are directory names never indexed: dependencies, build
// output, virtualenvs and caches (the list plus their usual kin).
var excludedDirs = map[string]bool{
	".git": true, statedir.Name: true, ".hg": true, ".svn": true,
	"node_modules": true, "bower_components": true, "vendor": true,
	"dist": true, "build": true, "__pycache__": true, "site-packages": true,
	".venv": true, "venv": true, ".tox": true, ".nox": true, ".eggs": true,
	".mypy_cache": true, ".pytest_cache": true, ".ruff_cache": true, ".next": true,
}

var lockfiles = map[string]bool{
	"package-lock.json": true, "yarn.lock": true, "pnpm-lock.yaml": true, "go.sum": true,
	"poetry.lock": true, "cargo.lock": true, "uv.lock": true, "pipfile.lock": true,
	"composer.lock": true, "gemfile.lock": true, "npm-shrinkwrap.json": true, "bun.lockb": true,
}

// binaryExts are skipped without reading; anything else is read and
// skipped if it holds a NUL byte.
var binaryExts = map[string]bool{
	".png": true, ".jpg": true, ".jpeg": true, ".gif": true, ".bmp": true, ".ico": true, ".webp": true,
	".pdf": true, ".zip": true, ".gz": true, ".tgz": true, ".bz2": true, ".xz": true, ".7z": true, ".tar": true,
	".so": true, ".dylib": true, ".dll": true, ".exe": true, ".a": true, ".o": true, ".class": true, ".jar": true,
	".pyc": true, ".pyo": true, ".whl": true, ".woff": true, ".woff2": true, ".ttf": true, ".otf": true, ".eot": true,
	".mp3": true, ".mp4": true, ".wav": true, ".ogg": true, ".mov": true, ".avi": true, ".sqlite": true, ".db": true,
	// Compiled gettext catalogs (Django has 1,200) and other data formats:
	// without these, every run reads them to find the NUL byte.
	".mo": true, ".lzma": true, ".egg": true, ".tif": true, ".tiff": true, ".dbf": true, ".shp": true, ".shx": true,
}

// textLanguages names the unparsed text files cra keeps in the index so
// that retrieval can rank them (READMEs, changelogs, configs).
var textLanguages = map[string]string{
	".md": "markdown", ".markdown": "markdown", ".rst": "rst", ".txt": "text", ".adoc": "asciidoc",
	".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".json": "json", ".ini": "ini", ".cfg": "ini",
	".html": "html", ".htm": "html", ".css": "css", ".scss": "scss", ".sh": "shell", ".bash": "shell",
	".sql": "sql", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp", ".rs": "rust",
	".java": "java", ".kt": "kotlin", ".rb": "ruby", ".php": "php", ".swift": "swift", ".mod": "gomod",
	".xml": "xml", ".svg": "svg", ".proto": "protobuf", ".graphql": "graphql", ".vue": "vue", ".svelte": "svelte",
}

// candidate is a file that passed the scan's cheap checks.
type candidate struct {
	rel   string // slash-separated, relative to the repository root
	abs   string
	size  int64
	mtime int64
	lang  string        // files.language
	parse lang.Language // "" when the file is stored but not parsed
}

// Skip is a file left out of the index and why.
type Skip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// classify returns the stored language and the parser language of a path,
// or a skip reason.
func classify(rel string) (stored string, parse lang.Language, reason string) {
	base := strings.ToLower(path.Base(rel))
	if lockfiles[base] {
		return "", "", SkipLockfile
	}
	if strings.Contains(base, ".min.") {
		return "", "", SkipMinified
	}
	ext := path.Ext(base)
	if binaryExts[ext] {
		return "", "", SkipBinary
	}
	if l, ok := lang.Detect(rel); ok {
		return string(l), l, ""
	}
	if t, ok := textLanguages[ext]; ok {
		return t, "", ""
	}
	return "text", "", ""
}

// excludedPath reports whether any directory on rel's way is excluded.
func excludedPath(rel string, isVenv func(dir string) bool) bool {
	dir := path.Dir(rel)
	for dir != "." && dir != "/" {
		if excludedDirs[path.Base(dir)] || isVenv(dir) {
			return true
		}
		dir = path.Dir(dir)
	}
	return false
}

// scan lists the repository's candidate files and the files it skips
// without reading. In a git work tree the list is git's (tracked plus
// untracked-but-not-ignored); elsewhere a walk that honours .gitignore.
func scan(ctx context.Context, root string, isGit bool) ([]candidate, []Skip, int, error) {
	var (
		rels  []string
		skips []Skip
		err   error
	)
	if isGit {
		rels, err = gitx.ListFiles(ctx, root)
	} else {
		rels, skips, err = walk(ctx, root)
	}
	if err != nil {
		return nil, nil, 0, err
	}
	venv := map[string]bool{}
	isVenv := func(dir string) bool {
		v, ok := venv[dir]
		if !ok {
			_, err := os.Lstat(filepath.Join(root, filepath.FromSlash(dir), "pyvenv.cfg"))
			v = err == nil
			venv[dir] = v
		}
		return v
	}
	excluded := excludedMemo(isVenv)
	var (
		cands   []candidate
		scanned = len(skips)
	)
	for _, rel := range rels {
		if err := ctx.Err(); err != nil {
			return nil, nil, 0, err
		}
		rel = cleanRel(rel)
		abs := filepath.Join(root, filepath.FromSlash(rel))
		st, err := os.Lstat(abs)
		if errors.Is(err, fs.ErrNotExist) {
			continue // tracked but deleted in the work tree: absent
		}
		scanned++
		if excluded(rel) {
			skips = append(skips, Skip{rel, SkipExcludedDir})
			continue
		}
		if err != nil {
			skips = append(skips, Skip{rel, SkipUnreadable})
			continue
		}
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			skips = append(skips, Skip{rel, SkipSymlink})
			continue
		case !st.Mode().IsRegular():
			skips = append(skips, Skip{rel, SkipNotRegular})
			continue
		case st.Size() > MaxFileSize:
			skips = append(skips, Skip{rel, SkipTooLarge})
			continue
		}
		stored, parse, reason := classify(rel)
		if reason != "" {
			skips = append(skips, Skip{rel, reason})
			continue
		}
		cands = append(cands, candidate{rel: rel, abs: abs, size: st.Size(), mtime: st.ModTime().UnixNano(), lang: stored, parse: parse})
	}
	return cands, skips, scanned, nil
}

// walk lists the files below root outside git, honouring .gitignore files
// at every level, and the directories it leaves out (excluded by name or
// unreadable). It never follows symlinks, so a symlink loop is listed once
// as a symlink and skipped.
func walk(ctx context.Context, root string) ([]string, []Skip, error) {
	var (
		out   []string
		skips []Skip
	)
	var visit func(dir string, ig *ignorer) error
	visit = func(dir string, ig *ignorer) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		absDir := filepath.Join(root, filepath.FromSlash(dir))
		if data, err := os.ReadFile(filepath.Join(absDir, ".gitignore")); err == nil {
			ig = ig.push(parseGitignore(dir, data))
		}
		entries, err := os.ReadDir(absDir)
		if err != nil {
			if dir == "" {
				return err
			}
			skips = append(skips, Skip{dir + "/", SkipUnreadable})
			return nil
		}
		for _, e := range entries {
			rel := e.Name()
			if dir != "" {
				rel = dir + "/" + e.Name()
			}
			isDir := e.IsDir()
			if e.Name() == ".git" || e.Name() == statedir.Name {
				continue
			}
			if ig.match(rel, isDir) {
				continue
			}
			if isDir {
				if _, err := os.Lstat(filepath.Join(absDir, e.Name(), "pyvenv.cfg")); err == nil || excludedDirs[e.Name()] {
					skips = append(skips, Skip{rel + "/", SkipExcludedDir})
					continue
				}
				if err := visit(rel, ig); err != nil {
					return err
				}
				continue
			}
			out = append(out, rel)
		}
		return nil
	}
	if err := visit("", &ignorer{}); err != nil {
		return nil, nil, err
	}
	return out, skips, nil
}

// Classify says how the indexer treats the file at rel (slash-separated,
// relative to the repository root) by its path alone: the language it is
// parsed in ("" for a text file stored unparsed), or why it is skipped
// (a Skip reason: an excluded directory, a lockfile, a minified or
// binary file). Virtualenvs found by their pyvenv.cfg, sizes and
// content are not looked at.
func Classify(rel string) (parse lang.Language, skip string) {
	if excludedPath(rel, func(string) bool { return false }) {
		return "", SkipExcludedDir
	}
	_, parse, skip = classify(rel)
	return parse, skip
}
