package evidence

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/glob"
	"github.com/cra-dev/cra/internal/lazyre"
	"github.com/cra-dev/cra/internal/shell"
)

// Why a file is protected: a branch may not change it, and validation
// runs with it at its base version (DESIGN.md, "Trust").
const (
	// WhyCommand is a file a [validation] command names (sh check.sh,
	// ./scripts/test.sh, make's Makefile).
	WhyCommand = "named by the validation command"
	// WhyTest is a test file, or a file under a test directory, that
	// existed at the base.
	WhyTest = "a test at the base"
	// WhyGlob is a file a [validation] protected pattern matches.
	WhyGlob = "matched by validation.protected"
	// WhyHook is a file the branch adds that decides how tests run or
	// whether they end: a conftest.py, a pytest.ini, a sitecustomize.py,
	// a test file that declares TestMain or exits the process.
	WhyHook = "added, and it decides how the tests run"
)

// ProtectedChange is a protected file the branch changes.
type ProtectedChange struct {
	Path string `json:"path"`
	// Status is how the branch changes it (modified, deleted, added,
	// renamed, type_changed).
	Status string `json:"status"`
	// Why it is protected: WhyCommand, WhyTest, WhyGlob (with the
	// pattern) or WhyHook (with what it holds).
	Why string `json:"why"`
	// Restored says validation ran with the file as the base holds it (or
	// without it, for a file the branch added).
	Restored bool `json:"restored"`
}

// testDirs are the directories whose every file is a test's.
var testDirs = map[string]bool{"tests": true, "test": true, "__tests__": true, "testdata": true}

// IsProtectedTest reports whether a repository path is a test that, if it
// existed at a branch's base, the branch may not change: a test file
// (IsTestFile), or any file under a tests/, test/, __tests__/ or Go's
// testdata/ directory (fixtures, golden files: a test's expectations).
// Nothing under vendor/ or node_modules/ is: that is other projects'.
func IsProtectedTest(p string) bool {
	p = strings.TrimPrefix(p, "./")
	dirs := strings.Split(path.Dir(p), "/")
	for _, d := range dirs {
		if d == "vendor" || d == "node_modules" {
			return false
		}
	}
	if IsTestFile(p) {
		return true
	}
	for _, d := range dirs {
		if testDirs[d] {
			return true
		}
	}
	return false
}

// hookNames are the files that change how a test runner runs, when a
// branch adds one.
var hookNames = map[string]bool{"conftest.py": true, "pytest.ini": true, "sitecustomize.py": true, "usercustomize.py": true}

// exits match, in an added test file, what ends a test run early or
// takes the running of tests over: a Go TestMain (which may never call
// m.Run), and os.Exit, sys.exit, os._exit, pytest.exit, SystemExit,
// process.exit.
var exits = lazyre.New(`\bfunc\s+TestMain\s*\(|\bos\.Exit\s*\(|\bsys\.exit\s*\(|\bos\._exit\s*\(|\bpytest\.exit\s*\(|\braise\s+SystemExit\b|\bprocess\.exit\s*\(`)

// maxHookScan bounds the bytes of an added test file read for exits.
const maxHookScan = 1 << 20

// protection is what protects a branch's files: the base's files that
// the commands name, its tests, and the patterns.
type protection struct {
	base     map[string]bool   // every file at the base
	named    map[string]bool   // repository paths the commands name
	patterns []string          // validation.protected, relative to prefix
	prefix   string            // the repository path validation runs in ("" or "sub/")
	why      map[string]string // cached answers
}

func newProtection(ctx context.Context, repo, base, prefix string, commands, patterns []string) (*protection, error) {
	blobs, err := gitx.TreeFiles(ctx, repo, base)
	if err != nil {
		return nil, fmt.Errorf("list the base's files: %w", err)
	}
	p := &protection{base: make(map[string]bool, len(blobs)), named: map[string]bool{}, patterns: patterns,
		prefix: strings.Trim(prefix, "/"), why: map[string]string{}}
	for _, b := range blobs {
		p.base[b.Path] = true
	}
	for _, c := range commands {
		for _, f := range commandFiles(c, p.prefix, p.base) {
			p.named[f] = true
		}
	}
	return p, nil
}

