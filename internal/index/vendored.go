package index

import (
	"bytes"
	"path"
	"strconv"
	"strings"

	"github.com/cra-dev/cra/internal/lang"
	"github.com/cra-dev/cra/internal/lazyre"
)

// Vendored reports whether a file is a copy of someone else's code or
// the output of a tool rather than the project's own source, and why ("" when
// it is not). Retrieval ranks such files down and leaves them out of
// context packages unless the task names them.
//
// Path conventions: a directory of third-party code (third_party/,
// _vendor/, vendored/, …; vendor/, node_modules/ and dist/ are not
// indexed at all), a minified or bundled build (*.min.js, *.bundle.js,
// *-min.js), a well-known browser library under a static-assets directory
// (static/**/jquery-3.5.1.js), and generated code by name (*.pb.go,
// *_pb2.py, *_generated.go). Content signals: a generated-file marker near
// the top ("// Code generated … DO NOT EDIT.", "@generated", "auto-generated
// … do not edit"), a source-map comment, and lines too long for a person to
// have written (a minifier's output) in code files.
func Vendored(rel string, data []byte) string {
	if r := vendoredPath(rel); r != "" {
		return r
	}
	return vendoredContent(rel, data)
}

// vendoredDirs are directory names that hold other projects' code.
var vendoredDirs = map[string]bool{
	"third_party": true, "third-party": true, "thirdparty": true, "3rdparty": true,
	"_vendor": true, "vendored": true, "vendors": true, "_vendored": true,
	"jspm_packages": true, "web_modules": true,
}

// staticDirs hold a web project's assets, where copies of browser
// libraries live.
var staticDirs = map[string]bool{
	"static": true, "_static": true, "assets": true, "public": true, "www": true, "htdocs": true,
}

// browserLibs are libraries commonly copied into a project's static
// files, matched as a .js or .css file's name with an optional version
// and build (jquery.js, jquery-3.5.1.js, underscore-1.13.1.js,
// jquery.slim.js), not as any name that starts with one (jquery.init.js is
// the project's own).
var browserLibs = map[string]bool{
	"jquery": true, "underscore": true, "lodash": true, "backbone": true, "bootstrap": true,
	"modernizr": true, "html5shiv": true, "popper": true, "d3": true, "moment": true,
	"angular": true, "react": true, "react-dom": true, "vue": true, "require": true, "requirejs": true,
	"prototype": true, "mootools": true, "zepto": true, "knockout": true, "handlebars": true,
	"mustache": true, "highlight": true, "prism": true, "codemirror": true, "mathjax": true,
	"katex": true, "chart": true, "select2": true, "xregexp": true,
}

// libBuild matches what may follow a library's name in a copy of it: a
// version, and build words.
var libBuild = lazyre.New(`^(?:[-.]?v?\d+(?:\.\d+)*)?(?:[-.](?:slim|min|esm|umd|bundle|full|dev|prod|production|development|pack|all))*$`)

// browserLib reports whether a file name is a copy of a browser library.
func browserLib(name string) bool {
	stem := strings.TrimSuffix(name, path.Ext(name))
	for i := len(stem); i > 0; i-- {
		if browserLibs[stem[:i]] && (i == len(stem) || stem[i] == '-' || stem[i] == '.') && libBuild().MatchString(stem[i:]) {
			return true
		}
	}
	return false
}

func vendoredPath(rel string) string {
	dir, base := path.Split(rel)
	lower := strings.ToLower(base)
	inStatic := false
	for _, d := range strings.Split(strings.TrimSuffix(dir, "/"), "/") {
		if vendoredDirs[strings.ToLower(d)] {
			return "vendored directory " + d + "/"
		}
		inStatic = inStatic || staticDirs[strings.ToLower(d)]
	}
	ext := path.Ext(lower)
	stem := strings.TrimSuffix(lower, ext)
	web := ext == ".js" || ext == ".css" || ext == ".mjs" || ext == ".cjs"
	switch {
	case web && (strings.HasSuffix(stem, ".min") || strings.HasSuffix(stem, "-min") || strings.Contains(stem, ".min.")):
		return "minified (" + base + ")"
	case web && (strings.HasSuffix(stem, ".bundle") || strings.HasSuffix(stem, ".chunk") || strings.HasSuffix(stem, ".umd") || strings.HasSuffix(stem, ".packed")):
		return "bundled (" + base + ")"
	case strings.HasSuffix(lower, ".pb.go") || strings.HasSuffix(lower, "_pb2.py") || strings.HasSuffix(lower, "_pb2_grpc.py") ||
		strings.HasSuffix(stem, "_generated") || strings.HasSuffix(stem, ".generated"):
		return "generated (" + base + ")"
	}
	if web && inStatic && browserLib(lower) {
		return "copy of a browser library (" + base + ")"
	}
	return ""
}

