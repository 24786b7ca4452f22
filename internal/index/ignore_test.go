package index

import "testing"

func TestGitignore(t *testing.T) {
	tests := []struct {
		patterns string
		path     string
		dir      bool
		want     bool
	}{
		{"*.log", "a.log", false, true},
		{"*.log", "deep/er/a.log", false, true},
		{"*.log", "a.logx", false, false},
		{"/root.txt", "root.txt", false, true},
		{"/root.txt", "sub/root.txt", false, false},
		{"build/", "build", true, true},
		{"build/", "build", false, false},
		{"build/", "x/build", true, true},
		{"doc/*.txt", "doc/a.txt", false, true},
		{"doc/*.txt", "doc/sub/a.txt", false, false},
		{"**/foo", "a/b/foo", false, true},
		{"**/foo", "foo", false, true},
		{"a/**/b", "a/b", false, true},
		{"a/**/b", "a/x/y/b", false, true},
		{"abc/**", "abc/x/y", false, true},
		{"*.py\n!keep.py", "keep.py", false, false},
		{"*.py\n!keep.py", "other.py", false, true},
		{"[ab].txt", "a.txt", false, true},
		{"[!ab].txt", "a.txt", false, false},
		{"[!ab].txt", "c.txt", false, true},
		{"file?.go", "file1.go", false, true},
		{"file?.go", "file/.go", false, false},
		{`\#hash`, "#hash", false, true},
		{"# comment\n\n", "# comment", false, false},
		{"trailing   ", "trailing", false, true},
		{"[unclosed", "[unclosed", false, true},
	}
	for _, tc := range tests {
		ig := (&ignorer{}).push(parseGitignore("", []byte(tc.patterns)))
		if got := ig.match(tc.path, tc.dir); got != tc.want {
			t.Errorf("patterns %q, path %q (dir %v): got %v, want %v", tc.patterns, tc.path, tc.dir, got, tc.want)
		}
	}
	// A nested .gitignore applies below its directory only.
	ig := (&ignorer{}).push(parseGitignore("sub", []byte("x.py")))
	if !ig.match("sub/x.py", false) || ig.match("x.py", false) || ig.match("subx/x.py", false) {
		t.Error("nested .gitignore scope is wrong")
	}
}

// FuzzGitignore feeds arbitrary pattern files and paths: nothing panics.
func FuzzGitignore(f *testing.F) {
	f.Add("*.log\n!keep.log\n/build/\n**/x/**\n[a-", "a/b/keep.log")
	f.Add("\\", "")
	f.Fuzz(func(t *testing.T, patterns, path string) {
		ig := (&ignorer{}).push(parseGitignore("", []byte(patterns)))
		ig.match(cleanRel(path), false)
		ig.match(cleanRel(path), true)
	})
}
