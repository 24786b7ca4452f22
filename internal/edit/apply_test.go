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
			// REPLACE was in the file before any edit: its presence says
			// nothing of this block, whose SEARCH the model mis-copied.
			name: "a mis-copied deletion is not already applied", content: "import os\nimport sys\nimport pdb\n\nprint(os.name)\n",
			search: "import sys\nimport pbd\n", replace: "import sys\n",
			status: StatusFailed, msg: []string{"SEARCH matches nothing in calc.go. Did you mean"},
		},
		{
			// A block applies whole or not at all: one piece done and
			// another "already there" (a REPLACE piece found elsewhere) is
			// a piece that matched nothing.
			name: "elision: a mis-copied piece fails the block", content: "def f(x):\n    y = x * 2\n    log(y)\n    return y\n\ndef g():\n    return y + 1\n",
			search: "def f(x):\n...\n    return  y\n", replace: "def f(x, k):\n...\n    return y + 1\n",
			status: StatusFailed, msg: []string{"piece 2 of SEARCH", "it matches nothing in calc.go"},
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
			name: "a byte order mark is no part of line 1", content: "\ufeffusing System;\r\n\r\nnamespace App\r\n{\r\n}\r\n",
			search: "using System;\n", replace: "using System;\nusing System.IO;\n",
			want: "\ufeffusing System;\r\nusing System.IO;\r\n\r\nnamespace App\r\n{\r\n}\r\n", status: StatusApplied, rung: RungExact,
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

// TestApplyImpossiblePaths: a block whose path cannot be a file in the
// repository (a path through a file, a symlink into .git, out of the
// repository or to nothing, a name too long) fails on its own with a
// reason the model can act on; the blocks beside it apply, and Apply
// returns no error (issue 19, defect 1).
func TestApplyImpossiblePaths(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, root, outside string)
		block Block
		msg   []string // substrings of the failed block's message
	}{
		{
			name:  "through a file",
			block: Block{Path: "src/pkg/encoding.py/x.py", Search: "", Replace: "x = 1\n"},
			msg:   []string{`refused path "src/pkg/encoding.py/x.py"`, "src/pkg/encoding.py is a file, not a directory", "edit src/pkg/encoding.py itself or choose another path"},
		},
		{
			name:  "through a file, editing",
			block: Block{Path: "src/pkg/encoding.py/x.py", Search: "a\n", Replace: "b\n"},
			msg:   []string{"src/pkg/encoding.py is a file, not a directory"},
		},
		{
			name: "symlink to a worktree's .git file",
			setup: func(t *testing.T, root, _ string) {
				writeFile(t, root, ".git", "gitdir: /elsewhere/.git/worktrees/x\n")
				symlink(t, ".git", filepath.Join(root, "link"))
			},
			block: Block{Path: "link/config", Search: "", Replace: "[core]\n"},
			msg:   []string{`refused path "link/config"`, "link is a symlink into .git"},
		},
		{
			name: "symlink to a .git directory",
			setup: func(t *testing.T, root, _ string) {
				writeFile(t, root, ".git/config", "[core]\n")
				symlink(t, ".git", filepath.Join(root, "link"))
			},
			block: Block{Path: "link/config", Search: "[core]\n", Replace: "[core]\nx = 1\n"},
			msg:   []string{"link is a symlink into .git"},
		},
		{
			name: "symlink to a directory outside",
			setup: func(t *testing.T, root, outside string) {
				writeFile(t, outside, "config", "secret\n")
				symlink(t, outside, filepath.Join(root, "link"))
			},
			block: Block{Path: "link/config", Search: "secret\n", Replace: "leaked\n"},
			msg:   []string{"link is a symlink that leads outside the repository"},
		},
		{
			name: "symlink to a file outside, gone through",
			setup: func(t *testing.T, root, outside string) {
				writeFile(t, outside, "f", "secret\n")
				symlink(t, filepath.Join(outside, "f"), filepath.Join(root, "link"))
			},
			block: Block{Path: "link/x.py", Search: "", Replace: "x\n"},
			msg:   []string{"link is a symlink that leads outside the repository"},
		},
		{
			name:  "dangling symlink, gone through",
			setup: func(t *testing.T, root, _ string) { symlink(t, "missing/dir", filepath.Join(root, "link")) },
			block: Block{Path: "link/x.py", Search: "", Replace: "x\n"},
			msg:   []string{"link is a symlink that leads nowhere"},
		},
		{
			name:  "dangling symlink as the file",
			setup: func(t *testing.T, root, _ string) { symlink(t, "missing.py", filepath.Join(root, "link.py")) },
			block: Block{Path: "link.py", Search: "", Replace: "x\n"},
			msg:   []string{"link.py is a symlink that leads nowhere"},
		},
		{
			name:  "symlink to a file in the repository, gone through",
			setup: func(t *testing.T, root, _ string) { symlink(t, "src/pkg/encoding.py", filepath.Join(root, "enc")) },
			block: Block{Path: "enc/x.py", Search: "", Replace: "x\n"},
			msg:   []string{"enc is a symlink to the file src/pkg/encoding.py, not a directory"},
		},
		{
			name:  "symlink loop",
			setup: func(t *testing.T, root, _ string) { symlink(t, "loop", filepath.Join(root, "loop")) },
			block: Block{Path: "loop/x.py", Search: "", Replace: "x\n"},
			msg:   []string{`refused path "loop/x.py"`, "loop"},
		},
		{
			name:  "a name too long",
			block: Block{Path: strings.Repeat("n", 300) + "/x.py", Search: "", Replace: "x\n"},
			msg:   []string{"refused path", "too long"},
		},
		{
			name:  "a file created by an earlier block, gone through",
			block: Block{Path: "new.py/x.py", Search: "", Replace: "x\n"},
			msg:   []string{"new.py is a file, not a directory"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root, outside := t.TempDir(), t.TempDir()
			writeFile(t, root, "src/pkg/encoding.py", "a\n")
			writeFile(t, root, "calc.py", "return a - b\n")
			if tc.setup != nil {
				tc.setup(t, root, outside)
			}
			blocks := []Block{
				{Path: "calc.py", Search: "return a - b\n", Replace: "return a + b\n"},
				{Path: "new.py", Search: "", Replace: "y = 2\n"},
				tc.block,
				{Path: "src/pkg/encoding.py", Search: "a\n", Replace: "b\n"},
			}
			results, changed, err := Apply(root, blocks)
			if err != nil {
				t.Fatalf("got error %v, want the block refused and the others applied", err)
			}
			var got []string
			for _, r := range results {
				got = append(got, r.Status)
			}
			if diff := cmp.Diff([]string{StatusApplied, StatusCreated, StatusFailed, StatusApplied}, got); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
			if len(results) == 4 {
				for _, m := range tc.msg {
					if !strings.Contains(results[2].Message, m) {
						t.Errorf("message %q lacks %q", results[2].Message, m)
					}
				}
				if strings.Contains(results[2].Message, root) {
					t.Errorf("message %q names the absolute root", results[2].Message)
				}
			}
			if diff := cmp.Diff([]string{"calc.py", "new.py", "src/pkg/encoding.py"}, changed); diff != "" {
				t.Errorf("changed (-want +got):\n%s", diff)
			}
			if got := readFile(t, root, "calc.py"); got != "return a + b\n" {
				t.Errorf("calc.py: got %q, want the valid block applied", got)
			}
			if got := readFile(t, outside, "config"); got != "" && got != "secret\n" {
				t.Errorf("the file outside changed: %q", got)
			}
		})
	}
}

