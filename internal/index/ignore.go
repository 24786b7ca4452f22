package index

import (
	"bufio"
	"bytes"
	"path"
	"regexp"
	"strings"
)

// ignoreRule is one pattern line of a .gitignore file.
type ignoreRule struct {
	re      *regexp.Regexp
	negate  bool
	dirOnly bool
}

// ignoreSet holds the rules of one .gitignore file, applying to paths below
// its directory.
type ignoreSet struct {
	base  string // directory of the .gitignore, slash-separated, "" for the root
	rules []ignoreRule
}

// parseGitignore compiles the patterns of a .gitignore in directory base.
// It follows gitignore(5): blank lines and '#' comments are skipped, '!'
// negates, a trailing '/' matches directories only, a pattern with a slash
// elsewhere is anchored to base, '*' and '?' do not cross '/', and '**'
// matches any number of directories. Malformed patterns are dropped.
func parseGitignore(base string, data []byte) *ignoreSet {
	s := &ignoreSet{base: base}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		// Trailing spaces are ignored unless escaped.
		for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, `\ `) {
			line = line[:len(line)-1]
		}
		var r ignoreRule
		if strings.HasPrefix(line, "!") {
			r.negate = true
			line = line[1:]
		} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
			line = line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly = true
			line = strings.TrimRight(line, "/")
		}
		if line == "" {
			continue
		}
		anchored := strings.Contains(line, "/")
		line = strings.TrimPrefix(line, "/")
		re, err := regexp.Compile(globToRegexp(line, anchored))
		if err != nil {
			continue
		}
		r.re = re
		s.rules = append(s.rules, r)
	}
	return s
}

// globToRegexp translates one gitignore glob into an anchored regexp over a
// slash-separated path relative to the .gitignore's directory.
func globToRegexp(glob string, anchored bool) string {
	var b strings.Builder
	b.WriteString("^")
	if !anchored {
		b.WriteString("(?:.*/)?")
	}
	for i := 0; i < len(glob); i++ {
		c := glob[i]
		switch {
		case c == '*' && strings.HasPrefix(glob[i:], "**/"):
			b.WriteString("(?:.*/)?")
			i += 2
		case c == '*' && strings.HasPrefix(glob[i:], "**") && i+2 == len(glob):
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '[':
			end := strings.IndexByte(glob[i+1:], ']')
			if end < 0 {
				b.WriteString(`\[`)
				continue
			}
			class := glob[i+1 : i+1+end]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += end + 1
		case c == '\\' && i+1 < len(glob):
			i++
			b.WriteString(regexp.QuoteMeta(string(glob[i])))
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return b.String()
}

// ignorer answers whether a path is ignored by the stack of .gitignore files
// on its way from the root.
type ignorer struct {
	sets []*ignoreSet
}

// match reports whether rel (slash-separated, relative to the walk root) is
// ignored. The last matching rule of the deepest file wins, as in git.
func (ig *ignorer) match(rel string, isDir bool) bool {
	ignored := false
	for _, s := range ig.sets {
		sub := rel
		if s.base != "" {
			if !strings.HasPrefix(rel, s.base+"/") {
				continue
			}
			sub = rel[len(s.base)+1:]
		}
		for _, r := range s.rules {
			if r.dirOnly && !isDir {
				continue
			}
			if r.re.MatchString(sub) {
				ignored = !r.negate
			}
		}
	}
	return ignored
}

// push returns an ignorer that also applies set.
func (ig *ignorer) push(set *ignoreSet) *ignorer {
	sets := make([]*ignoreSet, len(ig.sets), len(ig.sets)+1)
	copy(sets, ig.sets)
	return &ignorer{sets: append(sets, set)}
}

// cleanRel normalises a relative path for matching.
func cleanRel(p string) string { return strings.TrimPrefix(path.Clean("/"+p), "/") }
