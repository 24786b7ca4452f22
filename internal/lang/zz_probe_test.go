package lang

import (
	"testing"

	sitter "github.com/tree-sitter/go-tree-sitter"
)

func FuzzProbeNew(f *testing.F) {
	f.Add([]byte("x"))
	f.Fuzz(func(t *testing.T, src []byte) {
		p := sitter.NewParser()
		p.Close()
	})
}

func FuzzProbeParse(f *testing.F) {
	f.Add([]byte("x"))
	f.Fuzz(func(t *testing.T, src []byte) {
		p := NewParser()
		defer p.Close()
		g, _ := p.grammar(Go)
		p.ts.SetLanguage(g.lang)
		tr := p.ts.Parse(src, nil)
		tr.Close()
	})
}
