package lang

import (
	"sort"
	"strings"
)

// extractor holds what the language extractors share while they walk a
// tree once, in pre-order: the stack of open symbols, the comments seen,
// and the references already recorded.
type extractor struct {
	t  *tree
	f  *File
	fd *fieldIDs

	scopes   []scope
	comments []pendingComment
	refSeen  map[refKey]struct{}
	docOf    map[int]bool // symbols that already have a docstring
}

type scope struct {
	sym int
	end int32 // node index just past the symbol's subtree
}

type pendingComment struct {
	node int32
	sym  int
}

type refKey struct {
	caller           int
	name, qual, kind string
}

func newExtractor(t *tree, f *File) *extractor {
	return &extractor{t: t, f: f, fd: &t.g.f, refSeen: make(map[refKey]struct{}), docOf: make(map[int]bool)}
}

// enter closes the symbols whose subtree ends before node i.
func (x *extractor) enter(i int32) {
	for len(x.scopes) > 0 && x.scopes[len(x.scopes)-1].end <= i {
		x.scopes = x.scopes[:len(x.scopes)-1]
	}
}

// current is the innermost open symbol, or -1.
func (x *extractor) current() int {
	if len(x.scopes) == 0 {
		return -1
	}
	return x.scopes[len(x.scopes)-1].sym
}

// addSymbol records a symbol whose lines run from head's start to rng's end
// and opens it as the scope of the nodes up to the end of rng. head is rng
// or an ancestor of it (an export statement, a grouped declaration) whose
// other children are visited before rng or belong to other symbols.
//
// It returns the symbol's index, or -1 without recording anything when name
// is empty (error recovery can insert a zero-width MISSING identifier).
func (x *extractor) addSymbol(name, kind string, head, rng int32, sig string) int {
	if name == "" {
		return -1
	}
	t := x.t
	idx := len(x.f.Symbols)
	x.f.Symbols = append(x.f.Symbols, Symbol{
		Name:      name,
		Kind:      kind,
		StartLine: t.startLine(head),
		EndLine:   max(t.endLine(rng), t.startLine(head)),
		Signature: sig,
		Parent:    x.current(),
	})
	x.scopes = append(x.scopes, scope{sym: idx, end: t.nodes[rng].skip})
	return idx
}

// addDoc records a docstring of a symbol (or -1, the module).
func (x *extractor) addDoc(sym int, content string) {
	if content == "" || x.docOf[sym] {
		return
	}
	x.docOf[sym] = true
	format, fields := ClassifyDocstring(content, x.f.Language)
	x.f.Docstrings = append(x.f.Docstrings, Docstring{Symbol: sym, Content: content, Format: format, ParsedFields: fields})
}

func (x *extractor) addComment(i int32) {
	x.comments = append(x.comments, pendingComment{node: i, sym: x.current()})
}

// maxQualifier bounds Reference.Qualifier, in runes.
const maxQualifier = 80

// addRef records a reference from the innermost symbol unless the same one
// was already recorded.
func (x *extractor) addRef(kind, name, qual string, at int32) {
	if name == "" {
		return
	}
	if qual != "" {
		qual = clip(collapse(qual), maxQualifier)
	}
	k := refKey{caller: x.current(), name: name, qual: qual, kind: kind}
	if _, ok := x.refSeen[k]; ok {
		return
	}
	x.refSeen[k] = struct{}{}
	x.f.References = append(x.f.References, Reference{Caller: k.caller, Name: name, Qualifier: qual, Kind: kind, Line: x.t.startLine(at)})
}

// precedingComments returns, in source order, the block of comments right
// above node i: sibling comments each alone on its line, each ending on the
// line before the next one (or before i). A blank line or code ends it.
func (x *extractor) precedingComments(i int32) []int32 {
	t := x.t
	var out []int32
	line := t.startLine(i)
	for c := t.nodes[i].prev; c >= 0; c = t.nodes[c].prev {
		if t.kind(c) != "comment" || t.nodes[c].flags&flagDone != 0 {
			break
		}
		if end := t.endLine(c); end < line-1 || end > line || !t.onlyOnLine(t.nodes[c].start) {
			break
		}
		out = append(out, c)
		line = t.startLine(c)
	}
	for l, r := 0, len(out)-1; l < r; l, r = l+1, r-1 {
		out[l], out[r] = out[r], out[l]
	}
	return out
}

