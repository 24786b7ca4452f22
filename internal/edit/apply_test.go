package edit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestApplyText(t *testing.T) {
	const goFile = "package calc\n\nfunc Add(a, b int) int {\n\treturn a - b\n}\n\nfunc Sub(a, b int) int {\n\treturn a - b\n}\n"
	tests := []struct {
		name            string
		content         string
		search, replace string
		want            string // content after; "" means unchanged
		status, rung    string
		msg             []string // substrings of the message
	}{
		{
			name: "exact", content: goFile,
			search: "func Add(a, b int) int {\n\treturn a - b\n", replace: "func Add(a, b int) int {\n\treturn a + b\n",
			want: strings.Replace(goFile, "a - b", "a + b", 1), status: StatusApplied, rung: RungExact,
		},
		{
			name: "indentation: SEARCH under-indented", content: "class A:\n    def f(self):\n        return 1\n",
			search: "def f(self):\n    return 1\n", replace: "def f(self):\n    return 2\n\ndef g(self):\n    pass\n",
			want: "class A:\n    def f(self):\n        return 2\n\n    def g(self):\n        pass\n", status: StatusApplied, rung: RungIndentation,
		},
		{
			name: "indentation: SEARCH over-indented, trailing spaces", content: "if x:\n  y = 1\n  z = 2\n",
			search: "    y = 1   \n    z = 2\n", replace: "    y = 3\n  z = 4\n",
			want: "if x:\n  y = 3\nz = 4\n", status: StatusApplied, rung: RungIndentation,
		},
		{
			name: "elision", content: "def f():\n    a = 1\n    b = 2\n    c = 3\n    return a\n",
			search: "def f():\n...\n    return a\n", replace: "def f(x):\n...\n    return a + x\n",
			want: "def f(x):\n    a = 1\n    b = 2\n    c = 3\n    return a + x\n", status: StatusApplied, rung: RungElision,
		},
		{
			name: "elision with a leading ...", content: "a\nb\nc\n",
			search: "...\nc\n", replace: "...\nC\n",
			want: "a\nb\nC\n", status: StatusApplied, rung: RungElision,
		},
		{
			name: "elision already applied", content: "def f(x):\n    a = 1\n    return a + x\n",
			search: "def f():\n...\n    return a\n", replace: "def f(x):\n...\n    return a + x\n",
			status: StatusAlreadyApplied, rung: RungElision,
		},
		{
			name: "elision: unpaired ...", content: "a\nb\nc\n", search: "a\n...\nc\n", replace: "A\nC\n",
			status: StatusFailed, msg: []string{`SEARCH has 1 "..." lines and REPLACE has 0`},
		},
		{
			name: "elision: piece matches twice", content: goFile, search: "\treturn a - b\n...\nfunc Sub(a, b int) int {\n", replace: "\treturn a + b\n...\nfunc Sub(a, b int) int {\n",
			status: StatusFailed, msg: []string{"piece 1 of SEARCH", "matches 2 places in calc.go (lines 4, 8)"},
		},
		{
			name: "elision: piece matches nothing", content: goFile, search: "func Mul(a, b int) int {\n...\n", replace: "func Mul(a, b int) int {\n...\n",
			status: StatusFailed, msg: []string{"piece 1 of SEARCH", "it matches nothing in calc.go. Did you mean line 3?"},
		},
		{
			name: "elision: REPLACE lines with nothing to anchor them", content: "a\nb\n", search: "...\nb\n", replace: "x\n...\nb\n",
			status: StatusFailed, msg: []string{"piece 1 of REPLACE has lines where SEARCH has none"},
		},
		{
			name: "several matches", content: goFile, search: "\treturn a - b\n", replace: "\treturn a + b\n",
			status: StatusFailed, msg: []string{"SEARCH matches 2 places in calc.go (lines 4, 8): add the lines around the change"},
		},
		{
			name: "no match: did you mean", content: goFile, search: "func Add(a, b int) int {\n    return a - b;\n}\n", replace: "x\n",
			status: StatusFailed, msg: []string{"SEARCH matches nothing in calc.go. Did you mean lines 3-5?", "```\nfunc Add(a, b int) int {\n\treturn a - b\n}\n```", "Copy SEARCH lines exactly"},
		},
		{
			name: "no match, nothing close", content: goFile, search: "SELECT * FROM users WHERE id = ?;\n", replace: "x\n",
			status: StatusFailed, msg: []string{"SEARCH matches nothing in calc.go, and no lines there are close to it"},
		},
		{
			name: "REPLACE already present", content: strings.Replace(goFile, "a - b", "a + b", 1),
			search: "func Add(a, b int) int {\n\treturn a - b\n", replace: "func Add(a, b int) int {\n\treturn a + b\n",
			status: StatusAlreadyApplied,
		},
		{
			name: "insertion already present is not inserted twice", content: "import os\nimport sys\n\nx = 1\n",
			search: "import os\n", replace: "import os\nimport sys\n",
			status: StatusAlreadyApplied,
		},
		{
			name: "delete lines", content: "a\nb\nc\n", search: "b\n", replace: "",
			want: "a\nc\n", status: StatusApplied, rung: RungExact,
		},
		{
			name: "CRLF kept", content: "a\r\nb\r\nc\r\n", search: "b\n", replace: "B\nB2\n",
			want: "a\r\nB\r\nB2\r\nc\r\n", status: StatusApplied, rung: RungExact,
		},
		{
			name: "no final newline kept", content: "a\nb", search: "b\n", replace: "c\n",
			want: "a\nc", status: StatusApplied, rung: RungExact,
		},
		{
			name: "empty SEARCH on an existing file", content: goFile, search: "", replace: "package other\n",
			status: StatusFailed, msg: []string{"calc.go already exists: an empty SEARCH only creates new files"},
		},
		{name: "empty SEARCH, same content", content: "x = 1\n", search: "\n", replace: "x = 1\n", status: StatusAlreadyApplied},
		{name: "empty SEARCH on an empty file", content: "", search: "", replace: "x = 1\n", want: "x = 1\n", status: StatusApplied},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, r := ApplyText(tc.content, Block{Path: "calc.go", Search: tc.search, Replace: tc.replace})
			want := tc.want
			if want == "" {
				want = tc.content
			}
			if got != want {
				t.Errorf("content:\ngot  %q\nwant %q", got, want)
			}
			if r.Status != tc.status || r.Rung != tc.rung {
				t.Errorf("got %s/%s, want %s/%s (%s)", r.Status, r.Rung, tc.status, tc.rung, r.Message)
			}
			for _, m := range tc.msg {
				if !strings.Contains(r.Message, m) {
					t.Errorf("message lacks %q:\n%s", m, r.Message)
				}
			}
		})
	}
}

