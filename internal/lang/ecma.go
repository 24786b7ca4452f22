package lang

import (
	"strings"
)

// ecmaExtractor reads JavaScript, TypeScript and TSX trees.
//
// Symbols: function declarations and signatures (overloads, declare), and
// functions, arrow functions and classes assigned to a variable, a class
// field (then a method), an object literal key or a property (CommonJS
// exports anywhere; "res.send = function send() {...}" at module level or
// in a top-level IIFE); classes (abstract too),
// methods (abstract ones and interface method signatures too), interfaces,
// type aliases, enums, and the variables declared at module level (also in
// a namespace), exported or not, but not destructuring patterns. Class
// fields are variables. An anonymous default export is named "default". A
// symbol starts at its decorators or its "export" keyword.
//
// References (name signals for retrieval, seed 001 §5.7): calls and "new X()"
// (call), base classes and implemented interfaces (inherit), type names in
// annotations and JSX components written with a capital (name). Plain
// identifier uses are not recorded, nor the file's type parameters.
type ecmaExtractor struct {
	*extractor
	typeParams map[string]bool // names declared as type parameters
}

func extractECMA(t *tree, f *File) {
	x := &ecmaExtractor{extractor: newExtractor(t, f), typeParams: make(map[string]bool)}
	fd := x.fd
	for i := int32(0); int(i) < len(t.nodes); i++ {
		x.enter(i)
		if t.nodes[i].flags&flagDone != 0 {
			i = t.nodes[i].skip - 1 // a subtree a handler has read already
			continue
		}
		switch t.kind(i) {
		case "comment":
			x.addComment(i)
		case "export_statement":
			x.export(i)
		case "function_declaration", "generator_function_declaration", "function_signature",
			"class_declaration", "abstract_class_declaration", "interface_declaration",
			"type_alias_declaration", "enum_declaration":
			if t.nodes[i].flags&flagSym == 0 {
				x.declaration(i, x.head(i))
			}
		case "method_definition", "abstract_method_signature", "method_signature":
			x.method(i)
		case "public_field_definition", "field_definition":
			x.field(i)
		case "variable_declarator":
			x.declarator(i)
		case "pair":
			x.pair(i)
		case "assignment_expression":
			x.assignment(i)
		case "import_statement":
			x.importStatement(i)
			i = t.nodes[i].skip - 1
		case "call_expression":
			x.call(i)
		case "new_expression":
			if c := t.child(i, fd.constructor); c >= 0 {
				x.calleeRef(c, RefCall)
			}
		case "extends_clause":
			if v := t.child(i, fd.value); v >= 0 {
				x.inherit(v)
			}
		case "class_heritage": // JavaScript: "extends X" without a clause node
			if v := t.firstNamed(i); v >= 0 && t.kind(v) != "extends_clause" && t.kind(v) != "implements_clause" {
				x.inherit(v)
			}
		case "implements_clause", "extends_type_clause":
			for c := t.first(i); c >= 0; c = t.nodes[c].next {
				x.inherit(c)
			}
		case "type_identifier":
			x.typeRef(i)
		case "nested_type_identifier":
			x.addRef(RefName, t.text(t.child(i, fd.name)), t.text(t.child(i, fd.module)), i)
			i = t.nodes[i].skip - 1
		case "jsx_opening_element", "jsx_self_closing_element":
			x.jsxRef(t.child(i, fd.name))
		}
	}
	x.moduleDoc()
	x.finish()
}

// head is the node a declaration's lines and doc comment start at: the
// export statement around it, if any.
func (x *ecmaExtractor) head(i int32) int32 {
	t := x.t
	if p := t.parent(i); p >= 0 {
		switch t.kind(p) {
		case "export_statement", "ambient_declaration":
			return p
		}
	}
	return i
}