// TestApplyBlocksThatClash: a block that makes a directory of what an
// earlier block created as a file, or a file of what an earlier block
// created a directory for, fails; the others apply.
func TestApplyBlocksThatClash(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "calc.py", "return a - b\n")
	blocks := []Block{
		{Path: "pkg/mod.py", Search: "", Replace: "x = 1\n"},
		{Path: "pkg", Search: "", Replace: "a file where a directory must be\n"},
		{Path: "calc.py", Search: "return a - b\n", Replace: "return a + b\n"},
		{Path: "calc.py/x.py", Search: "", Replace: "x\n"},
	}
	results, changed, err := Apply(root, blocks)
	if err != nil {
		t.Fatalf("got error %v, want the blocks failed", err)
	}
	checkResults(t, results, []string{StatusCreated, StatusFailed, StatusApplied, StatusFailed}, map[int]string{
		1: "pkg is a directory: an earlier block creates pkg/mod.py in it",
		3: "calc.py is a file, not a directory",
	})
	if diff := cmp.Diff([]string{"calc.py", "pkg/mod.py"}, changed); diff != "" {
		t.Errorf("changed (-want +got):\n%s", diff)
	}
}

// TestApplyWriteFailure: a file that cannot be written (here: its name
// leaves no room for the temp file beside it) fails its blocks, not the
// run; the other files are written.
func TestApplyWriteFailure(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "calc.py", "return a - b\n")
	long := strings.Repeat("w", 250) + ".py"
	blocks := []Block{
		{Path: "calc.py", Search: "return a - b\n", Replace: "return a + b\n"},
		{Path: long, Search: "", Replace: "x = 1\n"},
		{Path: long, Search: "x = 1\n", Replace: "x = 2\n"},
	}
	results, changed, err := Apply(root, blocks)
	if err != nil {
		t.Fatalf("got error %v, want the blocks failed", err)
	}
	checkResults(t, results, []string{StatusApplied, StatusFailed, StatusFailed}, map[int]string{
		1: "could not write " + long + ": file name too long",
		2: "could not write",
	})
	if diff := cmp.Diff([]string{"calc.py"}, changed); diff != "" {
		t.Errorf("changed (-want +got):\n%s", diff)
	}
	if strings.Contains(results[1].Message, root) {
		t.Errorf("message %q names the absolute root", results[1].Message)
	}
}

