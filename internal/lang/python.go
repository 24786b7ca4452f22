package lang

import "strings"

// pyExtractor reads a Python tree.
//
// Symbols: functions and async functions (methods when a class body is the
// nearest enclosing definition), classes (enum when a base is Enum, IntEnum,
// StrEnum, Flag, IntFlag, ReprEnum or Django's Choices, TextChoices,
// IntegerChoices; interface when a base is Protocol), module- and
// class-level "NAME = ..." and "NAME: T [= ...]" as variables ("X: TypeAlias
// = ..." and "type X = ..." as type aliases; the first binding of a name in
// a scope wins, so conditional re-assignments are not duplicated). A
// decorated definition starts at its first decorator; its signature is the
// def line.
//
// References (seed 001 §4.5 symbol_references): calls, base classes
// (inherit) and the other uses of names, from the innermost symbol. Not
// references: parameters and other local bindings of the enclosing
// functions (and calls of them), names being bound, keyword argument names,
// self and cls, builtins unless the module itself binds the name, and for a
// dotted use a.b.c only "c" (qualifier "a.b") and "a" are recorded, not the
// middle parts; attributes of literals (", ".join) are not recorded.
type pyExtractor struct {
	*extractor
	locals      map[int32]map[string]struct{} // local scope node → bound names
	lscopes     []localScope
	varSeen     map[varKey]bool
	moduleNames map[string]bool // names bound by defs, classes and imports
}

type localScope struct {
	end   int32
	names map[string]struct{}
}

type varKey struct {
	parent int
	name   string
}

func extractPython(t *tree, f *File) {
	x := &pyExtractor{
		extractor:   newExtractor(t, f),
		locals:      make(map[int32]map[string]struct{}),
		varSeen:     make(map[varKey]bool),
		moduleNames: make(map[string]bool),
	}
	fd := x.fd
	x.collectLocals()
	if s := t.firstNamed(0); s >= 0 {
		x.addDoc(-1, x.docString(s))
	}
	for i := int32(0); int(i) < len(t.nodes); i++ {
		x.enter(i)
		for len(x.lscopes) > 0 && x.lscopes[len(x.lscopes)-1].end <= i {
			x.lscopes = x.lscopes[:len(x.lscopes)-1]
		}
		switch t.kind(i) {
		case "comment":
			x.addComment(i)
		case "decorated_definition":
			if def := t.child(i, fd.definition); def >= 0 {
				x.def(def, i)
				t.nodes[def].flags |= flagSym
			}
		case "function_definition":
			if t.nodes[i].flags&flagSym == 0 {
				x.def(i, i)
			}
			x.openLocal(i)
		case "class_definition":
			if t.nodes[i].flags&flagSym == 0 {
				x.def(i, i)
			}
		case "lambda", "list_comprehension", "set_comprehension", "dictionary_comprehension", "generator_expression":
			x.openLocal(i)
		case "assignment":
			x.assignment(i)
		case "type_alias_statement":
			x.typeAlias(i)
		case "import_statement", "import_from_statement":
			x.imports(i)
			i = t.nodes[i].skip - 1
		case "future_import_statement", "global_statement", "nonlocal_statement":
			i = t.nodes[i].skip - 1
		case "identifier":
			x.ident(i)
		case "attribute":
			x.attribute(i)
		}
	}
	x.dropBuiltins()
	x.finish()
}

// isLocalScope reports the nodes that open a scope of local names.
func isLocalScope(kind string) bool {
	switch kind {
	case "function_definition", "lambda", "list_comprehension", "set_comprehension",
		"dictionary_comprehension", "generator_expression":
		return true
	}
	return false
}

// collectLocals finds, before the main walk, the names each function,
// lambda and comprehension binds: uses may come before bindings in the tree
// ("[x for x in y]").
func (x *pyExtractor) collectLocals() {
	t := x.t
	for i := int32(0); int(i) < len(t.nodes); i++ {
		if t.kind(i) != "identifier" || !x.isBinding(i) {
			continue
		}
		for p := t.parent(i); p >= 0; p = t.parent(p) {
			if k := t.kind(p); isLocalScope(k) {
				set := x.locals[p]
				if set == nil {
					set = make(map[string]struct{})
					x.locals[p] = set
				}
				set[t.text(i)] = struct{}{}
				break
			} else if k == "class_definition" || k == "module" {
				break
			}
		}
	}
}

func (x *pyExtractor) openLocal(i int32) {
	if names := x.locals[i]; names != nil {
		x.lscopes = append(x.lscopes, localScope{end: x.t.nodes[i].skip, names: names})
	}
}