// finish turns the pending comments into File.Comments and puts parents
// before their children.
func (x *extractor) finish() {
	x.flushComments()
	orderParentsFirst(x.f)
	sort.SliceStable(x.f.Docstrings, func(a, b int) bool { return x.f.Docstrings[a].Symbol < x.f.Docstrings[b].Symbol })
}

// flushComments cleans, filters, merges and classifies the comments that
// did not become docstrings. Consecutive full-line comments at the same
// column and in the same symbol are merged into one row (its Line is the
// first line), so that a reason spread over several lines stays one reason;
// a line that starts with a marker (TODO, FIXME, NOTE, ...) starts a new row
// so that each marker keeps its own line. Trailing comments and block
// comments are one row each.
func (x *extractor) flushComments() {
	t := x.t
	var cur *Comment
	curEnd, curCol := -1, -1
	flush := func() {
		if cur != nil {
			cur.Kind, cur.IsRationale = ClassifyComment(cur.Content)
			x.f.Comments = append(x.f.Comments, *cur)
			cur = nil
		}
	}
	for _, pc := range x.comments {
		n := t.nodes[pc.node]
		if n.flags&flagDone != 0 {
			continue
		}
		raw := t.bytes(pc.node)
		line := t.startLine(pc.node)
		block := isBlockComment(raw)
		content := cleanComment(raw)
		if skipComment(raw, content, line) {
			flush()
			continue
		}
		full := t.onlyOnLine(n.start)
		col := t.column(n.start)
		if cur != nil && !block && full && line == curEnd+1 && col == curCol && pc.sym == cur.Symbol && !startsWithMarker(content) {
			cur.Content += "\n" + content
			curEnd = line
			continue
		}
		flush()
		cur = &Comment{Line: line, Symbol: pc.sym, Content: content}
		curEnd, curCol = -1, -1
		if full && !block {
			curEnd, curCol = line, col
		}
	}
	flush()
}

// orderParentsFirst reorders File.Symbols, if needed, so that every parent
// comes before its children (a Go method may precede its receiver type), and
// rewrites every index into Symbols. Otherwise source order is kept.
func orderParentsFirst(f *File) {
	ok := true
	for i, s := range f.Symbols {
		if s.Parent >= i {
			ok = false
			break
		}
	}
	if ok {
		return
	}
	n := len(f.Symbols)
	newIdx := make([]int, n)
	for i := range newIdx {
		newIdx[i] = -1
	}
	order := make([]int, 0, n)
	var place func(i, depth int)
	place = func(i, depth int) {
		if newIdx[i] >= 0 {
			return
		}
		if p := f.Symbols[i].Parent; p >= 0 && depth < n {
			place(p, depth+1)
		}
		if newIdx[i] < 0 {
			newIdx[i] = len(order)
			order = append(order, i)
		}
	}
	for i := range f.Symbols {
		place(i, 0)
	}
	syms := make([]Symbol, n)
	for newI, oldI := range order {
		s := f.Symbols[oldI]
		if s.Parent >= 0 {
			s.Parent = newIdx[s.Parent]
			if s.Parent >= newI {
				s.Parent = -1 // a cycle; cannot happen, but never emit one
			}
		}
		syms[newI] = s
	}
	f.Symbols = syms
	remap := func(i int) int {
		if i < 0 {
			return i
		}
		return newIdx[i]
	}
	for i := range f.Docstrings {
		f.Docstrings[i].Symbol = remap(f.Docstrings[i].Symbol)
	}
	for i := range f.Comments {
		f.Comments[i].Symbol = remap(f.Comments[i].Symbol)
	}
	for i := range f.References {
		f.References[i].Caller = remap(f.References[i].Caller)
	}
}

// lastPart is what follows the last dot of a dotted name.
func lastPart(s string) string {
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		return s[i+1:]
	}
	return s
}
