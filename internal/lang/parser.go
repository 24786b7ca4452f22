package lang

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
	"unsafe"

	sitter "github.com/tree-sitter/go-tree-sitter"
	tsgo "github.com/tree-sitter/tree-sitter-go/bindings/go"
	tsjs "github.com/tree-sitter/tree-sitter-javascript/bindings/go"
	tspy "github.com/tree-sitter/tree-sitter-python/bindings/go"
	tsts "github.com/tree-sitter/tree-sitter-typescript/bindings/go"
)

// ErrUnsupported is returned by Parse for a language it does not know.
var ErrUnsupported = errors.New("unsupported language")

// Parser parses source files. It holds a tree-sitter parser and, built on
// first use, the tables of each grammar it has seen, plus buffers reused
// from one file to the next.
//
// A Parser is not safe for concurrent use: give each goroutine its own (the
// indexer runs one per worker) and Close it when done.
type Parser struct {
	ts       *sitter.Parser
	grammars map[Language]*grammar
	current  Language // the language ts is set to
	nodes    []node
	lines    []uint32
}

// NewParser returns a Parser. Close it to free its C memory.
func NewParser() *Parser {
	return &Parser{ts: sitter.NewParser(), grammars: make(map[Language]*grammar)}
}

// Close frees the parser. Calling it again, or calling Parse afterwards, is
// an error that Parse reports and Close ignores.
func (p *Parser) Close() {
	if p.ts != nil {
		p.ts.Close()
		p.ts = nil
	}
	p.nodes, p.lines = nil, nil
}

// maxKeptNodes bounds the node buffer a Parser keeps between files, so that
// one huge file does not pin its memory for the rest of an indexing run.
const maxKeptNodes = 1 << 20

// utf8BOM is the byte order mark Windows editors put first in a file.
var utf8BOM = []byte("\ufeff")

// Parse extracts the facts of one file. It fails only for an unsupported
// language or when tree-sitter returns no tree; syntax errors are counted in
// File.SyntaxErrors and the rest of the file is kept.
func (p *Parser) Parse(l Language, src []byte) (*File, error) {
	if p.ts == nil {
		return nil, errors.New("parse: parser is closed")
	}
	g, err := p.grammar(l)
	if err != nil {
		return nil, err
	}
	if p.current != l {
		if err := p.ts.SetLanguage(g.lang); err != nil {
			return nil, fmt.Errorf("parse %s: %w", l, err)
		}
		p.current = l
	}
	if l == Go && bytes.HasPrefix(src, utf8BOM) {
		// tree-sitter's Go grammar takes a byte order mark for code, and
		// the package's doc comment after it for none. Three spaces keep
		// every offset.
		src = append([]byte("   "), src[len(utf8BOM):]...)
	}
	tr := p.ts.Parse(src, nil)
	if tr == nil {
		return nil, fmt.Errorf("parse %s: tree-sitter returned no tree", l)
	}
	p.nodes = flatten(tr.RootNode(), p.nodes[:0])
	tr.Close()

	t := &tree{src: src, nodes: p.nodes, g: g, lines: lineStarts(src, p.lines[:0])}
	p.lines = t.lines
	f := &File{Language: l}
	for i := range t.nodes {
		if t.nodes[i].kind == kindError || t.nodes[i].flags&flagMissing != 0 {
			f.SyntaxErrors++
		}
	}
	switch l {
	case Python:
		extractPython(t, f)
	case TypeScript, TSX, JavaScript:
		extractECMA(t, f)
	case Go:
		extractGo(t, f)
	}
	if cap(p.nodes) > maxKeptNodes {
		p.nodes = nil
	}
	if cap(p.lines) > maxKeptNodes {
		p.lines = nil
	}
	return f, nil
}

// kindError is the symbol tree-sitter gives ERROR nodes.
const kindError = 0xFFFF

// grammar is what the extractors need to know of one tree-sitter language:
// node kind names and field ids by number.
type grammar struct {
	lang *sitter.Language
	// kinds holds the names of named node kinds, toks those of anonymous
	// ones (keywords and punctuation); the other entry is "" so that the
	// named node "type" and the keyword "type" cannot be confused.
	kinds []string
	toks  []string
	f     fieldIDs
}

