package glob

import (
	"errors"
	"testing"
)

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"check.sh", "check.sh", true},
		{"check.sh", "sub/check.sh", false},
		{"scripts/*.sh", "scripts/test.sh", true},
		{"scripts/*.sh", "scripts/ci/test.sh", false},
		{"tests/**", "tests/a/b/test_x.py", true},
		{"tests/**", "tests", true},
		{"**/conftest.py", "conftest.py", true},
		{"**/conftest.py", "a/b/conftest.py", true},
		{"**/conftest.py", "a/b/conftest.pyc", false},
		{"a/**/z.txt", "a/z.txt", true},
		{"a/**/z.txt", "a/b/c/z.txt", true},
		{"a/**/z.txt", "b/a/z.txt", false},
		{"[", "[", false},
	} {
		if got := Match(tc.pattern, tc.name); got != tc.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
}

func TestCheck(t *testing.T) {
	for _, p := range []string{"check.sh", "tests/**", "**/*.golden", "a/[bc]/d"} {
		if err := Check(p); err != nil {
			t.Errorf("Check(%q) = %v, want nil", p, err)
		}
	}
	for _, p := range []string{"", "/etc/passwd", "../x", "a/./b", "a//b", "a**", `a\b`, "[", "a/**b/c"} {
		if err := Check(p); !errors.Is(err, ErrBad) {
			t.Errorf("Check(%q) = %v, want ErrBad", p, err)
		}
	}
}

func FuzzMatch(f *testing.F) {
	f.Add("tests/**", "tests/a/b")
	f.Add("**/x*", "a/xy")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if len(pattern) > 200 || len(name) > 200 {
			return
		}
		if Match(pattern, name) && Check(pattern) != nil {
			t.Fatalf("a pattern Check refuses matched: %q %q", pattern, name)
		}
	})
}
