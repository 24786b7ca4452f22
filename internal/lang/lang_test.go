package lang

import "testing"

// TestDeclarationOnly: on real parses, a file of types alone (and
// constants beside them) is declaration-only; one function or method
// anywhere, or no type at all, makes it not.
func TestDeclarationOnly(t *testing.T) {
	tests := []struct {
		name string
		l    Language
		src  string
		want bool
	}{
		{"ts types", TypeScript, "export type Retry = number | {limit?: number};\nexport interface Options { retry?: Retry }\nexport const defaults = {retry: 2};\n", true},
		{"ts types and a function", TypeScript, "export type Retry = number;\nexport function merge(a: Retry, b: Retry): Retry { return b }\n", false},
		{"ts arrow function", TypeScript, "export type Retry = number;\nexport const merge = (a: Retry) => a;\n", false},
		{"go structs", Go, "package m\n\ntype Options struct{ Retry int }\n\ntype Hook interface{ Run() }\n", true},
		{"go struct with a method", Go, "package m\n\ntype Options struct{ Retry int }\n\nfunc (o Options) Limit() int { return o.Retry }\n", false},
		{"python exceptions", Python, "class Error(Exception):\n    pass\n\nclass LimitError(Error):\n    \"\"\"The limit.\"\"\"\n", true},
		{"python class with a method", Python, "class Options:\n    def limit(self):\n        return 2\n", false},
		{"constants only", Python, "LIMIT = 2\nMETHODS = ('get',)\n", false},
		{"empty", Go, "package m\n", false},
	}
	p := NewParser()
	defer p.Close()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := p.Parse(tc.l, []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			kinds := DeclarationKinds(f)
			if got := DeclarationOnly(kinds); got != tc.want {
				t.Errorf("got %v for kinds %v, want %v", got, kinds, tc.want)
			}
		})
	}
}
