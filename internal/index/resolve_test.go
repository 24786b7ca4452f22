package index

import (
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/lang"
)

// resolveCase is one import to resolve and the files it should give.
type resolveCase struct {
	name string
	from string
	imp  lang.Import
	want []string
}

// newResolveFixture builds a resolver over a tree given as path → content;
// read serves the contents and fails for anything else.
func newResolveFixture(t testing.TB, tree map[string]string) *Resolver {
	t.Helper()
	paths := slices.Sorted(maps.Keys(tree))
	return NewResolver(paths, func(p string) ([]byte, error) {
		c, ok := tree[p]
		if !ok {
			return nil, fmt.Errorf("open %s: %w", p, fs.ErrNotExist)
		}
		return []byte(c), nil
	})
}

// runResolveCases resolves every case with language l.
func runResolveCases(t *testing.T, r *Resolver, l lang.Language, cases []resolveCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := r.Resolve(tc.from, l, tc.imp)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Resolve(%q, %q) mismatch (-want +got):\n%s", tc.from, tc.imp.Path, diff)
			}
		})
	}
}

func TestResolveOddInputs(t *testing.T) {
	r := newResolveFixture(t, map[string]string{
		"a.py":     "",
		"b/c.py":   "",
		"x.ts":     "",
		"go.mod":   "module example.com/m\n",
		"p/p.go":   "",
		"./dot.py": "",
		"d//e.py":  "",
		"/abs.py":  "",
		"../up.py": "",
		"":         "",
	})
	tests := []struct {
		name string
		from string
		l    lang.Language
		imp  lang.Import
	}{
		{"empty from", "", lang.Python, lang.Import{Path: "a"}},
		{"absolute from", "/a.py", lang.Python, lang.Import{Path: "a"}},
		{"from with double slash", "b//c.py", lang.Python, lang.Import{Path: "a"}},
		{"from beyond root", "../a.py", lang.Python, lang.Import{Path: "a"}},
		{"unknown language", "b/c.py", lang.Language("cobol"), lang.Import{Path: "a"}},
		{"unclean file not listed", "b/c.py", lang.Python, lang.Import{Path: "dot"}},
		{"python empty", "b/c.py", lang.Python, lang.Import{}},
		{"python slash path", "b/c.py", lang.Python, lang.Import{Path: "../a"}},
		{"python windows path", "b/c.py", lang.Python, lang.Import{Path: `..\a`}},
		{"ts absolute", "b/c.ts", lang.TypeScript, lang.Import{Path: "/x"}},
		{"ts beyond root", "b/c.ts", lang.TypeScript, lang.Import{Path: "../../x"}},
		{"ts double slash beyond root", "b/c.ts", lang.TypeScript, lang.Import{Path: "..//..//x"}},
		{"ts windows", "b/c.ts", lang.TypeScript, lang.Import{Path: `..\x`}},
		{"go double slash", "p/p.go", lang.Go, lang.Import{Path: "example.com/m//p"}},
		{"go dotdot", "p/p.go", lang.Go, lang.Import{Path: "example.com/m/p/.."}},
		{"go absolute", "p/p.go", lang.Go, lang.Import{Path: "/example.com/m/p"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.Resolve(tc.from, tc.l, tc.imp); got != nil {
				t.Errorf("got %v, want nil", got)
			}
		})
	}
	if !r.isFile("a.py") || r.isFile("./dot.py") || r.isFile("d//e.py") || r.isFile("/abs.py") || r.isFile("../up.py") || r.isFile("") {
		t.Errorf("unclean paths must be ignored, files = %v", slices.Sorted(maps.Keys(r.files)))
	}
}