// of says why the base's file at repository path f is protected, or "".
func (p *protection) of(f string) string {
	if !p.base[f] {
		return ""
	}
	if w, ok := p.why[f]; ok {
		return w
	}
	w := ""
	switch {
	case p.named[f]:
		w = WhyCommand
	case IsProtectedTest(f):
		w = WhyTest
	default:
		w = p.globWhy(f)
	}
	p.why[f] = w
	return w
}

// globWhy says which pattern matches repository path f, or "".
func (p *protection) globWhy(f string) string {
	rel := f
	if p.prefix != "" {
		var ok bool
		if rel, ok = strings.CutPrefix(f, p.prefix+"/"); !ok {
			return ""
		}
	}
	for _, pat := range p.patterns {
		if glob.Match(pat, rel) {
			return WhyGlob + " " + pat
		}
	}
	return ""
}

// changes returns the protected files the diff changes, and for files it
// adds, those a pattern covers or that are hooks (read reads an added
// file's start, for exits).
func (p *protection) changes(files []File, read func(path string) []byte) []ProtectedChange {
	var out []ProtectedChange
	for _, f := range files {
		switch f.Status {
		case gitx.StatusAdded, gitx.StatusCopied:
			why := p.globWhy(f.Path)
			if why == "" {
				why = hookWhy(f.Path, read)
			}
			if why != "" {
				out = append(out, ProtectedChange{Path: f.Path, Status: gitx.StatusAdded, Why: why})
			}
		case gitx.StatusRenamed:
			if why := p.of(f.OldPath); why != "" {
				out = append(out, ProtectedChange{Path: f.OldPath, Status: f.Status, Why: why})
			}
		default:
			if why := p.of(f.Path); why != "" {
				out = append(out, ProtectedChange{Path: f.Path, Status: f.Status, Why: why})
			}
		}
	}
	return out
}

// hookWhy says why an added file decides how tests run, or "".
func hookWhy(f string, read func(string) []byte) string {
	name := path.Base(f)
	if hookNames[name] {
		return WhyHook + " (" + name + ")"
	}
	if !IsTestFile(f) || read == nil {
		return ""
	}
	if m := exits().Find(read(f)); m != nil {
		return WhyHook + " (it holds " + strings.Join(strings.Fields(string(m)), " ") + ")"
	}
	return ""
}

// commandFiles returns the base's files (repository paths) that command
// names when it runs in the repository directory prefix: each literal
// word and redirection source that is a path to one (after a cd, from
// the new directory too; a --flag=FILE's FILE), an sh -c script's own
// words, and make's makefile.
func commandFiles(command, prefix string, base map[string]bool) []string {
	var out []string
	seen := map[string]bool{}
	add := func(cwd, word string, dirs ...string) {
		if word == "" || strings.HasPrefix(word, "/") {
			return
		}
		if dirs == nil {
			dirs = []string{cwd, prefix}
		}
		for _, dir := range dirs {
			p := path.Clean(path.Join(dir, word))
			if p == "." || strings.HasPrefix(p, "../") || p == ".." {
				continue
			}
			if base[p] && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	var walk func(line string, depth int)
	walk = func(line string, depth int) {
		cmds, err := shell.Parse(line)
		if err != nil {
			return
		}
		cwd := prefix
		for _, c := range cmds {
			args := c.Words
			for i, w := range args {
				if !w.Literal {
					continue
				}
				add(cwd, w.Text)
				if strings.HasPrefix(w.Text, "-") {
					if _, v, ok := strings.Cut(w.Text, "="); ok {
						add(cwd, v)
					}
				}
				if i > 0 && w.Text == "-c" && i+1 < len(args) && depth < 2 && isShell(args[0].Text) {
					walk(args[i+1].Text, depth+1)
				}
			}
			for _, r := range c.Redirects {
				if r.Op == "<" && r.Target.Literal {
					add(cwd, r.Target.Text)
				}
			}
			if len(args) > 0 && args[0].Literal {
				switch path.Base(args[0].Text) {
				case "cd":
					if len(args) == 2 && args[1].Literal && !strings.HasPrefix(args[1].Text, "/") {
						cwd = path.Clean(path.Join(cwd, args[1].Text))
					}
				case "make", "gmake":
					for _, mf := range []string{"GNUmakefile", "makefile", "Makefile"} {
						add(cwd, mf, cwd) // make reads the one in its directory
					}
				}
			}
		}
	}
	walk(command, 0)
	return out
}

func isShell(prog string) bool {
	switch path.Base(prog) {
	case "sh", "bash", "dash", "zsh", "ksh":
		return true
	}
	return false
}