func (x *pyExtractor) isLocal(name []byte) bool {
	for _, s := range x.lscopes {
		if _, ok := s.names[string(name)]; ok {
			return true
		}
	}
	return false
}

// isBinding reports whether identifier (or attribute) i is being bound
// rather than used.
func (x *pyExtractor) isBinding(i int32) bool {
	t, fd := x.t, x.fd
	p := t.parent(i)
	if p < 0 {
		return false
	}
	switch t.kind(p) {
	case "parameters", "lambda_parameters", "list_splat_pattern", "dictionary_splat_pattern",
		"pattern_list", "tuple_pattern", "list_pattern", "as_pattern_target":
		return true
	case "typed_parameter":
		return t.nodes[i].field == 0
	case "default_parameter", "typed_default_parameter", "named_expression":
		return t.is(i, fd.name)
	case "assignment", "augmented_assignment", "for_statement", "for_in_clause":
		return t.is(i, fd.left)
	case "tuple", "list", "parenthesized_expression":
		gp := t.parent(p)
		return gp >= 0 && t.kind(gp) == "as_pattern_target"
	}
	return false
}

// pyEnumBases are base class names that make a class an enum.
var pyEnumBases = map[string]bool{
	"Enum": true, "IntEnum": true, "StrEnum": true, "Flag": true, "IntFlag": true, "ReprEnum": true,
	"Choices": true, "TextChoices": true, "IntegerChoices": true,
}

// def records a function or class; head is the decorated_definition when
// there is one.
func (x *pyExtractor) def(def, head int32) {
	t, fd := x.t, x.fd
	name := t.text(t.child(def, fd.name))
	if name == "" {
		return
	}
	body := t.child(def, fd.body)
	kind := KindFunction
	if t.kind(def) == "class_definition" {
		kind = x.classKind(def)
	} else if x.inClassBody(head) {
		kind = KindMethod
	}
	sigEnd := t.nodes[def].end
	if body >= 0 {
		sigEnd = t.nodes[body].start
		for c := t.first(def); c >= 0 && c < body; c = t.nodes[c].next {
			if t.tok(c) == ":" {
				sigEnd = t.nodes[c].end
			}
		}
	}
	if x.current() < 0 {
		x.moduleNames[name] = true
	}
	sym := x.addSymbol(name, kind, head, head, t.sig(def, t.nodes[def].start, sigEnd))
	if body >= 0 {
		if s := t.firstNamed(body); s >= 0 {
			x.addDoc(sym, x.docString(s))
		}
	}
}

func (x *pyExtractor) classKind(def int32) string {
	t := x.t
	bases := t.child(def, x.fd.superclasses)
	if bases < 0 {
		return KindClass
	}
	for c := t.first(bases); c >= 0; c = t.nodes[c].next {
		b := c
		if t.kind(b) == "subscript" {
			b = t.child(b, x.fd.value)
		}
		if b < 0 {
			continue
		}
		switch t.kind(b) {
		case "identifier", "attribute":
			name := lastPart(t.text(b))
			if pyEnumBases[name] {
				return KindEnum
			}
			if name == "Protocol" {
				return KindInterface
			}
		}
	}
	return KindClass
}

// inClassBody reports whether a class body, not a function, is the nearest
// definition around node i.
func (x *pyExtractor) inClassBody(i int32) bool {
	return x.scopeOf(i) == "class_definition"
}

// inFunction reports whether node i is local to a function.
func (x *pyExtractor) inFunction(i int32) bool {
	k := x.scopeOf(i)
	return k == "function_definition" || k == "lambda"
}

// scopeOf returns the kind of the nearest scope around node i: a class,
// function or lambda definition, or the module; "" when none.
func (x *pyExtractor) scopeOf(i int32) string {
	t := x.t
	for p := t.parent(i); p >= 0; p = t.parent(p) {
		switch k := t.kind(p); k {
		case "class_definition", "function_definition", "lambda", "module":
			return k
		}
	}
	return ""
}

// docString is the cleaned docstring if statement s is a lone string
// literal, else "".
func (x *pyExtractor) docString(s int32) string {
	t := x.t
	if t.kind(s) != "expression_statement" {
		return ""
	}
	str := t.firstNamed(s)
	if str < 0 || t.kind(str) != "string" {
		return ""
	}
	for c := t.nodes[str].next; c >= 0; c = t.nodes[c].next {
		if t.named(c) {
			return "" // "a", "b" is a tuple
		}
	}
	open, close := t.childKind(str, "string_start"), t.childKind(str, "string_end")
	if open < 0 || close < 0 || t.nodes[close].start < t.nodes[open].end {
		return ""
	}
	if strings.ContainsAny(t.text(open), "fFbB") {
		return "" // f-strings and bytes are not docstrings
	}
	return cleandoc(validString(t.src[t.nodes[open].end:t.nodes[close].start]))
}

