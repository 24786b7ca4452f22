package lang

import (
	"testing"
)

func FuzzProbeFull(f *testing.F) {
	f.Add([]byte("x"))
	f.Fuzz(func(t *testing.T, src []byte) {
		p := NewParser()
		defer p.Close()
		p.Parse(Go, src)
	})
}

func FuzzProbeFlatten(f *testing.F) {
	f.Add([]byte("x"))
	f.Fuzz(func(t *testing.T, src []byte) {
		p := NewParser()
		defer p.Close()
		g, _ := p.grammar(Go)
		p.ts.SetLanguage(g.lang)
		tr := p.ts.Parse(src, nil)
		flatten(tr.RootNode(), nil)
		tr.Close()
	})
}
