package outcome

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// requireTool fails, naming how to install it, where a runner the test
// drives is missing: a test that skipped would leave the reader of that
// runner untried.
func requireTool(t *testing.T, name, install string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Fatalf("%s is not installed, so its reports cannot be tried: %s (.ci/run does)", name, install)
	}
}

// TestRealRunners: the flags Instrument adds work with the real go test,
// pytest and node --test, and Read reads what they wrote.
func TestRealRunners(t *testing.T) {
	for _, tc := range []struct {
		name, tool, install, command string
		files                        map[string]string
		want                         map[string]Status
	}{
		{
			name: "go", tool: "go", install: "install Go", command: "go test ./...",
			files: map[string]string{
				"go.mod":  "module example.com/calc\n\ngo 1.22\n",
				"calc.go": "package calc\n\nfunc Add(a, b int) int { return a + b }\nfunc Sub(a, b int) int { return a + b }\n",
				"calc_test.go": `package calc

import "testing"

func TestAdd(t *testing.T) { if Add(1, 2) != 3 { t.Fatal("add") } }
func TestSub(t *testing.T) { if Sub(3, 1) != 2 { t.Fatal("sub") } }
func TestTable(t *testing.T) {
	t.Run("one", func(t *testing.T) {})
	t.Run("later", func(t *testing.T) { t.Skip("later") })
}
`,
			},
			want: map[string]Status{"example.com/calc::TestAdd": Pass, "example.com/calc::TestSub": Fail,
				"example.com/calc::TestTable": Pass, "example.com/calc::TestTable/one": Pass, "example.com/calc::TestTable/later": Skip},
		},
		{
			name: "pytest", tool: "pytest", install: "apt-get install -y python3-pytest", command: "pytest -q -p no:cacheprovider",
			files: map[string]string{
				"conftest.py": "",
				"calc.py":     "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a + b\n",
				"tests/test_calc.py": `import pytest
from calc import add, sub

def test_add():
    assert add(1, 2) == 3

def test_sub():
    assert sub(3, 1) == 2

@pytest.mark.skip(reason="later")
def test_later():
    pass
`,
			},
			want: map[string]Status{"tests.test_calc::test_add": Pass, "tests.test_calc::test_sub": Fail, "tests.test_calc::test_later": Skip},
		},
		{
			name: "node", tool: "node", install: "apt-get install -y nodejs", command: "node --test",
			files: map[string]string{
				"calc.test.js": `const test = require('node:test');
const assert = require('node:assert');
test('adds', () => { assert.strictEqual(1 + 2, 3); });
test('subtracts', () => { assert.strictEqual(3 - 1, 4); });
test('suite', async (t) => {
  await t.test('inner', () => {});
  await t.test('later', { skip: true }, () => {});
});
`,
			},
			want: map[string]Status{"adds": Pass, "subtracts": Fail, "suite": Pass, "suite > inner": Pass, "suite > later": Skip},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireTool(t, tc.tool, tc.install)
			dir, reports := t.TempDir(), t.TempDir()
			for name, text := range tc.files {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			command, sources := Instrument(tc.command, reports)
			cmd := exec.Command("sh", "-c", command)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "PYTHONDONTWRITEBYTECODE=1")
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("%s passed, want the failing test to fail it:\n%s", command, out)
			}
			res := Read(sources, func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(out)), nil })
			if !res.Readable() {
				t.Fatalf("%s: not readable: %v\n%s", command, res.Missing, out)
			}
			if diff := cmp.Diff(tc.want, res.Tests); diff != "" {
				t.Errorf("%s (-want +got):\n%s\n%s", command, diff, out)
			}
		})
	}
}
