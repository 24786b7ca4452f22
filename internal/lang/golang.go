package lang

import (
	"strconv"
	"strings"
)

// goExtractor reads a Go tree.
//
// Symbols: functions; methods, whose Parent is the receiver's type when
// this file declares it (the signature includes the receiver); struct types
// as classes; interface types as interfaces, with their methods as methods;
// every other type spec ("type X int", "type X = Y") as a type alias; the
// names of package-level const and var specs as variables (iota blocks
// included: Go has no enum). Types declared in functions are symbols too.
//
// Docstrings are the comment block right above a declaration (for a spec
// in a group without its own, the group's when it is the first spec), and
// the one above the package clause for the module. Directives (//go:...)
// in the block are left out.
//
// References: calls (builtins such as len and make left out), type names
// in types (predeclared ones and the file's type parameters left out),
// qualified pkg.Name types and pkg.Name values where pkg is an imported
// package (name), and embedded struct fields and interfaces (inherit).
type goExtractor struct {
	*extractor
	pkgs       map[string]bool // local names of imported packages
	typeParams map[string]bool // names declared as type parameters
	methods    []goMethod
}

type goMethod struct {
	sym  int
	recv string
}

func extractGo(t *tree, f *File) {
	x := &goExtractor{extractor: newExtractor(t, f), pkgs: make(map[string]bool), typeParams: make(map[string]bool)}
	fd := x.fd
	for i := int32(0); int(i) < len(t.nodes); i++ {
		x.enter(i)
		if t.nodes[i].flags&flagDone != 0 {
			i = t.nodes[i].skip - 1
			continue
		}
		switch t.kind(i) {
		case "comment":
			x.addComment(i)
		case "package_clause":
			x.doc(-1, i)
		case "import_spec":
			x.importSpec(i)
			i = t.nodes[i].skip - 1
		case "function_declaration", "method_declaration":
			x.function(i)
		case "type_spec", "type_alias":
			x.typeSpec(i)
		case "const_spec", "var_spec":
			x.valueSpec(i)
		case "method_elem":
			if n := t.child(i, fd.name); n >= 0 {
				if sym := x.addSymbol(t.text(n), KindMethod, i, i, t.sig(i, t.nodes[i].start, t.nodes[i].end)); sym >= 0 {
					x.doc(sym, i)
				}
			}
		case "call_expression":
			x.call(i)
		case "selector_expression":
			if !(t.parentKind(i) == "call_expression" && t.is(i, fd.function)) {
				x.selector(i, RefName)
			}
		case "type_parameter_declaration":
			for c := t.first(i); c >= 0; c = t.nodes[c].next {
				if t.is(c, fd.name) {
					x.typeParams[t.text(c)] = true
				}
			}
		case "type_identifier":
			x.typeRef(i, RefName)
		case "qualified_type":
			x.typeRef(i, RefName)
			i = t.nodes[i].skip - 1
		case "field_declaration":
			if t.child(i, fd.name) < 0 {
				x.embedded(t.child(i, fd.typ))
			}
		case "type_elem":
			if t.parentKind(i) == "interface_type" {
				if c := t.firstNamed(i); c >= 0 && t.nodes[c].next < 0 {
					x.embedded(c)
				}
			}
		}
	}
	x.linkMethods()
	x.finish()
}

// doc attaches the comment block right above head to sym (-1: the module).
func (x *goExtractor) doc(sym int, head int32) bool {
	t := x.t
	cs := x.precedingComments(head)
	if len(cs) == 0 {
		return false
	}
	raws := make([]string, 0, len(cs))
	for _, c := range cs {
		t.nodes[c].flags |= flagDone
		raw := t.text(c)
		if strings.HasPrefix(raw, "//") && len(raw) > 2 && raw[2] != ' ' && raw[2] != '\t' && raw[2] != '/' &&
			skipComment(t.bytes(c), cleanComment(t.bytes(c)), 0) {
			continue // //go:generate, //nolint and the like
		}
		raws = append(raws, raw)
	}
	if content := cleanLineComments(raws); content != "" {
		x.addDoc(sym, content)
		return true
	}
	return false
}