// fieldIDs are the field ids the extractors ask for; 0 means the grammar has
// no such field.
type fieldIDs struct {
	alias, arguments, attribute, body, constructor, declaration, definition, field,
	function, key, left, module, moduleName, name, object, operand, path,
	property, receiver, right, source, superclasses, typ, value uint16
}

func (p *Parser) grammar(l Language) (*grammar, error) {
	if g, ok := p.grammars[l]; ok {
		return g, nil
	}
	var ptr unsafe.Pointer
	switch l {
	case Python:
		ptr = tspy.Language()
	case TypeScript:
		ptr = tsts.LanguageTypescript()
	case TSX:
		ptr = tsts.LanguageTSX()
	case JavaScript:
		ptr = tsjs.Language()
	case Go:
		ptr = tsgo.Language()
	default:
		return nil, fmt.Errorf("parse %q: %w", l, ErrUnsupported)
	}
	g := newGrammar(sitter.NewLanguage(ptr))
	p.grammars[l] = g
	return g, nil
}

func newGrammar(sl *sitter.Language) *grammar {
	g := &grammar{lang: sl}
	n := int(sl.NodeKindCount())
	g.kinds = make([]string, n)
	g.toks = make([]string, n)
	for id := 0; id < n; id++ {
		name := sl.NodeKindForId(uint16(id))
		if sl.NodeKindIsNamed(uint16(id)) {
			g.kinds[id] = name
		} else {
			g.toks[id] = name
		}
	}
	// Language.FieldIdForName leaks a C string per call; reading the names
	// by id does not.
	fields := make(map[string]uint16)
	for id := uint16(1); int(id) <= int(sl.FieldCount()); id++ {
		fields[sl.FieldNameForId(id)] = id
	}
	g.f = fieldIDs{
		alias: fields["alias"], arguments: fields["arguments"], attribute: fields["attribute"], body: fields["body"],
		constructor: fields["constructor"], declaration: fields["declaration"],
		definition: fields["definition"], field: fields["field"], function: fields["function"],
		key: fields["key"], left: fields["left"], module: fields["module"],
		moduleName: fields["module_name"], name: fields["name"], object: fields["object"],
		operand: fields["operand"], path: fields["path"], property: fields["property"],
		receiver: fields["receiver"], right: fields["right"], source: fields["source"],
		superclasses: fields["superclasses"], typ: fields["type"], value: fields["value"],
	}
	return g
}

// tree is one parsed file in flat form.
type tree struct {
	src   []byte
	nodes []node
	g     *grammar
	lines []uint32 // byte offset where each line starts
}

func lineStarts(src []byte, buf []uint32) []uint32 {
	buf = append(buf, 0)
	for off := 0; ; {
		i := bytes.IndexByte(src[off:], '\n')
		if i < 0 {
			return buf
		}
		off += i + 1
		buf = append(buf, uint32(off))
	}
}

// kind is the name of a named node, "" for an anonymous one.
func (t *tree) kind(i int32) string {
	k := t.nodes[i].kind
	if k == kindError {
		return "ERROR"
	}
	if int(k) < len(t.g.kinds) {
		return t.g.kinds[k]
	}
	return ""
}

// tok is the text of an anonymous node's kind ("def", "(", "type"), "" for a
// named node.
func (t *tree) tok(i int32) string {
	k := t.nodes[i].kind
	if int(k) < len(t.g.toks) {
		return t.g.toks[k]
	}
	return ""
}

func (t *tree) parent(i int32) int32 { return t.nodes[i].parent }

func (t *tree) parentKind(i int32) string {
	if p := t.nodes[i].parent; p >= 0 {
		return t.kind(p)
	}
	return ""
}

// first is the first child of i, or -1.
func (t *tree) first(i int32) int32 {
	if t.nodes[i].skip > i+1 {
		return i + 1
	}
	return -1
}

// child is the first child of i in field fid, or -1.
func (t *tree) child(i int32, fid uint16) int32 {
	if fid == 0 {
		return -1
	}
	for c := t.first(i); c >= 0; c = t.nodes[c].next {
		if t.nodes[c].field == fid {
			return c
		}
	}
	return -1
}

