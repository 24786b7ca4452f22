package evidence

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCommandFiles(t *testing.T) {
	base := map[string]bool{"check.sh": true, "scripts/test.sh": true, "Makefile": true, "sub/Makefile": true, "sub/run.sh": true,
		"tox.ini": true, "ci/lint.sh": true, "input.txt": true, "go.mod": true}
	for _, tc := range []struct {
		command, prefix string
		want            []string
	}{
		{command: "sh check.sh", want: []string{"check.sh"}},
		{command: "./scripts/test.sh -v && go vet ./...", want: []string{"scripts/test.sh"}},
		{command: "make test", want: []string{"Makefile"}},
		{command: "cd sub && make && ./run.sh", want: []string{"sub/Makefile", "sub/run.sh"}},
		{command: "make -C sub", prefix: "sub", want: []string{"sub/Makefile"}},
		{command: "./run.sh", prefix: "sub", want: []string{"sub/run.sh"}},
		{command: "tox --conf=tox.ini", want: []string{"tox.ini"}},
		{command: `bash -c "sh ci/lint.sh"`, want: []string{"ci/lint.sh"}},
		{command: "sh < check.sh", want: []string{"check.sh"}},
		{command: "go test ./... > input.txt", want: nil}, // an output, not an input
		{command: "sh ../check.sh /etc/passwd $X", want: nil},
		{command: "go test ./...", want: nil},
		{command: "sh 'check.sh", want: nil}, // unreadable
	} {
		got := commandFiles(tc.command, tc.prefix, base)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("commandFiles(%q, %q) (-want +got):\n%s", tc.command, tc.prefix, diff)
		}
	}
}

func TestIsProtectedTest(t *testing.T) {
	for p, want := range map[string]bool{
		"calc_test.go": true, "tests/test_calc.py": true, "tests/fixtures/data.json": true, "pkg/testdata/golden.txt": true,
		"src/__tests__/a.js": true, "test/helper.rb": true, "conftest.py": true, "calc.go": false, "docs/testing.md": false,
		"vendor/x/tests/a.go": false, "node_modules/m/test/a.js": false, "contest.py": false,
	} {
		if got := IsProtectedTest(p); got != want {
			t.Errorf("IsProtectedTest(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestProtectedChanges(t *testing.T) {
	p := &protection{
		base:     map[string]bool{"check.sh": true, "calc_test.go": true, "calc.go": true, "ci/run.sh": true, "tests/test_a.py": true, "sub/x.golden": true},
		named:    map[string]bool{"check.sh": true},
		patterns: []string{"ci/**", "*.golden"},
		why:      map[string]string{},
	}
	added := map[string]string{
		"main_test.go":     "package calc\n\nfunc TestMain(m *testing.M) { os.Exit(0) }\n",
		"tests/test_z.py":  "import sys\nsys.exit(0)\n",
		"tests/test_ok.py": "def test_ok():\n    assert True\n",
		"new.go":           "package calc\n\nfunc init() { os.Exit(0) }\n",
	}
	read := func(path string) []byte { return []byte(added[path]) }
	files := []File{
		{Path: "check.sh", Status: "modified"},
		{Path: "calc.go", Status: "modified"},
		{Path: "calc_test.go", Status: "deleted"},
		{Path: "tests/test_b.py", OldPath: "tests/test_a.py", Status: "renamed"},
		{Path: "ci/run.sh", Status: "type_changed"},
		{Path: "ci/new.sh", Status: "added"},
		{Path: "conftest.py", Status: "added"},
		{Path: "main_test.go", Status: "added"},
		{Path: "tests/test_z.py", Status: "added"},
		{Path: "tests/test_ok.py", Status: "added"},
		{Path: "new.go", Status: "added"},
		{Path: "sub/x.golden", Status: "modified"},
	}
	want := []ProtectedChange{
		{Path: "check.sh", Status: "modified", Why: WhyCommand},
		{Path: "calc_test.go", Status: "deleted", Why: WhyTest},
		{Path: "tests/test_a.py", Status: "renamed", Why: WhyTest},
		{Path: "ci/run.sh", Status: "type_changed", Why: WhyGlob + " ci/**"},
		{Path: "ci/new.sh", Status: "added", Why: WhyGlob + " ci/**"},
		{Path: "conftest.py", Status: "added", Why: WhyHook + " (conftest.py)"},
		{Path: "main_test.go", Status: "added", Why: WhyHook + " (it holds func TestMain()"},
		{Path: "tests/test_z.py", Status: "added", Why: WhyHook + " (it holds sys.exit()"},
		// sub/x.golden: *.golden is relative to the repository, one level.
	}
	got := p.changes(files, read)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