// export handles re-exports, "export default <expression>", and exported
// declarations, whose symbol it records here so that decorators before the
// "export" keyword are inside it.
func (x *ecmaExtractor) export(i int32) {
	t, fd := x.t, x.fd
	if d := t.child(i, fd.declaration); d >= 0 {
		switch t.kind(d) {
		case "function_declaration", "generator_function_declaration", "function_signature",
			"class_declaration", "abstract_class_declaration", "interface_declaration",
			"type_alias_declaration", "enum_declaration":
			x.declaration(d, i)
			t.nodes[d].flags |= flagSym
		}
		return
	}
	if src := t.child(i, fd.source); src >= 0 {
		imp := Import{Path: stringValue(t, src), Line: t.startLine(i), TypeOnly: t.childTok(i, "type") >= 0}
		if clause := t.childKind(i, "export_clause"); clause >= 0 {
			for c := t.first(clause); c >= 0; c = t.nodes[c].next {
				if t.kind(c) == "export_specifier" {
					imp.Names = append(imp.Names, t.text(t.child(c, fd.name)))
				}
			}
		}
		x.f.Imports = append(x.f.Imports, imp)
		return
	}
	v := t.child(i, fd.value)
	if v < 0 || t.childTok(i, "default") < 0 {
		return
	}
	switch t.kind(v) {
	case "arrow_function", "function_expression", "function", "generator_function":
		end := x.bodyStart(v)
		x.docFor(x.addSymbol(nameOr(t.text(t.child(v, fd.name)), "default"), KindFunction, i, v, x.sigFrom(i, end)), i)
	case "class":
		x.docFor(x.addSymbol(nameOr(t.text(t.child(v, fd.name)), "default"), KindClass, i, v, x.sigFrom(i, x.bodyStart(v))), i)
	}
}

func nameOr(name, dflt string) string {
	if name == "" {
		return dflt
	}
	return name
}

// declaration records a function, class, interface, type alias or enum
// declaration.
func (x *ecmaExtractor) declaration(i, head int32) {
	t, fd := x.t, x.fd
	name := t.text(t.child(i, fd.name))
	if name == "" {
		if head == i {
			return
		}
		name = "default"
	}
	var kind string
	end := x.bodyStart(i)
	switch t.kind(i) {
	case "function_declaration", "generator_function_declaration", "function_signature":
		kind = KindFunction
	case "class_declaration", "abstract_class_declaration":
		kind = KindClass
	case "interface_declaration":
		kind = KindInterface
	case "type_alias_declaration":
		kind, end = KindTypeAlias, t.nodes[i].end
	case "enum_declaration":
		kind = KindEnum
	}
	x.docFor(x.addSymbol(name, kind, head, i, x.sigFrom(head, end)), head)
}

// bodyStart is where the body of a definition begins (its end if it has
// none), so that the text before it is the signature.
func (x *ecmaExtractor) bodyStart(i int32) uint32 {
	if b := x.t.child(i, x.fd.body); b >= 0 {
		return x.t.nodes[b].start
	}
	return x.t.nodes[i].end
}

// sigFrom is the signature from head, past its decorators, to end.
func (x *ecmaExtractor) sigFrom(head int32, end uint32) string {
	t := x.t
	start := t.nodes[head].start
	for c := t.first(head); c >= 0; c = t.nodes[c].next {
		if k := t.kind(c); k != "decorator" && k != "comment" {
			start = t.nodes[c].start
			break
		}
	}
	return strings.TrimRight(t.sig(head, start, end), "; ")
}

// docFor attaches the /** */ comment right above head, if any, looking
// past pragmas such as "// eslint-disable-next-line".
func (x *ecmaExtractor) docFor(sym int, head int32) {
	t := x.t
	if sym < 0 {
		return
	}
	cs := x.precedingComments(head)
	for k := len(cs) - 1; k >= 0; k-- {
		raw := t.bytes(cs[k])
		if skipComment(raw, cleanComment(raw), 0) && !isJSDoc(raw) {
			continue
		}
		if isJSDoc(raw) {
			t.nodes[cs[k]].flags |= flagDone
			x.addDoc(sym, cleanBlock(validString(raw)))
		}
		return
	}
}

// isJSDoc reports a /** */ comment.
func isJSDoc(raw []byte) bool {
	return len(raw) > 4 && string(raw[:3]) == "/**" && string(raw) != "/**/"
}

// method records a method definition or signature; in an object literal it
// is a function.
func (x *ecmaExtractor) method(i int32) {
	t, fd := x.t, x.fd
	name := t.text(t.child(i, fd.name))
	if name == "" {
		return
	}
	kind := KindMethod
	if p := t.parent(i); p >= 0 && t.kind(p) == "object" {
		kind = KindFunction
	}
	x.docFor(x.addSymbol(name, kind, i, i, x.sigFrom(i, x.bodyStart(i))), i)
}