func TestResolveNilRead(t *testing.T) {
	r := NewResolver([]string{"go.mod", "a/a.go", "tsconfig.json", "x.ts"}, nil)
	if got := r.Resolve("x.ts", lang.TypeScript, lang.Import{Path: "a/a"}); got != nil {
		t.Errorf("got %v, want nil", got)
	}
	if got := len(r.Warnings()); got != 2 {
		t.Errorf("got %d warnings, want 2 (go.mod and tsconfig.json unreadable): %v", got, r.Warnings())
	}
}

func TestResolveWarnings(t *testing.T) {
	r := newResolveFixture(t, map[string]string{
		"go.mod":              "// no module line\n",
		"web/tsconfig.json":   `{"compilerOptions": {"baseUrl": 3}}`,
		"cyc/tsconfig.json":   `{"extends": "./a.json"}`,
		"cyc/a.json":          `{"extends": "./tsconfig.json"}`,
		"miss/tsconfig.json":  `{"extends": "./nope"}`,
		"pkg/package.json":    `{"name": }`,
		"ok/package.json":     `{"name": "ok", /* fine */}`,
		"ok/tsconfig.json":    `{"compilerOptions": {"baseUrl": ".", }, // ok` + "\n}",
		"bad/tsconfig.json":   `{"compilerOptions": {"baseUrl": "../.."}}`,
		"nested/x/y/index.ts": "",
	})
	var got []string
	for _, err := range r.Warnings() {
		got = append(got, err.Error())
	}
	for _, want := range []string{
		"parse go.mod go.mod: no module directive",
		"parse tsconfig web/tsconfig.json",
		"tsconfig cyc/tsconfig.json: extends chain is cyclic",
		"read tsconfig miss/nope.json",
		"parse package.json pkg/package.json",
		`tsconfig bad/tsconfig.json: baseUrl "../.." is outside the repository`,
	} {
		if !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("no warning containing %q in %q", want, got)
		}
	}
	if len(got) != 6 {
		t.Errorf("got %d warnings, want 6: %q", len(got), got)
	}
}

