package lang

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestGoSymbols(t *testing.T) {
	src := `package p

func (r *Repo) Early() {}

type Repo struct{ n int }

func (r Repo) Late() int { return r.n }

func (o Other) Elsewhere() {}

type (
	Reader interface {
		Read(p []byte) (int, error)
	}
	Celsius float64
	Alias = string
	List[T any] []T
)

func (l *List[T]) Len() int { return len(*l) }

const Pi = 3.14

var (
	a, b = 1, 2
	c    int
)

func f() {
	const local = 1
	var v int
	type inner int
}
`
	want := []Symbol{
		{Name: "Repo", Kind: KindClass, StartLine: 5, EndLine: 5, Signature: "type Repo struct", Parent: -1},
		{Name: "Early", Kind: KindMethod, StartLine: 3, EndLine: 3, Signature: "func (r *Repo) Early()", Parent: 0},
		{Name: "Late", Kind: KindMethod, StartLine: 7, EndLine: 7, Signature: "func (r Repo) Late() int", Parent: 0},
		{Name: "Elsewhere", Kind: KindMethod, StartLine: 9, EndLine: 9, Signature: "func (o Other) Elsewhere()", Parent: -1},
		{Name: "Reader", Kind: KindInterface, StartLine: 12, EndLine: 14, Signature: "type Reader interface", Parent: -1},
		{Name: "Read", Kind: KindMethod, StartLine: 13, EndLine: 13, Signature: "Read(p []byte) (int, error)", Parent: 4},
		{Name: "Celsius", Kind: KindTypeAlias, StartLine: 15, EndLine: 15, Signature: "type Celsius float64", Parent: -1},
		{Name: "Alias", Kind: KindTypeAlias, StartLine: 16, EndLine: 16, Signature: "type Alias = string", Parent: -1},
		{Name: "List", Kind: KindTypeAlias, StartLine: 17, EndLine: 17, Signature: "type List[T any] []T", Parent: -1},
		{Name: "Len", Kind: KindMethod, StartLine: 20, EndLine: 20, Signature: "func (l *List[T]) Len() int", Parent: 8},
		{Name: "Pi", Kind: KindVariable, StartLine: 22, EndLine: 22, Signature: "const Pi = 3.14", Parent: -1},
		{Name: "a", Kind: KindVariable, StartLine: 25, EndLine: 25, Signature: "var a, b = 1, 2", Parent: -1},
		{Name: "b", Kind: KindVariable, StartLine: 25, EndLine: 25, Signature: "var a, b = 1, 2", Parent: -1},
		{Name: "c", Kind: KindVariable, StartLine: 26, EndLine: 26, Signature: "var c int", Parent: -1},
		{Name: "f", Kind: KindFunction, StartLine: 29, EndLine: 33, Signature: "func f()", Parent: -1},
		{Name: "inner", Kind: KindTypeAlias, StartLine: 32, EndLine: 32, Signature: "type inner int", Parent: 14},
	}
	p := NewParser()
	defer p.Close()
	f := parseOK(t, p, Go, []byte(src))
	if diff := cmp.Diff(want, f.Symbols); diff != "" {
		t.Errorf("symbols (-want +got):\n%s", diff)
	}
}

func TestGoImports(t *testing.T) {
	src := "package p\n\nimport \"fmt\"\n\nimport (\n\tf \"os\"\n\t_ \"embed\"\n\t. \"strings\"\n\t`raw/path`\n)\n"
	want := []Import{
		{Path: "fmt", Line: 3},
		{Path: "os", Line: 6},
		{Path: "embed", Line: 7},
		{Path: "strings", Line: 8},
		{Path: "raw/path", Line: 9},
	}
	p := NewParser()
	defer p.Close()
	f := parseOK(t, p, Go, []byte(src))
	if diff := cmp.Diff(want, f.Imports); diff != "" {
		t.Errorf("imports (-want +got):\n%s", diff)
	}
}

func TestGoPackageName(t *testing.T) {
	tests := map[string]string{
		"fmt":                          "fmt",
		"net/http":                     "http",
		"gopkg.in/yaml.v3":             "yaml",
		"github.com/a/b/v2":            "b",
		"github.com/mattn/go-isatty":   "isatty",
		"github.com/BurntSushi/toml":   "toml",
		"github.com/foo/bar-go":        "bar",
		"github.com/spf13/cobra":       "cobra",
		"github.com/x/multi-word-name": "multiwordname",
	}
	for path, want := range tests {
		if got := goPackageName(path); got != want {
			t.Errorf("goPackageName(%q): got %v, want %v", path, got, want)
		}
	}
}

func TestGoReferences(t *testing.T) {
	src := `package p

import (
	"context"
	str "strings"
)

type S struct {
	Base
	*context.Context
	m map[string]Item
}

type I interface {
	Reader
	~int | ~string
}

func F[T any](ctx context.Context, v T) (*Out, error) {
	x := make([]Item, 0, len(v))
	y := str.ToUpper(str.Title)
	z := S{}.m
	_ = local.Field
	return New(x, y, z), nil
}
`
	want := []string{
		"0 inherit Base",
		"0 inherit Context context",
		"0 name Item",
		"1 inherit Reader",
		"2 name Context context",
		"2 name Out",
		"2 name Item",
		"2 call ToUpper str",
		"2 name Title str",
		"2 name S",
		"2 call New",
	}
	p := NewParser()
	defer p.Close()
	f := parseOK(t, p, Go, []byte(src))
	if diff := cmp.Diff(want, refStrings(f), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("references (-want +got):\n%s", diff)
	}
}

func TestGoDocstrings(t *testing.T) {
	src := `// Copyright 2024 The Authors.

// Package p does things.
package p

// F is documented.
//
//go:noinline
func F() {}

// Not attached: a blank line follows.

func G() {}

var x = 1 // trailing, not a doc of H
func H()  {}

/*
Block doc of K.
*/
func K() {}
`
	p := NewParser()
	defer p.Close()
	f := parseOK(t, p, Go, []byte(src))
	var got []string
	for _, d := range f.Docstrings {
		got = append(got, strconv.Itoa(d.Symbol)+" "+d.Format+" "+d.Content)
	}
	want := []string{"-1 godoc Package p does things.", "0 godoc F is documented.", "4 godoc Block doc of K."}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("docstrings (-want +got):\n%s", diff)
	}
	var comments []string
	for _, c := range f.Comments {
		comments = append(comments, c.Content)
	}
	wantComments := []string{"Copyright 2024 The Authors.", "Not attached: a blank line follows.", "trailing, not a doc of H"}
	if diff := cmp.Diff(wantComments, comments); diff != "" {
		t.Errorf("comments (-want +got):\n%s", diff)
	}
}

// TestGoByteOrderMark: a Go file that starts with a byte order mark keeps
// its package doc comment, and its offsets.
func TestGoByteOrderMark(t *testing.T) {
	p := NewParser()
	defer p.Close()
	src := []byte("\ufeff// Package p does things.\npackage p\n\nfunc F() {}\n")
	f, err := p.Parse(Go, src)
	if err != nil {
		t.Fatal(err)
	}
	pkgDoc := false
	for _, d := range f.Docstrings {
		pkgDoc = pkgDoc || d.Symbol == -1 && strings.Contains(d.Content, "Package p does things.")
	}
	if !pkgDoc {
		t.Errorf("package doc lost after a byte order mark: docstrings %+v", f.Docstrings)
	}
	if len(f.Symbols) != 1 || f.Symbols[0].Name != "F" || f.Symbols[0].StartLine != 4 {
		t.Errorf("symbols: %+v", f.Symbols)
	}
}