func (x *goExtractor) importSpec(i int32) {
	t, fd := x.t, x.fd
	p := t.child(i, fd.path)
	if p < 0 {
		return
	}
	raw := t.text(p)
	path, err := strconv.Unquote(raw)
	if err != nil {
		path = strings.Trim(raw, "\"`")
	}
	x.f.Imports = append(x.f.Imports, Import{Path: path, Line: t.startLine(i)})
	if n := t.child(i, fd.name); n >= 0 {
		if name := t.text(n); name != "_" && name != "." {
			x.pkgs[name] = true
		}
		return
	}
	x.pkgs[goPackageName(path)] = true
}

// goPackageName guesses the name a package is imported under from its path:
// the last element, without a /vN major version, a .vN suffix (gopkg.in),
// a "go-" prefix or a "-go" suffix.
func goPackageName(path string) string {
	parts := strings.Split(path, "/")
	name := parts[len(parts)-1]
	if len(parts) > 1 && len(name) > 1 && name[0] == 'v' && strings.Trim(name[1:], "0123456789") == "" {
		name = parts[len(parts)-2]
	}
	if i := strings.Index(name, ".v"); i > 0 {
		name = name[:i]
	}
	name = strings.TrimPrefix(name, "go-")
	name = strings.TrimSuffix(name, "-go")
	return strings.ReplaceAll(name, "-", "")
}

func (x *goExtractor) function(i int32) {
	t, fd := x.t, x.fd
	name := t.text(t.child(i, fd.name))
	if name == "" {
		return
	}
	end := t.nodes[i].end
	if b := t.child(i, fd.body); b >= 0 {
		end = t.nodes[b].start
	}
	kind := KindFunction
	if t.kind(i) == "method_declaration" {
		kind = KindMethod
	}
	sym := x.addSymbol(name, kind, i, i, t.sig(i, t.nodes[i].start, end))
	if kind == KindMethod {
		if r := t.child(i, fd.receiver); r >= 0 {
			for j := r; j < t.nodes[r].skip; j++ {
				if t.kind(j) == "type_identifier" {
					x.methods = append(x.methods, goMethod{sym: sym, recv: t.text(j)})
					break
				}
			}
		}
	}
	x.doc(sym, i)
}

// grouped returns the declaration of a spec and whether the spec is inside
// "type (...)", "const (...)" or "var (...)" (where the grammar puts an
// extra var_spec_list node).
func (x *goExtractor) grouped(spec int32) (decl int32, ok bool) {
	t := x.t
	decl = t.parent(spec)
	if decl < 0 {
		return decl, false
	}
	if t.kind(decl) == "var_spec_list" {
		return t.parent(decl), true
	}
	return decl, t.childTok(decl, "(") >= 0
}

// specDoc attaches the doc of a spec, or its group's to the group's first
// spec.
func (x *goExtractor) specDoc(sym int, spec, decl int32, grouped bool) {
	if !grouped {
		x.doc(sym, decl)
		return
	}
	if !x.doc(sym, spec) && x.t.firstNamed(x.t.parent(spec)) == spec {
		x.doc(sym, decl)
	}
}

func (x *goExtractor) typeSpec(i int32) {
	t, fd := x.t, x.fd
	name := t.text(t.child(i, fd.name))
	if name == "" {
		return
	}
	kind, end := KindTypeAlias, t.nodes[i].end
	if typ := t.child(i, fd.typ); typ >= 0 && t.kind(i) == "type_spec" {
		switch t.kind(typ) {
		case "struct_type":
			kind = KindClass
			if l := t.childKind(typ, "field_declaration_list"); l >= 0 {
				end = t.nodes[l].start
			}
		case "interface_type":
			kind = KindInterface
			if b := t.childTok(typ, "{"); b >= 0 {
				end = t.nodes[b].start
			}
		}
	}
	decl, grouped := x.grouped(i)
	head, sig := i, ""
	if grouped || decl < 0 {
		sig = "type " + t.sig(i, t.nodes[i].start, end)
	} else {
		head = decl
		sig = t.sig(decl, t.nodes[decl].start, end)
	}
	sym := x.addSymbol(name, kind, head, i, sig)
	x.specDoc(sym, i, decl, grouped)
}

