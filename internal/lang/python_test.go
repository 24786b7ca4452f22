package lang

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestPythonSymbols(t *testing.T) {
	src := `from enum import Enum, StrEnum, Flag
import typing as t

LIMIT = 10
LIMIT = 20
NAME: str
Alias: t.TypeAlias = dict[str, int]
type Pair[T] = tuple[T, T]
x, y = 1, 2
obj.attr = 3

class Color(Enum):
    RED = 1

class Mode(StrEnum): pass
class Perm(enum.Flag): pass
class Reader(t.Protocol): pass
class Box(Generic[T]): pass

@dataclass
class Point:
    """A point."""
    x: int
    y: int = 0

    @property
    def norm(self):
        local = 1
        def inner():
            pass
        class Nested:
            attr = 1
        return local

    if True:
        def conditional(self): pass

async def main():
    pass

lam = lambda v: v
`
	want := []Symbol{
		{Name: "LIMIT", Kind: KindVariable, StartLine: 4, EndLine: 4, Signature: "LIMIT = 10", Parent: -1},
		{Name: "NAME", Kind: KindVariable, StartLine: 6, EndLine: 6, Signature: "NAME: str", Parent: -1},
		{Name: "Alias", Kind: KindTypeAlias, StartLine: 7, EndLine: 7, Signature: "Alias: t.TypeAlias = dict[str, int]", Parent: -1},
		{Name: "Pair", Kind: KindTypeAlias, StartLine: 8, EndLine: 8, Signature: "type Pair[T] = tuple[T, T]", Parent: -1},
		{Name: "Color", Kind: KindEnum, StartLine: 12, EndLine: 13, Signature: "class Color(Enum):", Parent: -1},
		{Name: "RED", Kind: KindVariable, StartLine: 13, EndLine: 13, Signature: "RED = 1", Parent: 4},
		{Name: "Mode", Kind: KindEnum, StartLine: 15, EndLine: 15, Signature: "class Mode(StrEnum):", Parent: -1},
		{Name: "Perm", Kind: KindEnum, StartLine: 16, EndLine: 16, Signature: "class Perm(enum.Flag):", Parent: -1},
		{Name: "Reader", Kind: KindInterface, StartLine: 17, EndLine: 17, Signature: "class Reader(t.Protocol):", Parent: -1},
		{Name: "Box", Kind: KindClass, StartLine: 18, EndLine: 18, Signature: "class Box(Generic[T]):", Parent: -1},
		{Name: "Point", Kind: KindClass, StartLine: 20, EndLine: 36, Signature: "class Point:", Parent: -1},
		{Name: "x", Kind: KindVariable, StartLine: 23, EndLine: 23, Signature: "x: int", Parent: 10},
		{Name: "y", Kind: KindVariable, StartLine: 24, EndLine: 24, Signature: "y: int = 0", Parent: 10},
		{Name: "norm", Kind: KindMethod, StartLine: 26, EndLine: 33, Signature: "def norm(self):", Parent: 10},
		{Name: "inner", Kind: KindFunction, StartLine: 29, EndLine: 30, Signature: "def inner():", Parent: 13},
		{Name: "Nested", Kind: KindClass, StartLine: 31, EndLine: 32, Signature: "class Nested:", Parent: 13},
		{Name: "attr", Kind: KindVariable, StartLine: 32, EndLine: 32, Signature: "attr = 1", Parent: 15},
		{Name: "conditional", Kind: KindMethod, StartLine: 36, EndLine: 36, Signature: "def conditional(self):", Parent: 10},
		{Name: "main", Kind: KindFunction, StartLine: 38, EndLine: 39, Signature: "async def main():", Parent: -1},
		{Name: "lam", Kind: KindVariable, StartLine: 41, EndLine: 41, Signature: "lam = lambda v: v", Parent: -1},
	}
	p := NewParser()
	defer p.Close()
	f := parseOK(t, p, Python, []byte(src))
	if diff := cmp.Diff(want, f.Symbols); diff != "" {
		t.Errorf("symbols (-want +got):\n%s", diff)
	}
}

