// Package internal_test keeps the package map of DESIGN.md true: data flows
// one way (cli and server on top), each database's SQL has one owner, and
// the command line stays thin.
package internal_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/cra-dev/cra/internal/"

// source is one non-test Go file under internal/.
type source struct {
	pkg     string // the package's path under internal/, e.g. "cli" or "llm/llmtest"
	path    string
	text    string
	imports []string
}

func sources(t *testing.T) []source {
	t.Helper()
	var out []source
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, body, parser.ImportsOnly)
		if err != nil {
			return err
		}
		s := source{pkg: filepath.ToSlash(filepath.Dir(path)), path: path, text: string(body)}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			s.imports = append(s.imports, p)
		}
		out = append(out, s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 50 {
		t.Fatalf("found %d source files under internal/: is the test running in its directory?", len(out))
	}
	return out
}

func top(pkg string) string { return strings.Split(pkg, "/")[0] }

// TestDataFlowsOneWay: no package imports the command line or the HTTP
// server; they sit on top (DESIGN.md, "Packages").
func TestDataFlowsOneWay(t *testing.T) {
	for _, s := range sources(t) {
		for _, imp := range s.imports {
			for _, upper := range []string{"cli", "server"} {
				if imp == module+upper && top(s.pkg) != "cli" && top(s.pkg) != "server" {
					t.Errorf("%s imports internal/%s: only cli and server may sit on top", s.path, upper)
				}
			}
		}
	}
}

// TestCommandLineHoldsNoSQL: internal/cli parses flags, calls the domain
// packages and renders; it opens no database and runs no SQL, and neither
// does internal/retrieve, which reads the index through kb and records
// through corpus.
func TestCommandLineHoldsNoSQL(t *testing.T) {
	sqlCall := regexp.MustCompile(`\b(QueryContext|ExecContext|QueryRowContext|PrepareContext)\(|\.(Query|Exec)\(`)
	for _, s := range sources(t) {
		pkg := top(s.pkg)
		if pkg != "cli" && pkg != "retrieve" {
			continue
		}
		for _, imp := range s.imports {
			if imp == "database/sql" || (pkg == "cli" && imp == module+"store") {
				t.Errorf("%s imports %s", s.path, imp)
			}
		}
		for i, line := range strings.Split(s.text, "\n") {
			if sqlCall.MatchString(line) {
				t.Errorf("%s:%d runs SQL: %s", s.path, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// TestCommandFilesStaySmall: one file per command keeps each under 500
// lines; a longer one holds logic that belongs in a domain package.
func TestCommandFilesStaySmall(t *testing.T) {
	for _, s := range sources(t) {
		if top(s.pkg) != "cli" {
			continue
		}
		if n := strings.Count(s.text, "\n"); n > 500 {
			t.Errorf("%s has %d lines, want at most 500: move its logic to a domain package", s.path, n)
		}
	}
}