func checkResults(t *testing.T, results []Result, status []string, msg map[int]string) {
	t.Helper()
	var got []string
	for _, r := range results {
		got = append(got, r.Status)
	}
	if diff := cmp.Diff(status, got); diff != "" {
		t.Fatalf("statuses (-want +got):\n%s", diff)
	}
	for i, m := range msg {
		if !strings.Contains(results[i].Message, m) {
			t.Errorf("block %d: message %q lacks %q", i+1, results[i].Message, m)
		}
	}
}

// TestApplyRootGone: a root that is not there stops the run.
func TestApplyRootGone(t *testing.T) {
	root := filepath.Join(t.TempDir(), "gone")
	if _, _, err := Apply(root, []Block{{Path: "a.py", Replace: "x\n"}}); err == nil {
		t.Error("got no error for a missing root")
	}
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	data, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	return string(data)
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Skip("no symlinks:", err)
	}
}

// TestApplySymlinkInside: a symlink that stays in the repository, even to
// its root, is followed.
func TestApplySymlinkInside(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "calc.py", "return a - b\n")
	symlink(t, ".", filepath.Join(root, "self"))
	results, changed, err := Apply(root, []Block{{Path: "self/calc.py", Search: "return a - b\n", Replace: "return a + b\n"}})
	if err != nil {
		t.Fatal(err)
	}
	checkResults(t, results, []string{StatusApplied}, nil)
	if diff := cmp.Diff([]string{"calc.py"}, changed); diff != "" {
		t.Errorf("changed (-want +got):\n%s", diff)
	}
}

