package index

import (
	"testing"

	"github.com/cra-dev/cra/internal/lang"
	"github.com/google/go-cmp/cmp"
)

// resolveGoTree has a root module, a nested module under its path, a
// replaced module whose go.mod names another path, a second module with
// the root's path (as copied examples have) and a quoted module path.
var resolveGoTree = map[string]string{
	"go.mod": `// The root module.
module example.com/root // trailing comment

go 1.26

require (
	example.com/lib v1.0.0
	example.com/outside v1.0.0
)

replace example.com/lib v1.0.0 => ./third_party/lib

replace (
	example.com/outside => ../outside // beyond the repository
	example.com/remote => example.com/fork v1.2.3
)
`,
	"main.go":                       "",
	"internal/a/a.go":               "",
	"internal/a/b.go":               "",
	"internal/a/a_test.go":          "",
	"internal/a/sub/c.go":           "",
	"internal/doc.md":               "",
	"testonly/x_test.go":            "",
	"tools/go.mod":                  "module example.com/root/tools\n",
	"tools/gen/gen.go":              "",
	"tools/main.go":                 "",
	"third_party/lib/go.mod":        "module github.com/upstream/lib\n",
	"third_party/lib/lib.go":        "",
	"third_party/lib/x/x.go":        "",
	"examples/go.mod":               "module example.com/root\n",
	"examples/main.go":              "",
	"examples/internal/a/a.go":      "",
	"quoted/go.mod":                 "module \"example.com/quoted\"\n",
	"quoted/q.go":                   "",
	"quoted/vendor/modules.txt":     "",
	"noreplace/go.mod":              "module example.com/noreplace\nreplace example.com/shared => ../shared\n",
	"noreplace/n.go":                "",
	"shared/s.go":                   "",
	"shared/deeper/go.mod":          "module example.com/deeper\n",
	"shared/deeper/d.go":            "",
	"web/x.ts":                      "",
	"internal/a/testdata/t/t.go":    "",
	"internal/a/testdata/t/t.go.md": "",
}

func TestResolveGo(t *testing.T) {
	r := newResolveFixture(t, resolveGoTree)
	runResolveCases(t, r, lang.Go, []resolveCase{
		{"package: non-test files", "main.go", lang.Import{Path: "example.com/root/internal/a"}, []string{"internal/a/a.go", "internal/a/b.go"}},
		{"not subdirectories", "main.go", lang.Import{Path: "example.com/root/internal/a/sub"}, []string{"internal/a/sub/c.go"}},
		{"module root", "internal/a/a.go", lang.Import{Path: "example.com/root"}, []string{"main.go"}},
		{"own package excluded", "main.go", lang.Import{Path: "example.com/root"}, nil},
		{"external test package", "internal/a/a_test.go", lang.Import{Path: "example.com/root/internal/a"}, []string{"internal/a/a.go", "internal/a/b.go"}},
		{"no go files", "main.go", lang.Import{Path: "example.com/root/internal"}, nil},
		{"test files only", "main.go", lang.Import{Path: "example.com/root/testonly"}, nil},
		{"missing package", "main.go", lang.Import{Path: "example.com/root/nope"}, nil},
		{"nested module", "main.go", lang.Import{Path: "example.com/root/tools/gen"}, []string{"tools/gen/gen.go"}},
		{"nested module root", "main.go", lang.Import{Path: "example.com/root/tools"}, []string{"tools/main.go"}},
		{"importer's module wins", "examples/main.go", lang.Import{Path: "example.com/root/internal/a"}, []string{"examples/internal/a/a.go"}},
		{"importer's module wins for the root", "internal/a/a.go", lang.Import{Path: "example.com/root/internal/a/sub"}, []string{"internal/a/sub/c.go"}},
		{"falls through to the module that has it", "examples/main.go", lang.Import{Path: "example.com/root/internal/a/sub"}, []string{"internal/a/sub/c.go"}},
		{"replace to a local directory", "main.go", lang.Import{Path: "example.com/lib"}, []string{"third_party/lib/lib.go"}},
		{"replace subpackage", "main.go", lang.Import{Path: "example.com/lib/x"}, []string{"third_party/lib/x/x.go"}},
		{"replaced module by its own path", "main.go", lang.Import{Path: "github.com/upstream/lib/x"}, []string{"third_party/lib/x/x.go"}},
		{"replace outside the repository", "main.go", lang.Import{Path: "example.com/outside"}, nil},
		{"replace by a module path", "main.go", lang.Import{Path: "example.com/remote"}, nil},
		{"replace to a directory without go.mod", "noreplace/n.go", lang.Import{Path: "example.com/shared"}, []string{"shared/s.go"}},
		{"replace target's nested module excluded", "noreplace/n.go", lang.Import{Path: "example.com/shared/deeper"}, nil},
		{"quoted module path", "main.go", lang.Import{Path: "example.com/quoted"}, []string{"quoted/q.go"}},
		{"testdata is a directory like any other", "main.go", lang.Import{Path: "example.com/root/internal/a/testdata/t"}, []string{"internal/a/testdata/t/t.go"}},
		{"stdlib", "main.go", lang.Import{Path: "fmt"}, nil},
		{"third party", "main.go", lang.Import{Path: "github.com/google/go-cmp/cmp"}, nil},
		{"prefix is not a path element", "main.go", lang.Import{Path: "example.com/rootx/internal/a"}, nil},
		{"empty", "main.go", lang.Import{Path: ""}, nil},
		{"trailing slash", "main.go", lang.Import{Path: "example.com/root/internal/a/"}, nil},
		{"dot element", "main.go", lang.Import{Path: "example.com/root/./internal/a"}, nil},
		{"relative import", "main.go", lang.Import{Path: "./internal/a"}, nil},
		{"backslash", "main.go", lang.Import{Path: `example.com\root`}, nil},
	})
}

func TestResolveGoModParse(t *testing.T) {
	tests := []struct {
		name         string
		src          string
		wantModule   string
		wantReplaces map[string]string
	}{
		{"plain", "module a.com/m\n", "a.com/m", map[string]string{}},
		{"comment and quotes", "// c\nmodule `a.com/q` // x\n", "a.com/q", map[string]string{}},
		{"no space before comment", "module a.com/m//x\n", "a.com/m", map[string]string{}},
		{"missing", "go 1.26\n", "", map[string]string{}},
		{"module block", "module (\n\ta.com/b\n)\n", "a.com/b", map[string]string{}},
		{"replaces", "module m\nreplace a => ./a\nreplace b v1 => ../b v2\nreplace (\n c => .\n d => e v1\n\"f\" => \"./f\"\n)\nreplace => ./x\nreplace g =>\n", "m",
			map[string]string{"a": "./a", "b": "../b", "c": ".", "f": "./f"}},
		{"crlf", "module a.com/m\r\nreplace a => ./a\r\n", "a.com/m", map[string]string{"a": "./a"}},
		{"unterminated quote", "module \"a.com/m\n", "a.com/m", map[string]string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mod, reps := gomodParse([]byte(tc.src))
			if mod != tc.wantModule {
				t.Errorf("module: got %q, want %q", mod, tc.wantModule)
			}
			if diff := cmp.Diff(tc.wantReplaces, reps); diff != "" {
				t.Errorf("replaces mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