func TestPythonSignatures(t *testing.T) {
	tests := []struct{ src, want string }{
		{"def f(a, b):\n    pass\n", "def f(a, b):"},
		// Comments inside the parameter list stay out of the signature.
		{"def f(\n    a,  # the a\n    b: int = 2,\n) -> None:  # done\n    pass\n", "def f(a, b: int = 2,) -> None:"},
		{"@a\n@b(1)\ndef f(): pass\n", "def f():"},
		{"class C(\n    Base,\n):\n    pass\n", "class C(Base,):"},
		{"X = {\n    'a': 1,\n}\n", "X = {"},
	}
	p := NewParser()
	defer p.Close()
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			f := parseOK(t, p, Python, []byte(tc.src))
			if len(f.Symbols) == 0 {
				t.Fatal("no symbol")
			}
			if got := f.Symbols[0].Signature; got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPythonDecoratedLines(t *testing.T) {
	p := NewParser()
	defer p.Close()
	f := parseOK(t, p, Python, []byte("\n@app.route('/')\n@login_required\ndef index():\n    return 1\n"))
	got := f.Symbols[0]
	if got.StartLine != 2 || got.EndLine != 5 {
		t.Errorf("got lines %d-%d, want 2-5 (a decorated def starts at its first decorator)", got.StartLine, got.EndLine)
	}
	refs := refStrings(f)
	if diff := cmp.Diff([]string{"0 call route app", "0 name app", "0 name login_required"}, refs); diff != "" {
		t.Errorf("decorator references belong to the decorated function (-want +got):\n%s", diff)
	}
}

func TestPythonImports(t *testing.T) {
	tests := []struct {
		src  string
		want []Import
	}{
		{"import os", []Import{{Path: "os", Line: 1}}},
		{"import a.b", []Import{{Path: "a.b", Line: 1}}},
		{"import a.b as c", []Import{{Path: "a.b", Line: 1}}},
		{"import a, b.c as d", []Import{{Path: "a", Line: 1}, {Path: "b.c", Line: 1}}},
		{"from a.b import c, d", []Import{{Path: "a.b", Names: []string{"c", "d"}, Line: 1}}},
		{"from a import (c as e,\n    d)", []Import{{Path: "a", Names: []string{"c", "d"}, Line: 1}}},
		{"from a import *", []Import{{Path: "a", Line: 1}}},
		{"from . import x", []Import{{Path: "", Level: 1, Names: []string{"x"}, Line: 1}}},
		{"from .mod import x", []Import{{Path: "mod", Level: 1, Names: []string{"x"}, Line: 1}}},
		{"from ..pkg import y", []Import{{Path: "pkg", Level: 2, Names: []string{"y"}, Line: 1}}},
		{"from ...a.b import z", []Import{{Path: "a.b", Level: 3, Names: []string{"z"}, Line: 1}}},
		{"from __future__ import annotations", nil},
		{"def f():\n    import json\n    from x import y\n", []Import{{Path: "json", Line: 2}, {Path: "x", Names: []string{"y"}, Line: 3}}},
		{"try:\n    import ujson as json\nexcept ImportError:\n    import json\n", []Import{{Path: "ujson", Line: 2}, {Path: "json", Line: 4}}},
		{"if TYPE_CHECKING:\n    from .models import User\n", []Import{{Path: "models", Level: 1, Names: []string{"User"}, Line: 2}}},
	}
	p := NewParser()
	defer p.Close()
	for _, tc := range tests {
		t.Run(tc.src, func(t *testing.T) {
			f := parseOK(t, p, Python, []byte(tc.src))
			if diff := cmp.Diff(tc.want, f.Imports, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("imports (-want +got):\n%s", diff)
			}
		})
	}
}

// refStrings renders references as "caller kind name qualifier".
func refStrings(f *File) []string {
	var out []string
	for _, r := range f.References {
		s := strconv.Itoa(r.Caller) + " " + r.Kind + " " + r.Name
		if r.Qualifier != "" {
			s += " " + r.Qualifier
		}
		out = append(out, s)
	}
	return out
}

func TestPythonReferences(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"plain call", "def f():\n    g()\n", []string{"0 call g"}},
		{"qualified calls", "def f(obj):\n    obj.m()\n    self.save()\n    os.path.join('a')\n    a.b.c.d()\n",
			[]string{"0 call m obj", "0 call save self", "0 call join os.path", "0 name os", "0 call d a.b.c", "0 name a"}},
		{"call on a call", "def f():\n    get().run()\n", []string{"0 call run get()", "0 call get"}},
		{"methods of literals skipped", "def f(xs):\n    return ', '.join(xs) + '{}'.format(1) + [1].count(1)\n", nil},
		{"super", "class C(B):\n    def f(self):\n        super().f()\n", []string{"0 inherit B", "1 call f super()"}},
		{"inheritance", "class C(Base, mixins.Audit, Generic[T], metaclass=Meta):\n    pass\n",
			[]string{"0 inherit Base", "0 inherit Audit mixins", "0 name mixins", "0 inherit Generic", "0 name T", "0 name Meta"}},
		{"name uses", "LIMIT = 3\ndef f():\n    return LIMIT + settings.DEBUG\n",
			[]string{"1 name LIMIT", "1 name DEBUG settings", "1 name settings"}},
		{"module level caller", "setup(name=NAME)\n", []string{"-1 call setup", "-1 name NAME"}},
		{"variable caller", "X = compute()\n", []string{"0 call compute"}},
		{"locals and params skipped", "def f(a, *args, b=DEFAULT, **kw):\n    c = a + b\n    for i, j in pairs(c):\n        use(i, j, kw, args)\n    with open(p) as fh:\n        fh.read()\n    return [v for v in c if v]\n",
			[]string{"0 name DEFAULT", "0 call pairs", "0 call use", "0 name p", "0 call read fh"}},
		{"calls of locals skipped", "def f(callback):\n    callback()\n    fn = pick()\n    fn()\n", []string{"0 call pick"}},
		{"closures see enclosing locals", "def outer(x):\n    def inner():\n        return x + y\n    return inner()\n",
			[]string{"1 name y", "0 call inner"}},
		{"lambda params", "key = lambda item: item.name + other\n", []string{"0 name name item", "0 name other"}},
		{"keyword names skipped", "def f():\n    g(flag=VALUE)\n", []string{"0 call g", "0 name VALUE"}},
		{"builtins skipped", "def f(x):\n    return len(x) + int(x) + isinstance(x, str)\n", nil},
		{"shadowed builtin kept", "from .fmt import format\ndef f(x):\n    return format(x)\n", []string{"0 call format"}},
		{"self and cls skipped", "class C:\n    @classmethod\n    def f(cls):\n        return cls.x, self\n", []string{"1 name x cls"}},
		{"assignment targets skipped", "def f():\n    self.a = 1\n    obj.b += 2\n", []string{"0 name obj"}},
		{"annotations", "def f(a: Model) -> Result:\n    pass\n", []string{"0 name Model", "0 name Result"}},
		{"f-string", "def f():\n    return f'{value!r}'\n", []string{"0 name value"}},
		{"dedupe keeps the first line", "def f():\n    g()\n    g()\n    h.g()\n", []string{"0 call g", "0 call g h", "0 name h"}},
	}
	p := NewParser()
	defer p.Close()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := parseOK(t, p, Python, []byte(tc.src))
			if diff := cmp.Diff(tc.want, refStrings(f), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("references (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPythonReferenceLines(t *testing.T) {
	p := NewParser()
	defer p.Close()
	f := parseOK(t, p, Python, []byte("def f():\n    pass\n\ndef g():\n    f()\n    f()\n"))
	want := []Reference{{Caller: 1, Name: "f", Kind: RefCall, Line: 5}}
	if diff := cmp.Diff(want, f.References); diff != "" {
		t.Errorf("references (-want +got):\n%s", diff)
	}
}

func TestPythonDocstrings(t *testing.T) {
	src := `'''Module.'''

def a():
    f"""not a docstring {x}"""

def b():
    b"""bytes are not docstrings"""

def c():
    "single"

def d():
    x = 1
    """too late"""

class E:
    r'''Raw \d docstring.'''
`
	p := NewParser()
	defer p.Close()
	f := parseOK(t, p, Python, []byte(src))
	var got []string
	for _, d := range f.Docstrings {
		got = append(got, strconv.Itoa(d.Symbol)+" "+d.Content)
	}
	want := []string{"-1 Module.", "2 single", "4 Raw \\d docstring."}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("docstrings (-want +got):\n%s", diff)
	}
}