func TestValidPath(t *testing.T) {
	for _, p := range []string{"a.go", "pkg/a.go", "./a.go", "a/./b.go", ".github/workflows/ci.yml", "a..b/c.go"} {
		if err := ValidPath(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	for p, want := range map[string]string{
		"":                  "empty path",
		"/etc/passwd":       "absolute path",
		"C:/Windows/x":      "absolute path",
		"../x.go":           "'..' leads out",
		"a/../../x.go":      "'..' leads out",
		"a/../b.go":         "'..' leads out",
		".git/config":       "inside .git",
		"sub/.GIT/hooks/x":  "inside .git",
		".clean_room/x":     "cra's state directory",
		"a\\b.go":           "forward slashes",
		"a\nb.go":           "control characters",
		"dir/":              "a directory",
		".":                 "not a file",
		"a`b":               "backtick",
		"./.clean_room/cfg": "cra's state directory",
	} {
		err := ValidPath(p)
		var pe *PathError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want a *PathError with %q", p, err, want)
		}
	}
}

func TestApply(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("calc/calc.go", "package calc\n\nfunc Add(a, b int) int {\n\treturn a - b\n}\n")
	write("script.sh", "echo hi\n")
	os.Chmod(filepath.Join(root, "script.sh"), 0o755)
	write("blob.bin", "a\x00b\n")
	write("inner/real.txt", "inner\n")
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret\n"), 0o644)
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Skip("no symlinks:", err)
	}
	os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "secret.txt"))
	os.Symlink("inner", filepath.Join(root, "alias"))
	os.Symlink(".git", filepath.Join(root, "dotgit"))
	os.Mkdir(filepath.Join(root, ".git"), 0o755)

	blocks := []Block{
		{Path: "calc/calc.go", Search: "\treturn a - b\n", Replace: "\treturn a + b\n"},
		{Path: "calc/calc.go", Search: "func Add(a, b int) int {\n", Replace: "// Add adds.\nfunc Add(a, b int) int {\n"},
		{Path: "calc/calc_test.go", Search: "", Replace: "package calc\n"},
		{Path: "calc.go", Search: "x\n", Replace: "y\n"},
		{Path: "script.sh", Search: "echo hi\n", Replace: "echo hello\n"},
		{Path: "alias/real.txt", Search: "inner\n", Replace: "changed\n"},
		{Path: "../escape.txt", Search: "", Replace: "x\n"},
		{Path: "/tmp/abs.txt", Search: "", Replace: "x\n"},
		{Path: ".git/config", Search: "", Replace: "x\n"},
		{Path: "out/new.txt", Search: "", Replace: "x\n"},
		{Path: "secret.txt", Search: "secret\n", Replace: "leaked\n"},
		{Path: "dotgit/config", Search: "", Replace: "x\n"},
		{Path: "blob.bin", Search: "a\n", Replace: "b\n"},
		{Path: "calc", Search: "x\n", Replace: "y\n"},
		{Path: "calc/calc.go", Search: "\treturn a - b\n", Replace: "\treturn a * b\n"},
	}
	results, changed, err := Apply(root, blocks)
	if err != nil {
		t.Fatal(err)
	}
	type short struct{ Status, Msg string }
	var got []short
	for _, r := range results {
		msg := r.Message
		if i := strings.IndexAny(msg, ".:"); i >= 0 && r.Status == StatusFailed {
			msg = msg[:i]
		}
		got = append(got, short{r.Status, msg})
	}
	want := []short{
		{StatusApplied, ""},
		{StatusApplied, ""},
		{StatusCreated, ""},
		{StatusFailed, "calc"}, // "calc.go does not exist. Did you mean calc/calc.go?"
		{StatusApplied, ""},
		{StatusApplied, ""},
		{StatusFailed, `refused path "`},
		{StatusFailed, `refused path "/tmp/abs`},
		{StatusFailed, `refused path "`},
		{StatusFailed, `refused path "out/new`},
		{StatusFailed, `refused path "secret`},
		{StatusFailed, `refused path "dotgit/config"`},
		{StatusFailed, "blob"},
		{StatusFailed, "calc is not a regular file"},
		{StatusFailed, "SEARCH matches nothing in calc/calc"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	for i, wantMsg := range map[int]string{
		3:  "calc.go does not exist. Did you mean calc/calc.go? To create a new file, leave SEARCH empty",
		6:  "'..' leads out of the repository",
		9:  "a symlink that leads outside the repository",
		10: "a symlink that leads outside the repository",
		11: "a symlink into .git",
		12: "binary file",
		14: "Did you mean line 5?\n```\n\treturn a + b\n```",
	} {
		if !strings.Contains(results[i].Message, wantMsg) {
			t.Errorf("block %d: message %q lacks %q", i+1, results[i].Message, wantMsg)
		}
	}
	if diff := cmp.Diff([]string{"calc/calc.go", "calc/calc_test.go", "inner/real.txt", "script.sh"}, changed); diff != "" {
		t.Errorf("changed (-want +got):\n%s", diff)
	}
	read := func(p string) string {
		data, _ := os.ReadFile(p)
		return string(data)
	}
	if got := read(filepath.Join(root, "calc/calc.go")); got != "package calc\n\n// Add adds.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n" {
		t.Errorf("calc.go: %q", got)
	}
	if got := read(filepath.Join(outside, "secret.txt")); got != "secret\n" {
		t.Errorf("the file outside changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Error("a file was created outside the repository")
	}
	if st, _ := os.Stat(filepath.Join(root, "script.sh")); st.Mode().Perm() != 0o755 {
		t.Errorf("script.sh mode: got %v, want 0755 kept", st.Mode())
	}
	if fi, _ := os.Lstat(filepath.Join(root, "alias")); fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the symlink inside was replaced")
	}
}

// FuzzApply: any block on any content applies, fails or is already
// there; a failure changes nothing; an exact application puts REPLACE in.
func FuzzApply(f *testing.F) {
	f.Add("a\nb\nc\n", "b\n", "B\n")
	f.Add("def f():\n    a = 1\n    return a\n", "def f():\n...\n  return a\n", "def f(x):\n...\n  return a + x\n")
	f.Add("x\r\ny\r\n", "\ty\n", "z\n")
	f.Add("a\na\n", "a\n", "")
	f.Add("", "", "new\n")
	f.Add("…\n...\n", "...\n", "…\n")
	f.Fuzz(func(t *testing.T, content, search, replace string) {
		if !strings.HasSuffix(search, "\n") && search != "" || !strings.HasSuffix(replace, "\n") && replace != "" {
			return // blocks are whole lines, as the parser makes them
		}
		start := time.Now()
		got, r := ApplyText(content, Block{Path: "f", Search: search, Replace: replace})
		if time.Since(start) > time.Second {
			t.Fatalf("slow: %d bytes %d lines, search %d bytes %d lines, replace %d", len(content), strings.Count(content, "\n"), len(search), strings.Count(search, "\n"), len(replace))
		}
		switch r.Status {
		case StatusFailed:
			if got != content {
				t.Fatalf("a failed block changed the content: %q → %q", content, got)
			}
			if r.Message == "" {
				t.Fatal("a failure without a message")
			}
		case StatusAlreadyApplied:
			if got != content {
				t.Fatalf("an already applied block changed the content")
			}
		case StatusApplied:
			// The last line keeps the file's lack of a final newline.
			if r.Rung == RungExact && !strings.Contains(strings.ReplaceAll(got, "\r", ""), strings.TrimSuffix(strings.ReplaceAll(replace, "\r", ""), "\n")) {
				t.Fatalf("exact application lacks REPLACE: %q", got)
			}
		default:
			t.Fatalf("status %q", r.Status)
		}
	})
}
