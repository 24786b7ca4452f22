package lang

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func FuzzClassifyComment(f *testing.F) {
	for _, s := range []string{
		"TODO: x", "FIXME", "XXX: because", "HACK: so that", "NOTE: see #12", "N.B. y", "@todo z",
		"since 3.2", "since the API", "ever since", "GH-1", "UTF-8", "JIRA-123", "#333", "b/12345",
		"https://x/issues/1", "\xff\xfe", "", "#", "bug 1", "todo(", "a\nTODO: b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		kind, rationale := ClassifyComment(text)
		if !commentKinds[kind] {
			t.Fatalf("kind %q not allowed", kind)
		}
		if kind == CommentRationale && !rationale {
			t.Fatal("rationale kind without IsRationale")
		}
		if k2, r2 := ClassifyComment(text); k2 != kind || r2 != rationale {
			t.Fatal("not deterministic")
		}
		raw := []byte("# " + text)
		skipComment(raw, cleanComment(raw), 1)
		cleanComment([]byte("/*" + text + "*/"))
	})
}

func FuzzClassifyDocstring(f *testing.F) {
	for _, s := range []string{
		"Summary.\n\nArgs:\n    a (int): x\n\nReturns:\n    int: y\n\nRaises:\n    E: z",
		"S.\n\nParameters\n----------\na : int\n    d\n\nReturns\n-------\nint\n    r",
		":param a: x\n:type a: int\n:returns: y\n:rtype: int\n:raises E: z",
		"@param {number} [x=1] - y\n@returns {T} z\n@throws {E}\n@deprecated",
		"@param {", "Deprecated: x", ":param", "Args:\n", "Parameters\n---", "\t\r\n", "\xff",
	} {
		for l := range Languages {
			f.Add(s, uint8(l))
		}
	}
	f.Fuzz(func(t *testing.T, text string, li uint8) {
		l := Languages[int(li)%len(Languages)]
		format, fields := ClassifyDocstring(text, l)
		if !docFormats[format] {
			t.Fatalf("format %q not allowed", format)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(fields), &m); err != nil {
			t.Fatalf("fields %q are not a JSON object: %v", fields, err)
		}
		for k := range m {
			switch k {
			case "summary", "params", "attributes", "returns", "yields", "raises", "deprecated":
			default:
				t.Fatalf("unexpected key %q in %s", k, fields)
			}
		}
	})
}

// addFixtures seeds a fuzzer with the testdata fixtures of language l.
func addFixtures(f *testing.F, l Language) {
	for _, fx := range goldenFixtures {
		if fx.lang != l {
			continue
		}
		src, err := os.ReadFile(filepath.Join("testdata", fx.file))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
}

// fuzzParse parses src and checks the invariants; a Parser per call keeps
// the target free of shared state.
func fuzzParse(t *testing.T, l Language, src []byte) {
	p := NewParser()
	defer p.Close()
	file, err := p.Parse(l, src)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	checkInvariants(t, file, src)
}

func FuzzParsePython(f *testing.F) {
	addFixtures(f, Python)
	for _, s := range []string{
		"", "def f(:\n", "class A(B, metaclass=M):\n    x: int = 1\n", "@d\nasync def f(): pass\n",
		"from ...a import (b as c)\n", "type X[T] = list[T]\n", "x = [y for y in z]\n", "'''\xff'''\n",
		"def f():\n    '''doc'''\n    # TODO: x\n    return g(h.i)\n", "((((((", "if x:\n\tpass\n  else:\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) { fuzzParse(t, Python, src) })
}

func FuzzParseTS(f *testing.F) {
	addFixtures(f, TypeScript)
	addFixtures(f, TSX)
	for _, s := range []string{
		"", "export default class {}", "import type { A } from 'a';", "const f = (a: T): U => a;",
		"/** @param {x} */ function f() {}", "class A extends B<C> implements D {}", "enum E { A }",
		"module.exports.x = () => 1;", "let x = <div>", "interface I { m(): void }", "{{{{",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		fuzzParse(t, TypeScript, src)
		fuzzParse(t, TSX, src)
	})
}

func FuzzParseGo(f *testing.F) {
	addFixtures(f, Go)
	for _, s := range []string{
		"", "package p\nfunc (r *R) M() {}\ntype R struct{}\n", "package p\ntype (\n\tA int\n\tB = A\n)\n",
		"package p\nvar (\n\ta, b = 1, 2\n)\n", "// doc\npackage p\n", "package p\nfunc f(",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) { fuzzParse(t, Go, src) })
}

func FuzzParseJS(f *testing.F) {
	addFixtures(f, JavaScript)
	for _, s := range []string{
		"", "#!/usr/bin/env node\nconst a = require('a');", "exports.f = function () {};",
		"class A { #p() {} static s = () => 1 }", "export default () => {};", "import('x')",
		"res.send = function send(body) {};", "a.b = c.d = () => 1;", "(function () { p.q = function () {}; })();",
		"!function () { p.q = class {}; }();", "(() => { o[k] = () => 1; }).call(this);",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) { fuzzParse(t, JavaScript, src) })
}
