package index

import (
	"testing"

	"github.com/cra-dev/cra/internal/lang"
)

// resolvePythonTree has a flat package, a src layout, a test directory
// that is not a package, Django-style test packages and a namespace
// package.
var resolvePythonTree = map[string]string{
	"setup.py":                             "",
	"app.py":                               "",
	"utils.py":                             "",
	"pkg/__init__.py":                      "",
	"pkg/a.py":                             "",
	"pkg/b/__init__.py":                    "",
	"pkg/b/c.py":                           "",
	"pkg/b/d.pyi":                          "",
	"pkg/e.py":                             "",
	"pkg/e.pyi":                            "",
	"pkg/both.py":                          "",
	"pkg/both/__init__.py":                 "",
	"pkg/stubbed/__init__.pyi":             "",
	"pkg/sub/__init__.py":                  "",
	"pkg/sub/mod.py":                       "",
	"pkg/sub/x.py":                         "",
	"pkg/bad-name/z.py":                    "",
	"src/click/__init__.py":                "",
	"src/click/core.py":                    "",
	"src/click/utils.py":                   "",
	"src/loose.py":                         "",
	"src/utils.py":                         "",
	"tests/test_core.py":                   "",
	"tests/helpers.py":                     "",
	"django_tests/runtests.py":             "",
	"django_tests/admin_views/__init__.py": "",
	"django_tests/admin_views/models.py":   "",
	"django_tests/admin_views/tests.py":    "",
	"ns/plain/mod.py":                      "",
	"web/x.ts":                             "",
}

func TestResolvePythonAbsolute(t *testing.T) {
	r := newResolveFixture(t, resolvePythonTree)
	runResolveCases(t, r, lang.Python, []resolveCase{
		{"module", "app.py", lang.Import{Path: "pkg.b.c"}, []string{"pkg/b/c.py"}},
		{"package gives its __init__ only", "app.py", lang.Import{Path: "pkg.b"}, []string{"pkg/b/__init__.py"}},
		{"stub when no implementation", "app.py", lang.Import{Path: "pkg.b.d"}, []string{"pkg/b/d.pyi"}},
		{"implementation over stub", "app.py", lang.Import{Path: "pkg.e"}, []string{"pkg/e.py"}},
		{"package over module of the same name", "app.py", lang.Import{Path: "pkg.both"}, []string{"pkg/both/__init__.py"}},
		{"stub package", "app.py", lang.Import{Path: "pkg.stubbed"}, []string{"pkg/stubbed/__init__.pyi"}},
		{"stdlib", "app.py", lang.Import{Path: "os.path"}, nil},
		{"third party", "app.py", lang.Import{Path: "requests"}, nil},
		{"not an identifier on disk", "app.py", lang.Import{Path: "pkg.bad-name.z"}, nil},
		{"self", "pkg/__init__.py", lang.Import{Path: "pkg"}, nil},
		{"empty element", "app.py", lang.Import{Path: "pkg..a"}, nil},
		{"trailing dot", "app.py", lang.Import{Path: "pkg.a."}, nil},

		{"src layout from tests", "tests/test_core.py", lang.Import{Path: "click.core"}, []string{"src/click/core.py"}},
		{"src layout inside", "src/click/core.py", lang.Import{Path: "click.utils"}, []string{"src/click/utils.py"}},
		{"src loose module", "app.py", lang.Import{Path: "loose"}, []string{"src/loose.py"}},
		{"enclosing root first", "src/click/core.py", lang.Import{Path: "utils"}, []string{"src/utils.py"}},
		{"repository root first", "app.py", lang.Import{Path: "utils"}, []string{"utils.py"}},
		{"script directory first", "tests/test_core.py", lang.Import{Path: "helpers"}, []string{"tests/helpers.py"}},
		{"parent of top-level package", "django_tests/admin_views/tests.py", lang.Import{Path: "admin_views.models"}, []string{"django_tests/admin_views/models.py"}},
		{"django runtests", "django_tests/runtests.py", lang.Import{Path: "admin_views"}, []string{"django_tests/admin_views/__init__.py"}},
		{"namespace package module", "app.py", lang.Import{Path: "ns.plain.mod"}, []string{"ns/plain/mod.py"}},
		{"namespace package itself", "app.py", lang.Import{Path: "ns.plain"}, nil},

		{"from: submodule", "app.py", lang.Import{Path: "pkg.b", Names: []string{"c"}}, []string{"pkg/b/c.py"}},
		{"from: attribute", "app.py", lang.Import{Path: "pkg.b", Names: []string{"helper"}}, []string{"pkg/b/__init__.py"}},
		{"from: submodule and attribute", "app.py", lang.Import{Path: "pkg.b", Names: []string{"helper", "c"}}, []string{"pkg/b/__init__.py", "pkg/b/c.py"}},
		{"from: submodules only", "app.py", lang.Import{Path: "pkg", Names: []string{"a", "b"}}, []string{"pkg/a.py", "pkg/b/__init__.py"}},
		{"from: star", "app.py", lang.Import{Path: "pkg", Names: []string{"*"}}, []string{"pkg/__init__.py"}},
		{"from: module attribute", "app.py", lang.Import{Path: "pkg.a", Names: []string{"f"}}, []string{"pkg/a.py"}},
		{"from: alias tolerated", "app.py", lang.Import{Path: "pkg", Names: []string{"a as b"}}, []string{"pkg/a.py"}},
		{"from: src layout", "tests/test_core.py", lang.Import{Path: "click", Names: []string{"core", "echo"}}, []string{"src/click/__init__.py", "src/click/core.py"}},
		{"from: namespace package", "app.py", lang.Import{Path: "ns.plain", Names: []string{"mod", "missing"}}, []string{"ns/plain/mod.py"}},
		{"from: missing module", "app.py", lang.Import{Path: "nothere", Names: []string{"x"}}, nil},
	})
}