func TestResolveConcurrent(t *testing.T) {
	tree := map[string]string{}
	for _, m := range []map[string]string{resolvePythonTree, resolveTSTree, resolveGoTree} {
		maps.Copy(tree, m)
	}
	r := newResolveFixture(t, tree)
	imports := []struct {
		from string
		l    lang.Language
		imp  lang.Import
	}{
		{"app.py", lang.Python, lang.Import{Path: "pkg", Names: []string{"a", "x"}}},
		{"pkg/sub/mod.py", lang.Python, lang.Import{Level: 2, Path: "b", Names: []string{"c"}}},
		{"web/src/app.ts", lang.TypeScript, lang.Import{Path: "@acme/ui/button"}},
		{"web/src/app.ts", lang.TypeScript, lang.Import{Path: "@/api"}},
		{"main.go", lang.Go, lang.Import{Path: "example.com/root/internal/a"}},
	}
	want := make([][]string, len(imports))
	for i, im := range imports {
		want[i] = r.Resolve(im.from, im.l, im.imp)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				for i, im := range imports {
					if got := r.Resolve(im.from, im.l, im.imp); !slices.Equal(got, want[i]) {
						t.Errorf("got %v, want %v", got, want[i])
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

func TestResolveTSExtendsChain(t *testing.T) {
	tree := map[string]string{
		"app/tsconfig.json":  `{"extends": ["../one.json", "../two.json"]}`,
		"one.json":           `{"compilerOptions": {"baseUrl": "one", "paths": {"p/*": ["one/*"]}}}`,
		"two.json":           `{"compilerOptions": {"baseUrl": "two"}}`,
		"one/x.ts":           "",
		"two/x.ts":           "",
		"two/one/y.ts":       "",
		"app/main.ts":        "",
		"deep/tsconfig.json": `{"extends": "../c1.json"}`,
		"deep/main.ts":       "",
		"deep/z.ts":          "",
	}
	for i := 1; i <= 12; i++ {
		tree[fmt.Sprintf("c%d.json", i)] = fmt.Sprintf(`{"extends": "./c%d"}`, i+1)
	}
	tree["c3.json"] = `{"extends": "./c4", "compilerOptions": {"baseUrl": "deep"}}`
	r := newResolveFixture(t, tree)
	runResolveCases(t, r, lang.TypeScript, []resolveCase{
		{"later extends wins", "app/main.ts", lang.Import{Path: "x"}, []string{"two/x.ts"}},
		{"paths from the first, relative to the winning baseUrl", "app/main.ts", lang.Import{Path: "p/y"}, []string{"two/one/y.ts"}},
		{"deep chain keeps what is within the bound", "deep/main.ts", lang.Import{Path: "z"}, []string{"deep/z.ts"}},
	})
	if len(r.Warnings()) != 1 || !strings.Contains(r.Warnings()[0].Error(), "deeper than") {
		t.Errorf("got warnings %v, want one about the chain depth", r.Warnings())
	}
}

// FuzzResolve checks that no import, however malformed, panics, and that
// results are always sorted files of the repository other than the
// importing file.
func FuzzResolve(f *testing.F) {
	tree := map[string]string{}
	for _, m := range []map[string]string{resolvePythonTree, resolveTSTree, resolveGoTree} {
		maps.Copy(tree, m)
	}
	r := newResolveFixture(f, tree)
	froms := slices.Sorted(maps.Keys(tree))

	f.Add("pkg.b", 0, "c,d", uint8(0), uint16(0), "")
	f.Add("", 3, "x", uint8(0), uint16(5), "")
	f.Add("../../x", 1, "", uint8(1), uint16(9), "")
	f.Add("@shared/*", 0, "", uint8(2), uint16(40), "")
	f.Add("example.com/root/internal/a", 0, "", uint8(4), uint16(3), "")
	f.Add("./x.js?raw", 0, "", uint8(3), uint16(0), "web/src/app.ts")
	f.Add(".", 0, "", uint8(1), uint16(0), "pkg//a.py")
	f.Add("a..b", -4, "*,", uint8(0), uint16(7), "")
	f.Fuzz(func(t *testing.T, p string, level int, names string, li uint8, fi uint16, rawFrom string) {
		from := rawFrom
		if from == "" {
			from = froms[int(fi)%len(froms)]
		}
		l := append(slices.Clone(lang.Languages), "")[int(li)%(len(lang.Languages)+1)]
		imp := lang.Import{Path: p, Level: level}
		if names != "" {
			imp.Names = strings.Split(names, ",")
		}
		got := r.Resolve(from, l, imp)
		if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Errorf("not sorted and unique: %q", got)
		}
		for _, g := range got {
			if !r.isFile(g) {
				t.Errorf("%q is not a file of the repository", g)
			}
			if g == from {
				t.Errorf("result contains the importing file %q", from)
			}
		}
	})
}

// BenchmarkResolve resolves 20,000 imports over a synthetic tree of 3,000
// files (Python packages, a TypeScript app with tsconfig paths, Go
// packages): the size of Django's import graph. One op is all 20,000.
func BenchmarkResolve(b *testing.B) {
	tree, imports := resolveBenchTree()
	r := newResolveFixture(b, tree)
	b.ReportAllocs()
	resolved := 0
	for b.Loop() {
		resolved = 0
		for _, im := range imports {
			if len(r.Resolve(im.from, im.l, im.imp)) > 0 {
				resolved++
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(imports)), "ns/import")
	b.ReportMetric(float64(resolved)/float64(len(imports)), "resolved/import")
}

// BenchmarkNewResolver measures building the resolver over the same tree.
func BenchmarkNewResolver(b *testing.B) {
	tree, _ := resolveBenchTree()
	paths := slices.Sorted(maps.Keys(tree))
	read := func(p string) ([]byte, error) { return []byte(tree[p]), nil }
	b.ReportAllocs()
	for b.Loop() {
		NewResolver(paths, read)
	}
}

// resolveBenchImport is one import of the benchmark.
type resolveBenchImport struct {
	from string
	l    lang.Language
	imp  lang.Import
}

// resolveBenchTree builds a 3,000-file tree and 20,000 imports over it,
// about four in five of which resolve; the rest name third-party modules.
func resolveBenchTree() (map[string]string, []resolveBenchImport) {
	rng := rand.New(rand.NewPCG(1, 2))
	tree := map[string]string{
		"go.mod":            "module example.com/bench\n",
		"web/tsconfig.json": `{"compilerOptions": {"baseUrl": ".", "paths": {"@/*": ["src/*"]}}}`,
		"web/package.json":  `{"name": "web"}`,
		"py/setup.py":       "",
	}
	var pyMods, tsFiles, goPkgs []string
	for i := range 40 {
		pkg := fmt.Sprintf("py/src/app/p%d", i)
		tree[pkg+"/__init__.py"] = ""
		for j := range 36 {
			tree[fmt.Sprintf("%s/m%d.py", pkg, j)] = ""
			pyMods = append(pyMods, fmt.Sprintf("app.p%d.m%d", i, j))
		}
	}
	tree["py/src/app/__init__.py"] = ""
	for i := range 30 {
		for j := range 50 {
			f := fmt.Sprintf("web/src/f%d/c%d.ts", i, j)
			tree[f] = ""
			tsFiles = append(tsFiles, f)
		}
		tree[fmt.Sprintf("web/src/f%d/index.ts", i)] = ""
	}
	for i := range 50 {
		for j := range 2 {
			tree[fmt.Sprintf("go/p%d/f%d.go", i, j)] = ""
			tree[fmt.Sprintf("go/p%d/f%d_test.go", i, j)] = ""
		}
		goPkgs = append(goPkgs, fmt.Sprintf("go/p%d", i))
	}
	for len(tree) < 3000 {
		tree[fmt.Sprintf("docs/page%d.md", len(tree))] = ""
	}

	var imports []resolveBenchImport
	for len(imports) < 20000 {
		switch k := rng.IntN(10); {
		case k < 5: // Python: absolute, from-import and relative
			m := pyMods[rng.IntN(len(pyMods))]
			from := "py/src/" + strings.ReplaceAll(pyMods[rng.IntN(len(pyMods))], ".", "/") + ".py"
			imp := lang.Import{Path: m}
			switch rng.IntN(4) {
			case 0:
				pkg, name, _ := strings.Cut(m[strings.Index(m, ".")+1:], ".")
				imp = lang.Import{Path: "app." + pkg, Names: []string{name, "helper"}}
			case 1:
				imp = lang.Import{Level: 1, Names: []string{"m3", "thing"}}
			case 2:
				imp = lang.Import{Path: []string{"os.path", "django.db", "numpy"}[rng.IntN(3)]}
			}
			imports = append(imports, resolveBenchImport{from, lang.Python, imp})
		case k < 8: // TypeScript: relative, paths, baseUrl, bare
			from := tsFiles[rng.IntN(len(tsFiles))]
			to := strings.TrimSuffix(strings.TrimPrefix(tsFiles[rng.IntN(len(tsFiles))], "web/src/"), ".ts")
			spec := []string{"../" + to, "@/" + to, "src/" + to, "react", "./c1.js", "../" + strings.Split(to, "/")[0]}[rng.IntN(6)]
			imports = append(imports, resolveBenchImport{from, lang.TypeScript, lang.Import{Path: spec}})
		default: // Go
			from := goPkgs[rng.IntN(len(goPkgs))] + "/f0.go"
			ip := "example.com/bench/" + goPkgs[rng.IntN(len(goPkgs))]
			if rng.IntN(4) == 0 {
				ip = "fmt"
			}
			imports = append(imports, resolveBenchImport{from, lang.Go, lang.Import{Path: ip}})
		}
	}
	return tree, imports
}
