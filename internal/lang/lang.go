// Package lang turns the source text of one file into the facts the indexer
// stores: symbols, docstrings, comments, imports and references. It knows
// Python, TypeScript, TSX, JavaScript and Go (seed 001 §2 Phase 1; Go is
// beyond the seed because cra is itself written in Go).
//
// Parsing is tree-sitter based and never fails on a syntax error: tree-sitter
// recovers, the file keeps what parsed and File.SyntaxErrors counts the
// damaged regions so the indexer can report a warning (seed 001 §15).
package lang

import (
	"path/filepath"
	"strings"
)

// Language names a supported source language as stored in files.language.
type Language string

// The supported languages.
const (
	Python     Language = "python"
	TypeScript Language = "typescript"
	TSX        Language = "tsx"
	JavaScript Language = "javascript"
	Go         Language = "go"
)

// Languages lists every supported language in a stable order.
var Languages = []Language{Python, TypeScript, TSX, JavaScript, Go}

// Parsed reports whether files.language names a language cra parses
// (rather than a text file kept for search).
func Parsed(language string) bool {
	for _, l := range Languages {
		if string(l) == language {
			return true
		}
	}
	return false
}

// Detect returns the language of a file from its name, and false when the
// file is not source cra parses.
func Detect(path string) (Language, bool) {
	name := strings.ToLower(filepath.Base(path))
	switch {
	case strings.HasSuffix(name, ".d.ts"), strings.HasSuffix(name, ".d.mts"), strings.HasSuffix(name, ".d.cts"):
		return TypeScript, true
	}
	switch filepath.Ext(name) {
	case ".py", ".pyi":
		return Python, true
	case ".ts", ".mts", ".cts":
		return TypeScript, true
	case ".tsx":
		return TSX, true
	case ".js", ".jsx", ".mjs", ".cjs":
		return JavaScript, true
	case ".go":
		return Go, true
	}
	return "", false
}

// Symbol kinds, exactly the vocabulary of seed 001 §4.5.
const (
	KindFunction  = "function"
	KindClass     = "class"
	KindMethod    = "method"
	KindInterface = "interface"
	KindTypeAlias = "type_alias"
	KindEnum      = "enum"
	KindVariable  = "variable"
)

// Symbol is one definition. Lines are 1-based and inclusive.
type Symbol struct {
	Name      string
	Kind      string
	StartLine int
	EndLine   int
	// Signature is the source text of the definition's first line(s), up to
	// the body: "def f(a, b):", "func (s *S) Run(ctx context.Context) error".
	Signature string
	// Parent is the index in File.Symbols of the enclosing symbol, or -1.
	Parent int
}

// Docstring formats (seed 001 §4.5), plus godoc for Go doc comments.
const (
	DocGoogle = "google"
	DocNumpy  = "numpy"
	DocSphinx = "sphinx"
	DocJSDoc  = "jsdoc"
	DocGo     = "godoc"
	DocPlain  = "plain"
)

// Docstring is the documentation attached to a symbol or to the module.
type Docstring struct {
	// Symbol is the index in File.Symbols it documents, or -1 for the module.
	Symbol  int
	Content string
	Format  string
	// ParsedFields is a JSON object of the structured fields found in the
	// docstring (summary, params, returns, raises, ...), "{}" when none.
	ParsedFields string
}

// Comment kinds (seed 001 §4.5).
const (
	CommentTodo      = "todo"
	CommentFixme     = "fixme"
	CommentHack      = "hack"
	CommentNote      = "note"
	CommentBugRef    = "bug_ref"
	CommentRationale = "rationale"
	CommentGeneral   = "general"
)

// Comment is one inline comment (a line comment or a block comment that is
// not a docstring).
type Comment struct {
	Line int
	// Symbol is the index in File.Symbols of the innermost enclosing symbol,
	// or -1 at module level.
	Symbol      int
	Content     string
	Kind        string
	IsRationale bool
}

// Import is one import statement target as written in the source. The
// indexer resolves it to files of the repository.
type Import struct {
	// Path is the module as written: "os.path", "pkg.mod" (Python, without
	// leading dots), "./util", "@/lib/x" (TS/JS), "github.com/a/b" (Go).
	Path string
	// Level is the number of leading dots of a Python relative import
	// ("from ..a import b" has Level 2 and Path "a"); 0 elsewhere.
	Level int
	// Names are the imported names of a Python "from X import a, b" (so the
	// resolver can try X.a as a submodule) and of TS/JS named imports.
	Names []string
	// TypeOnly marks a TypeScript "import type" / "export type ... from";
	// its dependency edge has kind "type_ref" instead of "import".
	TypeOnly bool
	Line     int
}

// Reference kinds.
const (
	RefCall    = "call"    // f(), obj.m()
	RefInherit = "inherit" // class C(Base)
	RefName    = "name"    // any other use of an identifier
)

// Reference is a use of a name. For Python it is scoped to the innermost
// enclosing symbol (Caller) so the indexer can build symbol_references; for
// TS/JS/Go it feeds the identifier signals the retrieval stages rank with.
type Reference struct {
	// Caller is the index in File.Symbols of the innermost enclosing symbol,
	// or -1 at module level.
	Caller int
	// Name is the referenced name, the last part of a dotted access
	// ("self.save" → "save", "os.path.join" → "join").
	Name string
	// Qualifier is what stood before the last dot, if anything ("self",
	// "os.path"); the resolver uses it to raise or lower confidence.
	Qualifier string
	Kind      string
	Line      int
}

// File is everything extracted from one source file.
type File struct {
	Language   Language
	Symbols    []Symbol
	Docstrings []Docstring
	Comments   []Comment
	Imports    []Import
	References []Reference
	// SyntaxErrors counts ERROR and MISSING nodes: the file parsed only in
	// part. Zero for a clean parse.
	SyntaxErrors int
}

// DeclarationOnly reports whether a file whose definitions have these
// kinds (a count per kind, as DeclarationKinds counts them) only declares
// types: an interface, a type alias, an enum or a class, and no function
// or method anywhere (constants may sit beside them). A TypeScript types
// file, a Go file of structs and interfaces, a Python module of exception
// classes: the ranking can learn to put such a file after the code that
// uses its types (retrieve.Weights.DeclDemotion).
func DeclarationOnly(kinds map[string]int) bool {
	if kinds[KindFunction] > 0 || kinds[KindMethod] > 0 {
		return false
	}
	return kinds[KindInterface]+kinds[KindTypeAlias]+kinds[KindEnum]+kinds[KindClass] > 0
}

// DeclarationKinds counts a file's definitions by kind for
// DeclarationOnly: every definition but an interface's methods (Go's
// method specs), which declare and have no body. The index's reading of
// the same (kb.KnowledgeBase.DeclarationKinds) leaves out the same.
func DeclarationKinds(f *File) map[string]int {
	kinds := map[string]int{}
	for _, s := range f.Symbols {
		if s.Kind == KindMethod && s.Parent >= 0 && f.Symbols[s.Parent].Kind == KindInterface {
			continue
		}
		kinds[s.Kind]++
	}
	return kinds
}
