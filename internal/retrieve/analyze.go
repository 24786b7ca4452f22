package retrieve

import (
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/cra-dev/cra/internal/lazyre"
	"github.com/cra-dev/cra/internal/terms"
)

// Extraction patterns for Analyze. They are deliberately permissive: a
// false mention costs a candidate the ranker can demote; a missed one costs
// the file the task is about.
var (
	codeSpanRe  = lazyre.New("```[a-zA-Z0-9_+-]*\\n?([\\s\\S]*?)```|`([^`\\n]+)`")
	fileExtRe   = `(?:py|pyi|go|ts|tsx|js|jsx|mjs|cjs|mts|cts|md|rst|txt|toml|ya?ml|json|cfg|ini|html?|css|scss|sql|sh|c|h|cc|cpp|rs|java|rb|mod)`
	filePathRe  = lazyre.New(`(?:^|[\s"'(\[<{=,:])((?:[\w.-]+/)*[\w-][\w.-]*\.` + fileExtRe + `)\b`)
	fileLineRe  = lazyre.New(`((?:[\w.-]+/)*[\w-][\w.-]*\.` + fileExtRe + `):(\d+)`)
	pyFrameRe   = lazyre.New(`File "([^"]+)", line (\d+)`)
	identRe     = lazyre.New(`[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*`)
	callRe      = lazyre.New(`\b([A-Za-z_][A-Za-z0-9_]*)\(`)
	errorNameRe = lazyre.New(`\b([A-Z][A-Za-z0-9]*(?:Error|Exception|Warning|Exit))\b(?::\s*([^\n]{1,160}))?`)
	scopeRe     = lazyre.New(`^\s*[a-z][\w-]*(?:\([^)\n]{1,40}\))?!?:\s+`)
	// Commit trailers ("Co-authored-by: …", "Signed-off-by: …") and e-mail
	// addresses name people, not code; their rare words would otherwise
	// weigh most in the search.
	trailerRe = lazyre.New(`(?mi)^[ \t]*[a-z][a-z-]*-by:[^\n]*$`)
	emailRe   = lazyre.New(`[\w.+-]+@[\w-]+(?:\.[\w-]+)+`)
)

// typeWords vote for a task type; the type with most votes wins, ties in
// the order bug, feature, refactor, test, docs.
var typeWords = map[string][]string{
	TypeBug:      {"fix", "fixes", "fixed", "bug", "error", "crash", "crashes", "fail", "fails", "failing", "failure", "exception", "traceback", "wrong", "incorrect", "broken", "regression", "issue", "raises", "unexpected", "panic"},
	TypeFeature:  {"add", "adds", "added", "support", "implement", "allow", "allows", "introduce", "feature", "new", "enable", "option"},
	TypeRefactor: {"refactor", "rename", "move", "cleanup", "clean", "simplify", "extract", "reorganize", "deprecate", "remove"},
	TypeTest:     {"test", "tests", "testing", "coverage", "pytest", "flaky"},
	TypeDocs:     {"doc", "docs", "documentation", "readme", "typo", "docstring", "changelog", "comment", "comments"},
}

var typeOrder = []string{TypeBug, TypeFeature, TypeRefactor, TypeTest, TypeDocs}

