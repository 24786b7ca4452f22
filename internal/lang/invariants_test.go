package lang

import (
	"bytes"
	"encoding/json"
	"testing"
)

var (
	symbolKinds  = map[string]bool{KindFunction: true, KindClass: true, KindMethod: true, KindInterface: true, KindTypeAlias: true, KindEnum: true, KindVariable: true}
	commentKinds = map[string]bool{CommentTodo: true, CommentFixme: true, CommentHack: true, CommentNote: true, CommentBugRef: true, CommentRationale: true, CommentGeneral: true}
	docFormats   = map[string]bool{DocGoogle: true, DocNumpy: true, DocSphinx: true, DocJSDoc: true, DocGo: true, DocPlain: true}
	refKinds     = map[string]bool{RefCall: true, RefInherit: true, RefName: true}
)

// checkInvariants asserts what must hold for any input: lines inside the
// file, parents earlier, indexes valid, kinds known, JSON valid.
func checkInvariants(t testing.TB, f *File, src []byte) {
	t.Helper()
	lines := bytes.Count(src, []byte("\n")) + 1
	validSym := func(i int) bool { return i >= -1 && i < len(f.Symbols) }
	for i, s := range f.Symbols {
		if !symbolKinds[s.Kind] {
			t.Errorf("symbol %d kind %q not allowed", i, s.Kind)
		}
		if s.StartLine < 1 || s.EndLine < s.StartLine || s.EndLine > lines {
			t.Errorf("symbol %d %q lines [%d-%d] outside [1-%d] or reversed", i, s.Name, s.StartLine, s.EndLine, lines)
		}
		if s.Parent < -1 || s.Parent >= i {
			t.Errorf("symbol %d %q parent %d not an earlier symbol", i, s.Name, s.Parent)
		}
		if s.Name == "" {
			t.Errorf("symbol %d has no name", i)
		}
	}
	for i, d := range f.Docstrings {
		if !validSym(d.Symbol) {
			t.Errorf("docstring %d symbol %d out of range", i, d.Symbol)
		}
		if !docFormats[d.Format] {
			t.Errorf("docstring %d format %q not allowed", i, d.Format)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(d.ParsedFields), &m); err != nil {
			t.Errorf("docstring %d parsed fields %q: %v", i, d.ParsedFields, err)
		}
	}
	for i, c := range f.Comments {
		if !validSym(c.Symbol) {
			t.Errorf("comment %d symbol %d out of range", i, c.Symbol)
		}
		if !commentKinds[c.Kind] {
			t.Errorf("comment %d kind %q not allowed", i, c.Kind)
		}
		if c.Kind == CommentRationale && !c.IsRationale {
			t.Errorf("comment %d is a rationale kind without IsRationale", i)
		}
		if c.Line < 1 || c.Line > lines {
			t.Errorf("comment %d line %d outside [1-%d]", i, c.Line, lines)
		}
	}
	for i, im := range f.Imports {
		if im.Line < 1 || im.Line > lines {
			t.Errorf("import %d line %d outside [1-%d]", i, im.Line, lines)
		}
	}
	type key struct {
		caller           int
		name, qual, kind string
	}
	seen := map[key]bool{}
	for i, r := range f.References {
		if !validSym(r.Caller) {
			t.Errorf("reference %d caller %d out of range", i, r.Caller)
		}
		if !refKinds[r.Kind] || r.Name == "" {
			t.Errorf("reference %d kind %q name %q", i, r.Kind, r.Name)
		}
		if r.Line < 1 || r.Line > lines {
			t.Errorf("reference %d line %d outside [1-%d]", i, r.Line, lines)
		}
		k := key{r.Caller, r.Name, r.Qualifier, r.Kind}
		if seen[k] {
			t.Errorf("reference %d duplicates %+v", i, k)
		}
		seen[k] = true
	}
	if f.SyntaxErrors < 0 {
		t.Errorf("SyntaxErrors %d < 0", f.SyntaxErrors)
	}
}