func TestResolvePythonRelative(t *testing.T) {
	r := newResolveFixture(t, resolvePythonTree)
	runResolveCases(t, r, lang.Python, []resolveCase{
		{"dot: submodule", "pkg/sub/mod.py", lang.Import{Level: 1, Names: []string{"x"}}, []string{"pkg/sub/x.py"}},
		{"dot: attribute", "pkg/sub/mod.py", lang.Import{Level: 1, Names: []string{"y"}}, []string{"pkg/sub/__init__.py"}},
		{"dot: both", "pkg/sub/mod.py", lang.Import{Level: 1, Names: []string{"x", "y"}}, []string{"pkg/sub/__init__.py", "pkg/sub/x.py"}},
		{"dot module", "pkg/sub/mod.py", lang.Import{Level: 1, Path: "x", Names: []string{"thing"}}, []string{"pkg/sub/x.py"}},
		{"dotdot: submodule", "pkg/sub/mod.py", lang.Import{Level: 2, Names: []string{"a"}}, []string{"pkg/a.py"}},
		{"dotdot module: attribute", "pkg/sub/mod.py", lang.Import{Level: 2, Path: "a", Names: []string{"b"}}, []string{"pkg/a.py"}},
		{"dotdot package: attribute", "pkg/sub/mod.py", lang.Import{Level: 2, Path: "b", Names: []string{"thing"}}, []string{"pkg/b/__init__.py"}},
		{"dotdot package: submodule", "pkg/sub/mod.py", lang.Import{Level: 2, Path: "b", Names: []string{"c"}}, []string{"pkg/b/c.py"}},
		{"dotted path", "pkg/sub/mod.py", lang.Import{Level: 2, Path: "b.c", Names: []string{"f"}}, []string{"pkg/b/c.py"}},
		{"in __init__: own package", "pkg/sub/__init__.py", lang.Import{Level: 1, Names: []string{"mod"}}, []string{"pkg/sub/mod.py"}},
		{"in __init__: parent package", "pkg/sub/__init__.py", lang.Import{Level: 2, Names: []string{"a"}}, []string{"pkg/a.py"}},
		{"in __init__: self excluded", "pkg/sub/__init__.py", lang.Import{Level: 1, Names: []string{"helper"}}, nil},
		{"top package", "pkg/__init__.py", lang.Import{Level: 1, Names: []string{"a", "e"}}, []string{"pkg/a.py", "pkg/e.py"}},
		{"too many dots from top package", "pkg/__init__.py", lang.Import{Level: 2, Names: []string{"app"}}, nil},
		{"too many dots to the root", "pkg/sub/mod.py", lang.Import{Level: 3, Names: []string{"app"}}, nil},
		{"far too many dots", "pkg/sub/mod.py", lang.Import{Level: 1 << 30, Names: []string{"x"}}, nil},
		{"negative level", "pkg/sub/mod.py", lang.Import{Level: -1, Path: "x"}, nil},
		{"root-level module", "app.py", lang.Import{Level: 1, Names: []string{"utils"}}, nil},
		{"missing", "pkg/sub/mod.py", lang.Import{Level: 1, Path: "nothere", Names: []string{"x"}}, nil},
		{"path with slash", "pkg/sub/mod.py", lang.Import{Level: 1, Path: "../a"}, nil},
		{"src layout", "src/click/core.py", lang.Import{Level: 1, Names: []string{"utils"}}, []string{"src/click/utils.py"}},
		{"no names", "pkg/sub/mod.py", lang.Import{Level: 1, Path: "x"}, []string{"pkg/sub/x.py"}},
	})
}