// FuzzApplyPath: whatever path a block names, Apply returns no error for
// it, one result, and writes nothing outside the root, into .git or
// through a symlink out.
func FuzzApplyPath(f *testing.F) {
	for _, p := range []string{"a.py", "src/pkg/encoding.py/x.py", "link/config", "out/x", "dangling/x", "self/a.py", "a.py/b/c", strings.Repeat("n", 300), "x/" + strings.Repeat("n", 250) + ".py"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		parent := t.TempDir()
		root, outside := filepath.Join(parent, "root"), filepath.Join(parent, "outside")
		writeFile(t, root, "src/pkg/encoding.py", "a\n")
		writeFile(t, root, "a.py", "a\n")
		writeFile(t, root, ".git", "gitdir: x\n")
		os.Mkdir(outside, 0o755)
		symlink(t, ".git", filepath.Join(root, "link"))
		symlink(t, outside, filepath.Join(root, "out"))
		symlink(t, "missing", filepath.Join(root, "dangling"))
		symlink(t, ".", filepath.Join(root, "self"))
		results, _, err := Apply(root, []Block{{Path: p, Search: "", Replace: "x\n"}, {Path: "a.py", Search: "a\n", Replace: "b\n"}})
		if err != nil {
			t.Fatalf("%q: got error %v", p, err)
		}
		if len(results) != 2 || results[0].Status == StatusFailed && results[0].Message == "" {
			t.Fatalf("%q: results %+v", p, results)
		}
		if entries, _ := os.ReadDir(outside); len(entries) > 0 {
			t.Fatalf("%q: wrote outside the root", p)
		}
		if got := readFile(t, root, ".git"); got != "gitdir: x\n" {
			t.Fatalf("%q: .git changed", p)
		}
	})
}

// TestApplyTextSentAgain: a small model sends a block it sent before (the
// worktree is kept between attempts): a deletion, at the end, in the
// middle, or an elision block with its anchor piece, is already applied.
// The same blocks with the deleted lines mis-copied, the lines still in
// the file, are not.
func TestApplyTextSentAgain(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		b             Block
	}{
		{"deletion in the middle", "import os\nimport pdb\nimport sys\n\nprint(1)\n",
			Block{Search: "import os\nimport pdb\nimport sys\n", Replace: "import os\nimport sys\n"}},
		{"deletion at the end", "import os\nimport sys\nimport pdb\n\nprint(1)\n",
			Block{Search: "import sys\nimport pdb\n", Replace: "import sys\n"}},
		{"deletion at the start", "x = 1\nimport pdb\nimport sys\n\nprint(1)\n",
			Block{Search: "import pdb\nimport sys\n", Replace: "import sys\n"}},
		{"elision with an anchor", "def f(x):\n    y = x * 2\n    log(y)\n    return y\n",
			Block{Search: "def f(x):\n...\n    return y\n", Replace: "def f(x):\n...\n    return y + 1\n"}},
		{"a byte order mark copied with line 1", "\ufeffusing System;\nclass A {}\n",
			Block{Search: "\ufeffusing System;\n", Replace: "\ufeffusing System;\nusing System.IO;\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			once, r := ApplyText(tc.content, tc.b)
			if r.Status != StatusApplied {
				t.Fatalf("first: %s %s", r.Status, r.Message)
			}
			if !strings.HasPrefix(once, "\ufeff") && strings.Contains(once, "\ufeff") {
				t.Errorf("a byte order mark inside the file: %q", once)
			}
			again, r := ApplyText(once, tc.b)
			if r.Status != StatusAlreadyApplied || again != once {
				t.Errorf("sent again: %s %s, content changed %v", r.Status, r.Message, again != once)
			}
		})
	}
	// Mis-copied: the lines to delete are still there, a typo apart.
	for _, b := range []Block{
		{Search: "import sys\nimport pbd\n", Replace: "import sys\n"},
		{Search: "import pbd\nimport sys\n", Replace: "import sys\n"},
	} {
		content := "import os\nimport pdb\nimport sys\nimport pdb\n"
		if _, r := ApplyText(content, b); r.Status != StatusFailed {
			t.Errorf("%q → %q mis-copied: %s, want failed", b.Search, b.Replace, r.Status)
		}
	}
}