// assignment records a module- or class-level "NAME = ..." as a variable.
func (x *pyExtractor) assignment(i int32) {
	t, fd := x.t, x.fd
	left := t.child(i, fd.left)
	if left < 0 || t.kind(left) != "identifier" || x.inFunction(i) {
		return
	}
	name := t.text(left)
	kind := KindVariable
	if typ := t.child(i, fd.typ); typ >= 0 && lastPart(t.text(typ)) == "TypeAlias" {
		kind = KindTypeAlias
	}
	x.variable(name, kind, i)
}

// typeAlias records "type X = ...".
func (x *pyExtractor) typeAlias(i int32) {
	t := x.t
	left := t.child(i, x.fd.left)
	if left < 0 {
		return
	}
	for j := left; j < t.nodes[left].skip; j++ {
		if t.kind(j) == "identifier" {
			x.variable(t.text(j), KindTypeAlias, i)
			return
		}
	}
}

// variable records a variable or type alias unless its scope already has
// one of that name. A chained "a = b = 1" gives b the parent a has.
func (x *pyExtractor) variable(name, kind string, i int32) {
	parent := -1
	for s := len(x.scopes) - 1; s >= 0; s-- {
		if k := x.f.Symbols[x.scopes[s].sym].Kind; k != KindVariable && k != KindTypeAlias {
			parent = x.scopes[s].sym
			break
		}
	}
	key := varKey{parent: parent, name: name}
	if x.varSeen[key] {
		return
	}
	x.varSeen[key] = true
	if parent < 0 {
		x.moduleNames[name] = true
	}
	if sym := x.addSymbol(name, kind, i, i, x.t.firstLine(i)); sym >= 0 {
		x.f.Symbols[sym].Parent = parent
	}
}

// imports records an import statement.
func (x *pyExtractor) imports(i int32) {
	t, fd := x.t, x.fd
	line := t.startLine(i)
	if t.kind(i) == "import_statement" {
		for c := t.first(i); c >= 0; c = t.nodes[c].next {
			if !t.is(c, fd.name) {
				continue
			}
			mod, bound := c, ""
			if t.kind(c) == "aliased_import" {
				mod, bound = t.child(c, fd.name), t.text(t.child(c, fd.alias))
			}
			path := t.text(mod)
			if bound == "" {
				bound, _, _ = strings.Cut(path, ".")
			}
			x.moduleNames[bound] = true
			x.f.Imports = append(x.f.Imports, Import{Path: path, Line: line})
		}
		return
	}
	imp := Import{Line: line}
	if m := t.child(i, fd.moduleName); m >= 0 {
		if t.kind(m) == "relative_import" {
			for c := t.first(m); c >= 0; c = t.nodes[c].next {
				switch t.kind(c) {
				case "import_prefix":
					imp.Level = strings.Count(t.text(c), ".")
				case "dotted_name":
					imp.Path = t.text(c)
				}
			}
		} else {
			imp.Path = t.text(m)
		}
	}
	for c := t.first(i); c >= 0; c = t.nodes[c].next {
		if !t.is(c, fd.name) {
			continue
		}
		name, bound := t.text(c), ""
		if t.kind(c) == "aliased_import" {
			name, bound = t.text(t.child(c, fd.name)), t.text(t.child(c, fd.alias))
		}
		if bound == "" {
			bound = name
		}
		x.moduleNames[bound] = true
		imp.Names = append(imp.Names, name)
	}
	x.f.Imports = append(x.f.Imports, imp)
}

// ident handles an identifier: a call, a base class, a use, or nothing.
func (x *pyExtractor) ident(i int32) {
	t, fd := x.t, x.fd
	p := t.parent(i)
	if p < 0 {
		return
	}
	switch t.kind(p) {
	case "call":
		if t.is(i, fd.function) && !x.isLocal(t.bytes(i)) {
			x.addRef(RefCall, t.text(i), "", i)
		}
		return
	case "attribute":
		if t.is(i, fd.object) {
			x.use(i)
		}
		return
	case "function_definition", "class_definition", "keyword_argument":
		if t.is(i, fd.name) {
			return
		}
	case "type":
		if gp := t.parent(p); gp >= 0 && t.kind(gp) == "type_alias_statement" && t.is(p, fd.left) {
			return // the name in "type X = ..."
		}
	}
	if x.isBinding(i) {
		return
	}
	if x.isBase(i) {
		x.addRef(RefInherit, t.text(i), "", i)
		return
	}
	x.use(i)
}