// childKind is the first child of i of the named kind k, or -1.
func (t *tree) childKind(i int32, k string) int32 {
	for c := t.first(i); c >= 0; c = t.nodes[c].next {
		if t.kind(c) == k {
			return c
		}
	}
	return -1
}

// childTok is the first anonymous child of i spelled tok, or -1.
func (t *tree) childTok(i int32, tok string) int32 {
	for c := t.first(i); c >= 0; c = t.nodes[c].next {
		if t.tok(c) == tok {
			return c
		}
	}
	return -1
}

// named reports whether i is a named node other than a comment.
func (t *tree) named(i int32) bool {
	k := t.kind(i)
	return k != "" && k != "comment"
}

// firstNamed is the first named, non-comment child of i, or -1.
func (t *tree) firstNamed(i int32) int32 {
	for c := t.first(i); c >= 0; c = t.nodes[c].next {
		if t.named(c) {
			return c
		}
	}
	return -1
}

func (t *tree) is(i int32, fid uint16) bool { return fid != 0 && t.nodes[i].field == fid }

func (t *tree) bytes(i int32) []byte { return t.src[t.nodes[i].start:t.nodes[i].end] }

// text is the source text of i, made valid UTF-8.
func (t *tree) text(i int32) string {
	if i < 0 {
		return ""
	}
	return validString(t.src[t.nodes[i].start:t.nodes[i].end])
}

func validString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// line is the 1-based line of a byte offset.
func (t *tree) line(off uint32) int {
	return sort.Search(len(t.lines), func(i int) bool { return t.lines[i] > off })
}

func (t *tree) startLine(i int32) int { return t.line(t.nodes[i].start) }

// endLine is the line of the last byte of i.
func (t *tree) endLine(i int32) int {
	n := t.nodes[i]
	if n.end > n.start {
		return t.line(n.end - 1)
	}
	return t.line(n.start)
}

// onlyOnLine reports whether nothing but blanks precedes offset off on its
// line.
func (t *tree) onlyOnLine(off uint32) bool {
	for j := int(off) - 1; j >= 0; j-- {
		switch t.src[j] {
		case ' ', '\t', '\f', '\r':
		case '\n':
			return true
		default:
			return false
		}
	}
	return true
}

// column is the byte column of off in its line.
func (t *tree) column(off uint32) int {
	l := t.line(off)
	return int(off - t.lines[l-1])
}

// maxSignature bounds Symbol.Signature, in runes.
const maxSignature = 300

// sig returns the source between start and end with comments cut out,
// whitespace collapsed and the result trimmed to maxSignature runes. Comments
// are found among the nodes from index from onwards.
func (t *tree) sig(from int32, start, end uint32) string {
	if end > uint32(len(t.src)) {
		end = uint32(len(t.src))
	}
	if start >= end {
		return ""
	}
	var b strings.Builder
	pos := start
	for j := from; j >= 0 && int(j) < len(t.nodes) && t.nodes[j].start < end; j++ {
		n := t.nodes[j]
		if t.kind(j) != "comment" || n.start < pos {
			continue
		}
		b.Write(t.src[pos:n.start])
		b.WriteByte(' ')
		pos = min(n.end, end)
	}
	b.Write(t.src[pos:end])
	return clip(collapse(b.String()), maxSignature)
}

// collapse turns every run of whitespace into one space, trims the ends and
// drops the blanks just inside brackets that line breaks leave behind.
func collapse(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		switch r {
		case ' ', '\t', '\n', '\r', '\f', '\v':
			space = true
			continue
		}
		if space && b.Len() > 0 {
			if last := b.String()[b.Len()-1]; last != '(' && last != '[' && r != ')' && r != ']' {
				b.WriteByte(' ')
			}
		}
		space = false
		b.WriteRune(r)
	}
	return validString([]byte(b.String()))
}

// clip cuts s to at most n runes, marking a cut with an ellipsis.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i = range s {
		if count == n-1 {
			break
		}
		count++
	}
	return strings.TrimRight(s[:i], " ") + "…"
}

// firstLine is the text of i up to its first line break.
func (t *tree) firstLine(i int32) string {
	b := t.bytes(i)
	if j := bytes.IndexByte(b, '\n'); j >= 0 {
		b = b[:j]
	}
	return clip(collapse(string(b)), maxSignature)
}