// Analyze extracts a TaskQuery from the task text, deterministically (seed
// 001 §5.2): mentioned files, file:line references and traceback frames,
// code identifiers, error names and messages, search keywords and a task
// type. It never fails; an empty text yields an empty query.
func Analyze(text string) TaskQuery {
	q := TaskQuery{Text: text}
	text = emailRe().ReplaceAllString(trailerRe().ReplaceAllString(text, ""), "")
	add := func(list *[]string, v string) {
		for _, x := range *list {
			if x == v {
				return
			}
		}
		*list = append(*list, v)
	}

	// Code spans first: everything in them is code.
	var spans []string
	for _, m := range codeSpanRe().FindAllStringSubmatch(text, -1) {
		s := m[1]
		if s == "" {
			s = m[2]
		}
		spans = append(spans, s)
	}

	// Files and file:line references.
	for _, m := range pyFrameRe().FindAllStringSubmatch(text, -1) {
		n, _ := strconv.Atoi(m[2])
		p := cleanMentionPath(m[1])
		q.FileLines = appendFileLine(q.FileLines, FileLine{p, n})
		add(&q.Files, p)
	}
	for _, m := range fileLineRe().FindAllStringSubmatch(text, -1) {
		n, _ := strconv.Atoi(m[2])
		p := cleanMentionPath(m[1])
		q.FileLines = appendFileLine(q.FileLines, FileLine{p, n})
		add(&q.Files, p)
	}
	for _, m := range filePathRe().FindAllStringSubmatch(" "+text, -1) {
		p := cleanMentionPath(m[1])
		if looksLikeFile(p) {
			add(&q.Files, p)
		}
	}

	// Identifiers: anything in a code span, calls, and words shaped like
	// code (camelCase, snake_case, dotted paths) anywhere.
	addSymbol := func(id string) {
		id = strings.Trim(id, ".")
		if id == "" || len(id) > 80 {
			return
		}
		if i := strings.LastIndexByte(id, '.'); i >= 0 {
			last := id[i+1:]
			if looksLikeFile(id) {
				return
			}
			// a.b.c: the module path may name a file; the last part a symbol.
			if first, _, _ := strings.Cut(id, "."); first != "self" && first != "cls" && first != "this" {
				add(&q.Modules, id)
			}
			add(&q.Symbols, last)
			return
		}
		if len(id) < 3 || terms.IsStop(strings.ToLower(id)) {
			return
		}
		add(&q.Symbols, id)
	}
	for _, s := range spans {
		// A short span names code ("`invoke`"); in a long one (a pasted
		// snippet) only code-shaped words are worth a lookup.
		short := len(s) < 80
		for _, id := range identRe().FindAllString(s, -1) {
			if short || codeShaped(id) {
				addSymbol(id)
			}
		}
	}
	// A conventional-commit prefix ("fix(context): ") is not a call.
	body := StripScope(text)
	for _, m := range callRe().FindAllStringSubmatch(body, -1) {
		addSymbol(m[1])
	}
	for _, id := range identRe().FindAllString(body, -1) {
		if codeShaped(id) {
			addSymbol(id)
		}
	}

	// Errors: names, and their messages when given.
	for _, m := range errorNameRe().FindAllStringSubmatch(text, -1) {
		add(&q.Errors, strings.TrimSpace(m[0]))
		add(&q.Symbols, m[1])
	}

	q.Keywords = keywords(text)
	q.Type = taskType(text)
	q.Areas = areas(text)
	return q
}