// valueSpec records the names of a package-level const or var spec.
func (x *goExtractor) valueSpec(i int32) {
	t, fd := x.t, x.fd
	decl, grouped := x.grouped(i)
	if decl < 0 || t.parentKind(decl) != "source_file" {
		return
	}
	head := decl
	sig := t.firstLine(i)
	if grouped {
		head = i
		kw := "var "
		if t.kind(i) == "const_spec" {
			kw = "const "
		}
		sig = clip(kw+sig, maxSignature)
	} else {
		sig = t.firstLine(decl)
	}
	first := -1
	for c := t.first(i); c >= 0; c = t.nodes[c].next {
		if !t.is(c, fd.name) || t.kind(c) != "identifier" {
			continue
		}
		if first >= 0 {
			x.scopes = x.scopes[:len(x.scopes)-1] // names are siblings, not nested
		}
		sym := x.addSymbol(t.text(c), KindVariable, head, i, sig)
		if sym < 0 {
			continue
		}
		if first < 0 {
			first = sym
		}
	}
	if first >= 0 {
		x.specDoc(first, i, decl, grouped)
	}
}

// goBuiltinFuncs are the predeclared functions.
var goBuiltinFuncs = map[string]bool{
	"append": true, "cap": true, "clear": true, "close": true, "complex": true, "copy": true,
	"delete": true, "imag": true, "len": true, "make": true, "max": true, "min": true, "new": true,
	"panic": true, "print": true, "println": true, "real": true, "recover": true,
}

// goBuiltinTypes are the predeclared types.
var goBuiltinTypes = map[string]bool{
	"any": true, "bool": true, "byte": true, "comparable": true, "complex64": true, "complex128": true,
	"error": true, "float32": true, "float64": true, "int": true, "int8": true, "int16": true,
	"int32": true, "int64": true, "rune": true, "string": true, "uint": true, "uint8": true,
	"uint16": true, "uint32": true, "uint64": true, "uintptr": true,
}

func (x *goExtractor) call(i int32) {
	t, fd := x.t, x.fd
	fn := t.child(i, fd.function)
	if fn < 0 {
		return
	}
	switch t.kind(fn) {
	case "identifier":
		if name := t.text(fn); !goBuiltinFuncs[name] {
			x.addRef(RefCall, name, "", fn)
		}
	case "selector_expression":
		x.addRef(RefCall, t.text(t.child(fn, fd.field)), t.text(t.child(fn, fd.operand)), fn)
	}
}

// selector records pkg.Name where pkg is an imported package.
func (x *goExtractor) selector(i int32, kind string) {
	t, fd := x.t, x.fd
	op := t.child(i, fd.operand)
	if op < 0 || t.kind(op) != "identifier" || !x.pkgs[string(t.bytes(op))] {
		return
	}
	x.addRef(kind, t.text(t.child(i, fd.field)), t.text(op), i)
}

// typeRef records a type name (or pkg.Name) used in a type.
func (x *goExtractor) typeRef(i int32, kind string) {
	t, fd := x.t, x.fd
	if t.kind(i) == "qualified_type" {
		x.addRef(kind, t.text(t.child(i, fd.name)), t.text(t.childKind(i, "package_identifier")), i)
		return
	}
	if t.is(i, fd.name) {
		switch t.parentKind(i) {
		case "type_spec", "type_alias":
			return
		}
	}
	name := t.bytes(i)
	if goBuiltinTypes[string(name)] || x.typeParams[string(name)] {
		return
	}
	x.addRef(kind, t.text(i), "", i)
}

// embedded records an embedded struct field or interface as inherited.
func (x *goExtractor) embedded(c int32) {
	t := x.t
	for c >= 0 && (t.kind(c) == "pointer_type" || t.kind(c) == "generic_type") {
		inner := t.firstNamed(c)
		if t.kind(c) == "generic_type" {
			inner = t.child(c, x.fd.typ)
			if inner < 0 {
				inner = t.firstNamed(c)
			}
		}
		c = inner
	}
	if c < 0 {
		return
	}
	switch t.kind(c) {
	case "type_identifier", "qualified_type":
		x.typeRef(c, RefInherit)
		t.nodes[c].flags |= flagDone
	}
}

// linkMethods makes each method a child of its receiver type when the file
// declares it.
func (x *goExtractor) linkMethods() {
	if len(x.methods) == 0 {
		return
	}
	types := make(map[string]int)
	for i, s := range x.f.Symbols {
		switch s.Kind {
		case KindClass, KindInterface, KindTypeAlias:
			if s.Parent < 0 {
				if _, dup := types[s.Name]; !dup {
					types[s.Name] = i
				}
			}
		}
	}
	for _, m := range x.methods {
		if p, ok := types[m.recv]; ok {
			x.f.Symbols[m.sym].Parent = p
		}
	}
}
