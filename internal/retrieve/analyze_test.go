package retrieve

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAnalyze(t *testing.T) {
	tests := []struct {
		name string
		text string
		want TaskQuery
	}{
		{
			name: "commit subject with a code span",
			text: "Resolve the pager command once, in `_pager_contextmanager`",
			want: TaskQuery{Type: TypeFeature, Symbols: []string{"_pager_contextmanager"}},
		},
		{
			name: "traceback",
			text: "Crash on invoke:\nTraceback (most recent call last):\n  File \"/usr/lib/python3/site-packages/click/core.py\", line 1055, in main\n    rv = self.invoke(ctx)\nValueError: bad option",
			want: TaskQuery{
				Type:      TypeBug,
				Files:     []string{"usr/lib/python3/site-packages/click/core.py"},
				FileLines: []FileLine{{"usr/lib/python3/site-packages/click/core.py", 1055}},
				Symbols:   []string{"invoke", "ValueError"},
				Errors:    []string{"ValueError: bad option"},
			},
		},
		{
			name: "paths, file:line, dotted and camelCase names",
			text: "fix(context): Context.with_resource leaks in src/click/core.py:42; see docs/api.rst and parseHTTPHeader()",
			want: TaskQuery{
				Type:      TypeBug,
				Files:     []string{"src/click/core.py", "docs/api.rst"},
				FileLines: []FileLine{{"src/click/core.py", 42}},
				Symbols:   []string{"parseHTTPHeader", "with_resource"},
				Modules:   []string{"Context.with_resource"},
				Areas:     []string{"context"},
			},
		},
		{
			name: "go panic and error",
			text: "gin: panic in context.go:115 when calling c.JSON with nil; returns ErrBadRequest",
			want: TaskQuery{
				Type:      TypeBug,
				Files:     []string{"context.go"},
				FileLines: []FileLine{{"context.go", 115}},
				Symbols:   []string{"JSON", "ErrBadRequest"},
				Modules:   []string{"c.JSON"},
			},
		},
		{
			name: "docs",
			text: "docs: fix typo in README.md",
			want: TaskQuery{Type: TypeDocs, Files: []string{"README.md"}},
		},
		{
			name: "commit trailers and e-mail addresses are not the task",
			text: "Open the pager temp file in text mode\n\nCo-authored-by: H-Sorkatti <H.Sorkatti.B@Gmail.com>\nSigned-off-by: A <a@example.com>\nReported by bob@example.org",
			want: TaskQuery{Type: TypeFeature},
		},
		{name: "empty", text: "", want: TaskQuery{Type: TypeFeature}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Analyze(tc.text)
			got.Text, got.Keywords = "", nil
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Analyze(%q) (-want +got):\n%s", tc.text, diff)
			}
		})
	}
}

func TestTrailersLeaveKeywords(t *testing.T) {
	q := Analyze("Open the pager\n\nCo-authored-by: H-Sorkatti <H.Sorkatti.B@Gmail.com>\nmail bob@example.org")
	for _, k := range q.Keywords {
		if k == "sorkatti" || k == "gmail" || k == "authored" || k == "example" {
			t.Errorf("keyword %q comes from a trailer or an address: %v", k, q.Keywords)
		}
	}
	if !contains(q.Keywords, "pager") || !contains(q.Keywords, "mail") {
		t.Errorf("keywords: got %v, want pager and mail kept", q.Keywords)
	}
}

func TestKeywordsAndScope(t *testing.T) {
	q := Analyze("Fix pager: the pager pager fails")
	if len(q.Keywords) == 0 || q.Keywords[0] != "pager" && q.Keywords[0] != "fails" {
		t.Errorf("keywords: got %v", q.Keywords)
	}
	for _, tc := range []struct{ in, want string }{
		{"fix(context): handle nil", "handle nil"},
		{"docs: typo", "typo"},
		{"feat!: break", "break"},
		{"Fix: the thing", "Fix: the thing"}, // capitalised: prose, not a scope
		{"no scope here", "no scope here"},
	} {
		if got := StripScope(tc.in); got != tc.want {
			t.Errorf("StripScope(%q): got %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestAreas(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"fix(binding): handle nil", []string{"binding"}},
		{"feat(Render, binding/form)!: more", []string{"render", "binding", "form"}},
		{"fix(ui): too short", nil},
		{"docs: no scope", nil},
		{"Fix(context): capitalised, prose", nil},
		{"the (context) is not at the start", nil},
		{"", nil},
	} {
		if diff := cmp.Diff(tc.want, Analyze(tc.in).Areas); diff != "" {
			t.Errorf("Analyze(%q).Areas (-want +got):\n%s", tc.in, diff)
		}
	}
}

// FuzzAnalyze: any text yields a query without panicking, and every
// file:line reference is also a mentioned file.
func FuzzAnalyze(f *testing.F) {
	f.Add("File \"a/b.py\", line 3, in f\n`x.y` fooBar() ValueError: z")
	f.Add("```\ncode\n``` src/x.go:12 ` unterminated")
	f.Fuzz(func(t *testing.T, s string) {
		q := Analyze(s)
		files := map[string]bool{}
		for _, f := range q.Files {
			files[f] = true
		}
		for _, fl := range q.FileLines {
			if !files[fl.Path] {
				t.Fatalf("file:line %v not among files %v", fl, q.Files)
			}
		}
	})
}