// generatedMarker matches the markers code generators write in a comment
// near the top of their output: Go's "// Code generated … DO NOT EDIT."
// convention, "@generated", and "auto-generated … do not edit" wordings.
// Only comments count: a linter's own source may hold these words in a
// string.
var generatedMarker = lazyre.New(`(?im)^[ \t]*(?://|#|/\*+|\*|--|;+|<!--)[ \t]*(?:Code generated .* DO NOT EDIT\.?[ \t]*$|@generated\b|.*\b(?:auto-?generated|automatically generated|generated (?:by|from))\b.*\b(?:do not edit|don't edit|do not modify)\b)`)

// leadingComments is the start of a file up to its first line of code:
// blank lines and comments only (after a byte order mark, PHP's open tag
// or an XML prolog), where generators put their marker (Go's
// convention: before the first non-comment, non-blank text). A generator's
// own source holds the words in a template further down, and is no
// output of itself.
func leadingComments(head []byte) []byte {
	inBlock := false
	off := 0
	if bytes.HasPrefix(head, []byte("\ufeff")) {
		off = len("\ufeff") // a byte order mark
	}
	for off < len(head) {
		end := bytes.IndexByte(head[off:], '\n')
		if end < 0 {
			end = len(head) - off
		}
		line := bytes.TrimSpace(head[off : off+end])
		switch {
		case inBlock:
			inBlock = !bytes.Contains(line, []byte("*/")) && !bytes.Contains(line, []byte("-->"))
		case len(line) == 0:
		case bytes.HasPrefix(line, []byte("/*")):
			inBlock = !bytes.Contains(line[2:], []byte("*/"))
		case bytes.HasPrefix(line, []byte("<!--")):
			inBlock = !bytes.Contains(line[4:], []byte("-->"))
		case bytes.HasPrefix(line, []byte("//")), bytes.HasPrefix(line, []byte("#")), bytes.HasPrefix(line, []byte("--")),
			bytes.HasPrefix(line, []byte(";")), bytes.HasPrefix(line, []byte("*")),
			bytes.HasPrefix(line, []byte("<?")): // PHP's open tag, an XML prolog
		default:
			return head[:off]
		}
		off += end + 1
	}
	return head
}

// markerHead is how much of a file's start is searched for a generated
// marker; sourceMapTail how much of its end for a source-map comment.
const (
	markerHead    = 2048
	sourceMapTail = 512
)

// Long lines: a code file of at least minLongBytes whose longest line
// is at least longLine bytes and which has most of its bytes in lines of
// more than wideLine bytes was written by a tool (a minifier, a bundler).
// One long literal in a hand-written file does not make it so.
const (
	longLine     = 1000
	wideLine     = 300
	minLongBytes = 2048
)

func vendoredContent(rel string, data []byte) string {
	head := data[:min(len(data), markerHead)]
	if !bytes.Contains(head, []byte("enerated")) && !bytes.Contains(head, []byte("ENERATED")) {
		// No marker can match; the cheap test spares most files the
		// regular expression.
	} else if m := generatedMarker().Find(leadingComments(head)); m != nil {
		return "generated (" + strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(string(m)), "/#*-;")) + ")"
	}
	tail := data[max(0, len(data)-sourceMapTail):]
	if bytes.Contains(tail, []byte("# sourceMappingURL=")) || bytes.Contains(tail, []byte("@ sourceMappingURL=")) {
		return "built output (source map comment)"
	}
	if !codeFile(rel) || len(data) < minLongBytes {
		return ""
	}
	longest, wide := 0, 0
	for rest := data; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			i = len(rest)
		}
		longest = max(longest, i)
		if i > wideLine {
			wide += i
		}
		rest = rest[min(i+1, len(rest)):]
	}
	if longest >= longLine && 2*wide > len(data) {
		return "minified (lines of up to " + strconv.Itoa(longest) + " characters)"
	}
	return ""
}

// codeFile reports whether rel is source code, where a person keeps lines
// short (prose and data files may have long lines).
func codeFile(rel string) bool {
	if _, ok := lang.Detect(rel); ok {
		return true
	}
	switch strings.ToLower(path.Ext(rel)) {
	case ".css", ".scss", ".c", ".h", ".cc", ".cpp", ".java", ".rs", ".rb", ".php":
		return true
	}
	return false
}