// field records a class field: a method when it holds a function, else a
// variable.
func (x *ecmaExtractor) field(i int32) {
	t, fd := x.t, x.fd
	n := t.child(i, fd.name)
	if n < 0 {
		n = t.child(i, fd.property)
	}
	name := t.text(n)
	if name == "" {
		return
	}
	v := t.child(i, fd.value)
	sym := -1
	if v >= 0 && isFunctionValue(t.kind(v)) {
		sym = x.addSymbol(name, KindMethod, i, i, x.sigFrom(i, x.bodyStart(v)))
	} else {
		sym = x.addSymbol(name, KindVariable, i, i, strings.TrimRight(x.firstLineFrom(i), "; "))
	}
	x.docFor(sym, i)
}

func isFunctionValue(kind string) bool {
	switch kind {
	case "arrow_function", "function_expression", "function", "generator_function":
		return true
	}
	return false
}

// firstLineFrom is the signature of i's first line, past its decorators.
func (x *ecmaExtractor) firstLineFrom(i int32) string {
	t := x.t
	end := t.nodes[i].end
	start := t.nodes[i].start
	for c := t.first(i); c >= 0; c = t.nodes[c].next {
		if k := t.kind(c); k != "decorator" && k != "comment" {
			start = t.nodes[c].start
			break
		}
	}
	for j := start; j < end; j++ {
		if t.src[j] == '\n' {
			end = j
			break
		}
	}
	return t.sig(i, start, end)
}

// declarator records "const f = () => ...", "const C = class ...", and the
// variables of a module-level declaration.
func (x *ecmaExtractor) declarator(i int32) {
	t, fd := x.t, x.fd
	n := t.child(i, fd.name)
	if n < 0 || t.kind(n) != "identifier" {
		return // destructuring
	}
	decl := t.parent(i)
	if decl < 0 {
		return
	}
	head := x.head(decl)
	firstDecl := t.firstNamed(decl) == i
	if !firstDecl {
		head = i
	}
	// The signature is "export const " (the declaration up to its first
	// declarator) followed by this declarator up to its body.
	prefix := ""
	if f := t.firstNamed(decl); f >= 0 {
		prefix = x.sigFrom(x.head(decl), t.nodes[f].start)
	}
	join := func(s string) string {
		if prefix == "" {
			return s
		}
		return prefix + " " + s
	}
	v := t.child(i, fd.value)
	sym := -1
	switch {
	case v >= 0 && isFunctionValue(t.kind(v)):
		sym = x.addSymbol(t.text(n), KindFunction, head, i, join(strings.TrimRight(t.sig(i, t.nodes[i].start, x.bodyStart(v)), " ")))
	case v >= 0 && t.kind(v) == "class":
		sym = x.addSymbol(t.text(n), KindClass, head, i, join(t.sig(i, t.nodes[i].start, x.bodyStart(v))))
	case x.topLevel(decl):
		end := t.nodes[i].end
		for j := t.nodes[i].start; j < end; j++ {
			if t.src[j] == '\n' {
				end = j
				break
			}
		}
		sym = x.addSymbol(t.text(n), KindVariable, head, i, join(strings.TrimRight(t.sig(i, t.nodes[i].start, end), "; ")))
	default:
		return
	}
	if firstDecl {
		x.docFor(sym, head)
	}
}

// topLevel reports a declaration at module level or in a namespace.
func (x *ecmaExtractor) topLevel(decl int32) bool {
	t := x.t
	for p := t.parent(decl); p >= 0; p = t.parent(p) {
		switch t.kind(p) {
		case "program":
			return true
		case "export_statement", "ambient_declaration", "internal_module", "module", "expression_statement":
		case "statement_block":
			if gp := t.parent(p); gp < 0 || t.kind(gp) != "internal_module" && t.kind(gp) != "module" {
				return false
			}
		default:
			return false
		}
	}
	return false
}

// pair records "key: function" in an object literal as a function.
func (x *ecmaExtractor) pair(i int32) {
	t, fd := x.t, x.fd
	k, v := t.child(i, fd.key), t.child(i, fd.value)
	if k < 0 || v < 0 || !isFunctionValue(t.kind(v)) {
		return
	}
	name := t.text(k)
	if t.kind(k) == "string" {
		name = stringValue(t, k)
	} else if t.kind(k) != "property_identifier" {
		return
	}
	x.docFor(x.addSymbol(name, KindFunction, i, i, t.sig(i, t.nodes[i].start, x.bodyStart(v))), i)
}