// use records a name reference unless the name is self, cls or local.
func (x *pyExtractor) use(i int32) {
	b := x.t.bytes(i)
	if string(b) == "self" || string(b) == "cls" || x.isLocal(b) {
		return
	}
	x.addRef(RefName, x.t.text(i), "", i)
}

// attribute handles a dotted access: only the outermost part of a chain is
// recorded, with what precedes it as the qualifier.
func (x *pyExtractor) attribute(i int32) {
	t, fd := x.t, x.fd
	attr := t.child(i, fd.attribute)
	obj := t.child(i, fd.object)
	if attr < 0 || obj < 0 || pyLiteral(t.kind(obj)) {
		return // ", ".join(...) refers to no definition
	}
	p := t.parent(i)
	switch {
	case p >= 0 && t.kind(p) == "call" && t.is(i, fd.function):
		x.addRef(RefCall, t.text(attr), t.text(obj), i)
	case p >= 0 && t.kind(p) == "attribute" && t.is(i, fd.object):
	case x.isBinding(i):
	case x.isBase(i):
		x.addRef(RefInherit, t.text(attr), t.text(obj), i)
	default:
		x.addRef(RefName, t.text(attr), t.text(obj), i)
	}
}

// pyLiteral reports the kinds of literal expressions.
func pyLiteral(kind string) bool {
	switch kind {
	case "string", "concatenated_string", "integer", "float", "list", "dictionary", "set", "tuple",
		"list_comprehension", "dictionary_comprehension", "set_comprehension", "true", "false", "none":
		return true
	}
	return false
}

// isBase reports a positional argument of a class's base list, or the
// subscripted name in one (Generic[T]).
func (x *pyExtractor) isBase(i int32) bool {
	t := x.t
	p := t.parent(i)
	if p >= 0 && t.kind(p) == "subscript" && t.is(i, x.fd.value) {
		i, p = p, t.parent(p)
	}
	return p >= 0 && t.kind(p) == "argument_list" && t.nodes[i].field == 0 && t.is(p, x.fd.superclasses)
}

// dropBuiltins removes unqualified references to builtins the module does
// not rebind itself.
func (x *pyExtractor) dropBuiltins() {
	refs := x.f.References[:0]
	for _, r := range x.f.References {
		if r.Qualifier == "" && pyBuiltins[r.Name] && !x.moduleNames[r.Name] {
			continue
		}
		refs = append(refs, r)
	}
	x.f.References = refs
}

// pyBuiltins are the names of Python's builtins module (3.13, plus the
// Python 2 names still found in old code).
var pyBuiltins = func() map[string]bool {
	m := make(map[string]bool)
	for _, n := range strings.Fields(`ArithmeticError AssertionError AttributeError BaseException
		BaseExceptionGroup BlockingIOError BrokenPipeError BufferError BytesWarning ChildProcessError
		ConnectionAbortedError ConnectionError ConnectionRefusedError ConnectionResetError
		DeprecationWarning EOFError Ellipsis EncodingWarning EnvironmentError Exception ExceptionGroup
		False FileExistsError FileNotFoundError FloatingPointError FutureWarning GeneratorExit IOError
		ImportError ImportWarning IndentationError IndexError InterruptedError IsADirectoryError
		KeyError KeyboardInterrupt LookupError MemoryError ModuleNotFoundError NameError None
		NotADirectoryError NotImplemented NotImplementedError OSError OverflowError
		PendingDeprecationWarning PermissionError ProcessLookupError PythonFinalizationError
		RecursionError ReferenceError ResourceWarning RuntimeError RuntimeWarning StopAsyncIteration
		StopIteration SyntaxError SyntaxWarning SystemError SystemExit TabError TimeoutError True
		TypeError UnboundLocalError UnicodeDecodeError UnicodeEncodeError UnicodeError
		UnicodeTranslateError UnicodeWarning UserWarning ValueError Warning ZeroDivisionError
		__build_class__ __debug__ __doc__ __import__ __loader__ __name__ __package__ __spec__
		__file__ __builtins__ __all__ __dict__ __class__ abs aiter all anext any ascii bin bool
		breakpoint bytearray bytes callable chr classmethod compile complex copyright credits delattr
		dict dir divmod enumerate eval exec exit filter float format frozenset getattr globals
		hasattr hash help hex id input int isinstance issubclass iter len license list locals map
		max memoryview min next object oct open ord pow print property quit range repr reversed
		round set setattr slice sorted staticmethod str sum super tuple type vars zip
		basestring unicode long xrange unichr raw_input reduce cmp execfile file reload intern
		apply buffer coerce`) {
		m[n] = true
	}
	return m
}()
