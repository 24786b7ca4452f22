package lang

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	sitter "github.com/tree-sitter/go-tree-sitter"
)

func TestDetect(t *testing.T) {
	tests := []struct {
		path string
		want Language
		ok   bool
	}{
		{"a.py", Python, true},
		{"stubs/a.pyi", Python, true},
		{"src/App.TS", TypeScript, true},
		{"x.mts", TypeScript, true},
		{"x.cts", TypeScript, true},
		{"types/index.d.ts", TypeScript, true},
		{"lib.d.mts", TypeScript, true},
		{"App.tsx", TSX, true},
		{"a.js", JavaScript, true},
		{"a.jsx", JavaScript, true},
		{"a.mjs", JavaScript, true},
		{"a.cjs", JavaScript, true},
		{"main.go", Go, true},
		{"README.md", "", false},
		{"Makefile", "", false},
		{"go.mod", "", false},
		{"py", "", false},
		{"", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			got, ok := Detect(tc.path)
			if got != tc.want || ok != tc.ok {
				t.Errorf("Detect(%q) = %q, %t; want %q, %t", tc.path, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestParseUnsupported(t *testing.T) {
	p := NewParser()
	defer p.Close()
	_, err := p.Parse("cobol", []byte("x"))
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("got %v, want ErrUnsupported", err)
	}
}

func TestParseAfterClose(t *testing.T) {
	p := NewParser()
	p.Close()
	p.Close() // a second Close is harmless
	if _, err := p.Parse(Python, []byte("x = 1\n")); err == nil {
		t.Error("got nil error, want one from a closed parser")
	}
}

// parseOK parses src, checks the invariants and returns the File.
func parseOK(t testing.TB, p *Parser, l Language, src []byte) *File {
	t.Helper()
	f, err := p.Parse(l, src)
	if err != nil {
		t.Fatalf("Parse(%s): %v", l, err)
	}
	if f.Language != l {
		t.Errorf("Language = %q, want %q", f.Language, l)
	}
	checkInvariants(t, f, src)
	return f
}

func symbolNames(f *File) []string {
	var out []string
	for _, s := range f.Symbols {
		out = append(out, s.Kind+" "+s.Name)
	}
	return out
}

// TestSyntaxErrors checks that a broken file keeps what parsed and counts
// the damage.
func TestSyntaxErrors(t *testing.T) {
	tests := []struct {
		lang Language
		src  string
		want []string // symbols that must be found
	}{
		{Python, "def ok():\n    pass\n\ndef bad(:\n    return\n\nclass After:\n    pass\n", []string{"function ok", "class After"}},
		{TypeScript, "function ok(): void {}\nfunction bad( {\nclass After {}\n", []string{"function ok"}},
		{TSX, "export const A = () => <div>;\nfunction ok() {}\n", nil},
		{JavaScript, "function ok() {}\nlet = = 3;\nclass After {}\n", []string{"function ok", "class After"}},
		{Go, "package p\nfunc ok() {}\nfunc bad( {\n}\ntype After struct{}\n", []string{"function ok", "class After"}},
	}
	p := NewParser()
	defer p.Close()
	for _, tc := range tests {
		t.Run(string(tc.lang), func(t *testing.T) {
			f := parseOK(t, p, tc.lang, []byte(tc.src))
			if f.SyntaxErrors == 0 {
				t.Errorf("SyntaxErrors = 0, want > 0")
			}
			got := strings.Join(symbolNames(f), ", ")
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("symbols %q lack %q", got, w)
				}
			}
		})
	}
}

// TestBadInput feeds every language inputs that must not crash it.
func TestBadInput(t *testing.T) {
	nested := func(open, close string, n int) []byte {
		return []byte("x = " + strings.Repeat(open, n) + "1" + strings.Repeat(close, n) + "\n")
	}
	inputs := []struct {
		name string
		src  []byte
	}{
		{"empty", nil},
		{"blank", []byte("\n\n   \n")},
		{"invalid utf-8", []byte("def f\xff\xfe():\n    '''doc \xc3\x28'''\n    # comment \xff\n    return '\xe2\x82'\nx\xff = 1 // \xff\n")},
		{"nul bytes", []byte("a\x00b = 1\x00\n")},
		{"only comments", []byte("# one\n# two\n// three\n/* four */\n")},
		{"nested parentheses", nested("(", ")", 500)},
		{"nested brackets", nested("[", "]", 500)},
		{"nested braces", nested("{", "}", 500)},
		{"unclosed", []byte(strings.Repeat("(", 2000))},
		{"crlf", []byte("def f():\r\n    return 1\r\n")},
	}
	p := NewParser()
	defer p.Close()
	for _, l := range Languages {
		for _, in := range inputs {
			t.Run(string(l)+"/"+in.name, func(t *testing.T) {
				parseOK(t, p, l, in.src)
			})
		}
	}
}

// TestLargeFile parses a 5 MiB Python file, and 1 MiB files of the other
// languages to keep the suite quick.
func TestLargeFile(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	const mib = 1 << 20
	p := NewParser()
	defer p.Close()
	for _, tc := range []struct {
		lang Language
		src  []byte
	}{
		{Python, genPython(5 * mib)},
		{TypeScript, genTS(mib)},
		{Go, genGo(mib)},
		{JavaScript, bytes.Repeat([]byte("x = [1, 2, {a: 'b'}]; // c\n"), mib/27)},
	} {
		t.Run(string(tc.lang), func(t *testing.T) {
			f := parseOK(t, p, tc.lang, tc.src)
			if f.SyntaxErrors != 0 || len(f.Symbols) == 0 && tc.lang != JavaScript {
				t.Errorf("got %d syntax errors and %d symbols", f.SyntaxErrors, len(f.Symbols))
			}
		})
	}
}

// TestParserReuse checks that the buffers a Parser keeps do not leak one
// file's facts into the next.
func TestParserReuse(t *testing.T) {
	a := []byte("def a():\n    return b()\n")
	big := genPython(64 << 10)
	p := NewParser()
	defer p.Close()
	first := parseOK(t, p, Python, a)
	parseOK(t, p, Python, big)
	parseOK(t, p, Go, []byte("package x\nfunc F() {}\n"))
	again := parseOK(t, p, Python, a)
	if diff := cmp.Diff(first, again); diff != "" {
		t.Errorf("reparse differs (-first +again):\n%s", diff)
	}
}

// TestParallelParsers runs one Parser per goroutine, as the indexer does;
// run it with -race.
func TestParallelParsers(t *testing.T) {
	src := genPython(32 << 10)
	p := NewParser()
	want := parseOK(t, p, Python, src)
	p.Close()
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := NewParser()
			defer p.Close()
			for range 3 {
				got, err := p.Parse(Python, src)
				if err != nil {
					errs <- err.Error()
					return
				}
				if diff := cmp.Diff(want, got); diff != "" {
					errs <- diff
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// flatNode is what TestFlattenMatchesBindings compares.
type flatNode struct {
	Kind, Field uint16
	Start, End  uint32
	Parent      int32
	Missing     bool
}

// walkBindings flattens a tree through the Go binding's TreeCursor, the slow
// way flatten replaces.
func walkBindings(root *sitter.Node) []flatNode {
	c := root.Walk()
	defer c.Close()
	var out []flatNode
	var stack []int32
	for {
		n := c.Node()
		parent := int32(-1)
		if len(stack) > 0 {
			parent = stack[len(stack)-1]
		}
		out = append(out, flatNode{n.KindId(), c.FieldId(), uint32(n.StartByte()), uint32(n.EndByte()), parent, n.IsMissing()})
		if c.GotoFirstChild() {
			stack = append(stack, int32(len(out)-1))
			continue
		}
		for !c.GotoNextSibling() {
			if !c.GotoParent() {
				return out
			}
			stack = stack[:len(stack)-1]
		}
	}
}

// TestFlattenMatchesBindings guards the hand-declared C structs in
// flatten.go: the one-call flatten must see exactly what the binding sees,
// and its sibling and subtree links must be consistent.
func TestFlattenMatchesBindings(t *testing.T) {
	p := NewParser()
	defer p.Close()
	for _, fx := range goldenFixtures {
		t.Run(fx.file, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata", fx.file))
			if err != nil {
				t.Fatal(err)
			}
			g, err := p.grammar(fx.lang)
			if err != nil {
				t.Fatal(err)
			}
			ts := sitter.NewParser()
			defer ts.Close()
			if err := ts.SetLanguage(g.lang); err != nil {
				t.Fatal(err)
			}
			tr := ts.Parse(src, nil)
			defer tr.Close()
			want := walkBindings(tr.RootNode())
			nodes := flatten(tr.RootNode(), nil)
			got := make([]flatNode, len(nodes))
			for i, n := range nodes {
				got[i] = flatNode{n.kind, n.field, n.start, n.end, n.parent, n.flags&flagMissing != 0}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("flatten differs from the binding (-binding +flatten):\n%s", diff)
			}
			for i, n := range nodes {
				i := int32(i)
				if n.skip <= i || int(n.skip) > len(nodes) {
					t.Fatalf("node %d skip %d out of range", i, n.skip)
				}
				if n.next >= 0 && (n.next != n.skip || nodes[n.next].parent != n.parent || nodes[n.next].prev != i) {
					t.Fatalf("node %d next %d inconsistent", i, n.next)
				}
				if n.prev >= 0 && nodes[n.prev].next != i {
					t.Fatalf("node %d prev %d inconsistent", i, n.prev)
				}
			}
		})
	}
}

func TestSignatureClip(t *testing.T) {
	long := "def f(" + strings.Repeat("argument, ", 60) + "):\n    pass\n"
	p := NewParser()
	defer p.Close()
	f := parseOK(t, p, Python, []byte(long))
	sig := f.Symbols[0].Signature
	if n := len([]rune(sig)); n != maxSignature || !strings.HasSuffix(sig, "…") {
		t.Errorf("got a signature of %d runes ending %q, want %d ending with an ellipsis", n, sig[len(sig)-5:], maxSignature)
	}
}

func ExampleParser_Parse() {
	p := NewParser()
	defer p.Close()
	f, err := p.Parse(Python, []byte("class Greeter:\n    def hello(self, name):\n        return greet(name)\n"))
	if err != nil {
		panic(err)
	}
	for _, s := range f.Symbols {
		fmt.Printf("%s %s lines %d-%d parent %d: %s\n", s.Kind, s.Name, s.StartLine, s.EndLine, s.Parent, s.Signature)
	}
	for _, r := range f.References {
		fmt.Printf("%s %s from symbol %d\n", r.Kind, r.Name, r.Caller)
	}
	// Output:
	// class Greeter lines 1-3 parent -1: class Greeter:
	// method hello lines 2-3 parent 0: def hello(self, name):
	// call greet from symbol 1
}

// TestCorpus parses every supported file under $CRA_LANG_CORPUS (a Django or
// CPython checkout, say) and checks the invariants; it is skipped when the
// variable is not set.
func TestCorpus(t *testing.T) {
	corpus, _ := loadCorpus(t)
	p := NewParser()
	defer p.Close()
	var files, symbols, refs, broken int
	for _, c := range corpus {
		f, err := p.Parse(c.l, c.src)
		if err != nil {
			t.Errorf("%s: %v", c.path, err)
			continue
		}
		checkInvariants(t, f, c.src)
		files++
		symbols += len(f.Symbols)
		refs += len(f.References)
		if f.SyntaxErrors > 0 {
			broken++
		}
	}
	t.Logf("%d files, %d symbols, %d references, %d files with syntax errors", files, symbols, refs, broken)
}