// assignment records a function, arrow function or class assigned to a
// property: "module.exports.f = function" and "exports.f = ..." anywhere,
// and "res.send = function send(body) {...}", "proto.handle = ..." at
// module level or directly in a top-level IIFE. The name is the last
// property of the left side; a named function expression's own name is not
// a second symbol.
func (x *ecmaExtractor) assignment(i int32) {
	t, fd := x.t, x.fd
	left, right := t.child(i, fd.left), t.child(i, fd.right)
	if left < 0 || right < 0 || t.kind(left) != "member_expression" {
		return
	}
	var kind string
	switch {
	case isFunctionValue(t.kind(right)):
		kind = KindFunction
	case t.kind(right) == "class":
		kind = KindClass
	default:
		return
	}
	n := t.child(left, fd.property)
	if n < 0 || t.kind(n) != "property_identifier" && t.kind(n) != "private_property_identifier" {
		return
	}
	head := i // the statement, past chained assignments "a.b = c.d = function"
	p := t.parent(i)
	for p >= 0 && t.kind(p) == "assignment_expression" {
		p = t.parent(p)
	}
	if p >= 0 && t.kind(p) == "expression_statement" {
		head = p
	}
	if obj := t.text(t.child(left, fd.object)); obj != "module.exports" && obj != "exports" && (head == i || !x.moduleStatement(head)) {
		return
	}
	x.docFor(x.addSymbol(t.text(n), kind, head, i, t.sig(i, t.nodes[i].start, x.bodyStart(right))), head)
}

// moduleStatement reports a statement at module level, in a namespace, or
// directly in the body of a top-level IIFE: "(function () {...})()",
// "(() => {...})()", "!function () {...}()", "(function () {...}).call(this)".
func (x *ecmaExtractor) moduleStatement(stmt int32) bool {
	t := x.t
	if x.topLevel(stmt) {
		return true
	}
	block := t.parent(stmt)
	if block < 0 || t.kind(block) != "statement_block" {
		return false
	}
	fn := t.parent(block)
	if fn < 0 || !isFunctionValue(t.kind(fn)) {
		return false
	}
	p := t.parent(fn)
	for p >= 0 && t.kind(p) == "parenthesized_expression" {
		p = t.parent(p)
	}
	if p >= 0 && t.kind(p) == "member_expression" { // .call(this), .apply(this)
		p = t.parent(p)
	}
	if p < 0 || t.kind(p) != "call_expression" {
		return false
	}
	for p = t.parent(p); p >= 0; p = t.parent(p) {
		switch t.kind(p) {
		case "parenthesized_expression", "unary_expression":
		case "expression_statement":
			return x.topLevel(p)
		default:
			return false
		}
	}
	return false
}

// importStatement records an import, "import x = require()" included.
func (x *ecmaExtractor) importStatement(i int32) {
	t, fd := x.t, x.fd
	imp := Import{Line: t.startLine(i), TypeOnly: t.childTok(i, "type") >= 0}
	src := t.child(i, fd.source)
	if req := t.childKind(i, "import_require_clause"); req >= 0 && src < 0 {
		src = t.child(req, fd.source)
	}
	if src < 0 {
		return
	}
	imp.Path = stringValue(t, src)
	if clause := t.childKind(i, "import_clause"); clause >= 0 {
		typed, specs := 0, 0
		for c := t.first(clause); c >= 0; c = t.nodes[c].next {
			switch t.kind(c) {
			case "identifier":
				imp.Names = append(imp.Names, "default")
			case "named_imports":
				for s := t.first(c); s >= 0; s = t.nodes[s].next {
					if t.kind(s) != "import_specifier" {
						continue
					}
					specs++
					if t.childTok(s, "type") >= 0 {
						typed++
					}
					imp.Names = append(imp.Names, t.text(t.child(s, fd.name)))
				}
			}
		}
		if specs > 0 && typed == specs && len(imp.Names) == specs {
			imp.TypeOnly = true // import { type A, type B } from
		}
	}
	x.f.Imports = append(x.f.Imports, imp)
}

