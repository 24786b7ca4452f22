package lang

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// goldenFixtures maps each fixture under testdata to its language. Go
// fixtures end in .go.txt so that gofmt and the go tool leave them alone.
var goldenFixtures = []struct {
	file string
	lang Language
}{
	{"python.py", Python},
	{"python_errors.py", Python},
	{"typescript.ts", TypeScript},
	{"component.tsx", TSX},
	{"javascript.js", JavaScript},
	{"golang.go.txt", Go},
	{"golang_errors.go.txt", Go},
}

// TestGolden parses each fixture and compares a readable dump of the File
// with testdata/<fixture>.golden; run with -update to rewrite them.
func TestGolden(t *testing.T) {
	p := NewParser()
	defer p.Close()
	for _, fx := range goldenFixtures {
		t.Run(fx.file, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata", fx.file))
			if err != nil {
				t.Fatal(err)
			}
			f, err := p.Parse(fx.lang, src)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			checkInvariants(t, f, src)
			got := dumpFile(f)
			golden := filepath.Join("testdata", fx.file+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("%s mismatch (-want +got):\n%s", golden, diff)
			}
		})
	}
}

// dumpFile renders a File one fact a line.
func dumpFile(f *File) string {
	var b strings.Builder
	fmt.Fprintf(&b, "language: %s\nsyntax_errors: %d\n", f.Language, f.SyntaxErrors)
	b.WriteString("\nsymbols:\n")
	for i, s := range f.Symbols {
		fmt.Fprintf(&b, "  %d %s %s [%d-%d] parent=%d sig=%q\n", i, s.Kind, s.Name, s.StartLine, s.EndLine, s.Parent, s.Signature)
	}
	b.WriteString("\ndocstrings:\n")
	for _, d := range f.Docstrings {
		fmt.Fprintf(&b, "  symbol=%d format=%s fields=%s\n", d.Symbol, d.Format, d.ParsedFields)
		for _, l := range strings.Split(d.Content, "\n") {
			fmt.Fprintf(&b, "    | %s\n", l)
		}
	}
	b.WriteString("\ncomments:\n")
	for _, c := range f.Comments {
		fmt.Fprintf(&b, "  L%d symbol=%d %s rationale=%t %q\n", c.Line, c.Symbol, c.Kind, c.IsRationale, c.Content)
	}
	b.WriteString("\nimports:\n")
	for _, im := range f.Imports {
		fmt.Fprintf(&b, "  L%d %q level=%d names=%q type_only=%t\n", im.Line, im.Path, im.Level, im.Names, im.TypeOnly)
	}
	b.WriteString("\nreferences:\n")
	for _, r := range f.References {
		fmt.Fprintf(&b, "  L%d caller=%d %s %s", r.Line, r.Caller, r.Kind, r.Name)
		if r.Qualifier != "" {
			fmt.Fprintf(&b, " qualifier=%q", r.Qualifier)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