// areas returns the words of a conventional-commit scope, lower case:
// "fix(binding, render): " → binding, render.
func areas(text string) []string {
	m := scopeRe().FindString(text)
	open, end := strings.IndexByte(m, '('), strings.LastIndexByte(m, ')')
	if open < 0 || end < open {
		return nil
	}
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(m[open+1:end]), func(r rune) bool { return r == ',' || r == '/' || r == ' ' }) {
		if len(w) >= 3 && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

func appendFileLine(list []FileLine, fl FileLine) []FileLine {
	for _, x := range list {
		if x == fl {
			return list
		}
	}
	return append(list, fl)
}

// cleanMentionPath normalises a path as written in a task: separators,
// leading ./, and absolute prefixes from tracebacks (site-packages and
// checkout roots stay; the ranker matches by suffix).
func cleanMentionPath(p string) string {
	p = strings.ReplaceAll(p, `\`, "/")
	p = strings.TrimPrefix(p, "./")
	return strings.Trim(p, "/")
}

func fileExtension(s string) bool {
	switch strings.ToLower(s) {
	case "py", "pyi", "go", "ts", "tsx", "js", "jsx", "mjs", "cjs", "mts", "cts", "md", "rst", "txt", "toml",
		"yaml", "yml", "json", "cfg", "ini", "html", "htm", "css", "scss", "sql", "sh", "c", "h", "cc", "cpp", "rs", "java", "rb", "mod":
		return true
	}
	return false
}

// looksLikeFile tells a file name ("setup.py", "docs/index.rst") from a
// dotted identifier ("os.path", "self.x"): it has a known extension and,
// unless it has a directory, a plausible base name.
func looksLikeFile(p string) bool {
	ext := strings.TrimPrefix(path.Ext(p), ".")
	if !fileExtension(ext) {
		return false
	}
	base := strings.TrimSuffix(path.Base(p), "."+ext)
	if base == "" || strings.ContainsAny(base, "()") {
		return false
	}
	// "self.py" is a file; "np.py" too. A bare "x.py" without a directory is
	// only a file if the extension is written in lower case.
	return strings.Contains(p, "/") || ext == strings.ToLower(ext)
}

// codeShaped reports whether a word is written like code rather than prose:
// snake_case, camelCase, a dotted path, or CamelCase with two humps.
func codeShaped(w string) bool {
	if strings.Contains(w, ".") {
		return true
	}
	if strings.Contains(strings.Trim(w, "_"), "_") || strings.HasPrefix(w, "_") {
		return true
	}
	upper, lowerThenUpper := 0, false
	for i, r := range w {
		if r >= 'A' && r <= 'Z' {
			upper++
			if i > 0 && w[i-1] >= 'a' && w[i-1] <= 'z' {
				lowerThenUpper = true
			}
		}
	}
	return lowerThenUpper && upper >= 1 && len(w) > 3
}

// keywords returns the task's distinct terms, rarest-looking first: longer
// and code-derived terms before short common words. The ranker's full-text
// search weighs them by the corpus's own statistics; this order only
// decides which terms survive when a long issue has too many.
func keywords(text string) []string {
	counts := map[string]int{}
	var order []string
	terms.Each(text, func(t string) {
		if counts[t] == 0 {
			order = append(order, t)
		}
		counts[t]++
	})
	sort.SliceStable(order, func(i, j int) bool { return len(order[i]) > len(order[j]) })
	return order
}

// commitTypes maps conventional-commit prefixes to task types.
var commitTypes = map[string]string{
	"fix": TypeBug, "bugfix": TypeBug, "hotfix": TypeBug,
	"feat": TypeFeature, "feature": TypeFeature,
	"refactor": TypeRefactor, "perf": TypeRefactor, "chore": TypeRefactor, "style": TypeRefactor, "build": TypeRefactor, "ci": TypeRefactor,
	"test": TypeTest, "tests": TypeTest,
	"docs": TypeDocs, "doc": TypeDocs,
}

func taskType(text string) string {
	if m := scopeRe().FindString(text); m != "" {
		word := strings.TrimSpace(m)
		if i := strings.IndexAny(word, "(!:"); i >= 0 {
			word = word[:i]
		}
		if t, ok := commitTypes[word]; ok {
			return t
		}
	}
	votes := map[string]int{}
	lower := strings.ToLower(scopeRe().ReplaceAllString(text, ""))
	words := strings.FieldsFunc(lower, func(r rune) bool { return !(r >= 'a' && r <= 'z') })
	for i, w := range words {
		weight := 1
		if i < 8 {
			weight = 3 // the first words of a subject say most
		}
		for _, t := range typeOrder {
			for _, tw := range typeWords[t] {
				if w == tw {
					votes[t] += weight
				}
			}
		}
	}
	best, bestVotes := TypeFeature, 0
	for _, t := range typeOrder {
		if votes[t] > bestVotes {
			best, bestVotes = t, votes[t]
		}
	}
	return best
}

// AboutTests reports whether the task speaks of tests: its type is
// "test", or a word of its text is one of the test type's words ("test",
// "tests", "pytest", "coverage", a test_x name split at its underscore).
// Rank leaves test files undemoted for such a task (Weights.TestDemotion).
func (q TaskQuery) AboutTests() bool {
	if q.Type == TypeTest {
		return true
	}
	words := strings.FieldsFunc(strings.ToLower(q.Text), func(r rune) bool { return !(r >= 'a' && r <= 'z') })
	for _, w := range words {
		if slices.Contains(typeWords[TypeTest], w) {
			return true
		}
	}
	return false
}

// StripScope removes a conventional-commit scope prefix ("fix(context): ",
// "docs: ") from a commit subject.
func StripScope(subject string) string {
	return scopeRe().ReplaceAllString(subject, "")
}