// stringValue is the content of a string literal node, without quotes.
func stringValue(t *tree, s int32) string {
	var b strings.Builder
	for c := t.first(s); c >= 0; c = t.nodes[c].next {
		if k := t.kind(c); k == "string_fragment" || k == "escape_sequence" {
			b.WriteString(t.text(c))
		}
	}
	return b.String()
}

// call handles require("x") and import("x") as imports, and other calls as
// references.
func (x *ecmaExtractor) call(i int32) {
	t, fd := x.t, x.fd
	fn := t.child(i, fd.function)
	if fn < 0 {
		return
	}
	switch t.kind(fn) {
	case "import":
		x.dynamicImport(i)
		return
	case "identifier":
		if t.text(fn) == "require" && x.dynamicImport(i) {
			return
		}
	}
	x.calleeRef(fn, RefCall)
}

// dynamicImport records require("x") or import("x") with a literal path.
func (x *ecmaExtractor) dynamicImport(i int32) bool {
	t := x.t
	args := t.child(i, x.fd.arguments)
	if args < 0 {
		return false
	}
	s := t.firstNamed(args)
	if s < 0 || t.kind(s) != "string" {
		return false
	}
	x.f.Imports = append(x.f.Imports, Import{Path: stringValue(t, s), Line: t.startLine(i)})
	return true
}

// calleeRef records a reference to f or obj.f.
func (x *ecmaExtractor) calleeRef(c int32, kind string) {
	t, fd := x.t, x.fd
	switch t.kind(c) {
	case "identifier", "type_identifier":
		x.addRef(kind, t.text(c), "", c)
	case "member_expression":
		obj := t.child(c, fd.object)
		switch t.kind(obj) {
		case "string", "template_string", "number", "array", "object", "regex":
			return // "a,b".split(","), [].map(...) refer to no definition
		}
		x.addRef(kind, t.text(t.child(c, fd.property)), t.text(obj), c)
	case "nested_type_identifier":
		x.addRef(kind, t.text(t.child(c, fd.name)), t.text(t.child(c, fd.module)), c)
	}
}

// inherit records a base class or an implemented interface, then keeps the
// walk out of the name so it is not also recorded as a type reference.
func (x *ecmaExtractor) inherit(c int32) {
	t := x.t
	switch t.kind(c) {
	case "identifier", "type_identifier", "member_expression", "nested_type_identifier":
		x.calleeRef(c, RefInherit)
		t.nodes[c].flags |= flagDone
	case "generic_type":
		if n := t.child(c, x.fd.name); n >= 0 {
			x.calleeRef(n, RefInherit)
			t.nodes[n].flags |= flagDone
		}
	}
}

// typeRef records a type name used in a type, not the one being declared.
func (x *ecmaExtractor) typeRef(i int32) {
	t := x.t
	if t.is(i, x.fd.name) {
		switch t.parentKind(i) {
		case "type_parameter":
			x.typeParams[t.text(i)] = true
			return
		case "class_declaration", "abstract_class_declaration", "interface_declaration",
			"type_alias_declaration", "class":
			return
		}
	}
	if x.typeParams[string(t.bytes(i))] {
		return
	}
	x.addRef(RefName, t.text(i), "", i)
}

// jsxRef records a component used as a JSX element (<Foo>, <ui.Button>).
func (x *ecmaExtractor) jsxRef(n int32) {
	t := x.t
	if n < 0 {
		return
	}
	switch t.kind(n) {
	case "identifier":
		if s := t.bytes(n); len(s) > 0 && s[0] >= 'A' && s[0] <= 'Z' {
			x.addRef(RefName, t.text(n), "", n)
		}
	case "member_expression", "nested_identifier":
		x.calleeRef(n, RefName)
	}
}

// moduleDoc makes the first /** */ comment of the file, before any code
// and attached to no declaration, the module docstring.
func (x *ecmaExtractor) moduleDoc() {
	t := x.t
	for c := t.first(0); c >= 0; c = t.nodes[c].next {
		switch t.kind(c) {
		case "comment":
			if t.nodes[c].flags&flagDone != 0 {
				return
			}
			if raw := t.bytes(c); isJSDoc(raw) {
				t.nodes[c].flags |= flagDone
				x.addDoc(-1, cleanBlock(validString(raw)))
				return
			}
		case "hash_bang_line":
		default:
			return
		}
	}
}
