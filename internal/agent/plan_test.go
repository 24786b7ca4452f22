package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/parsetest"
)

func TestParsePlanReply(t *testing.T) {
	tests := []struct {
		name    string
		reply   string
		want    *Plan
		wantErr string
	}{
		{
			name:  "fenced with prose",
			reply: "<think>hm</think>Here:\n```json\n{\"summary\": \"Fix the sign.\", \"steps\": [{\"file\": \"./calc/calc.go\", \"change\": \"Return a + b in Add.\", \"why\": \"TestAdd expects the sum.\"},]}\n```",
			want:  &Plan{Task: "fix add", Summary: "Fix the sign.", Steps: []PlanStep{{File: "calc/calc.go", Change: "Return a + b in Add.", Why: "TestAdd expects the sum."}}},
		},
		{name: "prose", reply: "Change Add.", wantErr: "no JSON object"},
		{name: "no steps", reply: `{"summary": "x", "steps": []}`, wantErr: "no steps"},
		{name: "step without why", reply: `{"steps": [{"file": "a.go", "change": "x"}]}`, wantErr: "step 1 (a.go): no why"},
		{name: "escaping path", reply: `{"steps": [{"file": "../a.go", "change": "x", "why": "y"}]}`, wantErr: `step 1: refused path "../a.go"`},
		{name: "wrong type", reply: `{"steps": "edit a.go"}`, wantErr: "plan JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePlanReply(tc.reply, "fix add")
			parsetest.Check(t, got, err, tc.want, tc.wantErr)
		})
	}
}

var samplePlan = &Plan{
	TaskID:  "t-1",
	Task:    "Fix `Add`.\n\n## Details\n```go\nAdd(2, 3) == -1\n```",
	Summary: "Flip the sign.\n# not a heading",
	Steps: []PlanStep{
		{File: "calc/calc.go", Change: "Return a + b.\nWhy: not a field\n\\ kept", Why: "**Change:** is text here"},
		{File: "calc/calc_test.go", Change: "Add a case.", Why: "Pin it."},
	},
}

func TestPlanMarkdownRoundTrip(t *testing.T) {
	md := samplePlan.Markdown()
	for _, want := range []string{"# Plan: Fix `Add`.\n", "task t-1", "## Task\n\n````text\n", "### 1. `calc/calc.go`\n\n**Change:** Return a + b.\n\\Why: not a field\n\\\\ kept\n\n**Why:** \\**Change:** is text here\n"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	got, err := ParsePlanMarkdown(md)
	if err != nil {
		t.Fatalf("%v\n%s", err, md)
	}
	if diff := cmp.Diff(samplePlan, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestParsePlanMarkdownEdited(t *testing.T) {
	// A person rewrote the plan: no fence, plain fields, a step added, a
	// section of their own.
	md := `# My plan

## Task
Make Add add.

## Notes
Talked to Ana about it.

## Steps

### 1) calc/calc.go (the bug)
Change: use +
instead of -.
Why: the test says so.

### 2. **docs/calc.md**
**Change**: mention it.
**Why:** users read it.
`
	got, err := ParsePlanMarkdown(md)
	if err != nil {
		t.Fatal(err)
	}
	want := &Plan{Task: "Make Add add.", Steps: []PlanStep{
		{File: "calc/calc.go", Change: "use +\ninstead of -.", Why: "the test says so."},
		{File: "docs/calc.md", Change: "mention it.", Why: "users read it."},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	for name, tc := range map[string]struct{ md, want string }{
		"text before the first step": {"## Task\nx\n## Steps\nedit calc.go\n", "line 4: text under ## Steps before the first"},
		"bad heading":                {"## Task\nx\n## Steps\n### 1. a.go\nChange: x\nWhy: y\n#### sub\n", `line 7: "#### sub": a step heading is`},
		"no steps":                   {"## Task\nx\n", "no steps"},
		"no task":                    {"## Steps\n### 1. a.go\nChange: x\nWhy: y\n", "no task"},
		"escaping path":              {"## Task\nx\n## Steps\n### 1. /etc/hosts\nChange: x\nWhy: y\n", `refused path "/etc/hosts"`},
	} {
		if _, err := ParsePlanMarkdown(tc.md); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", name, err, tc.want)
		}
	}
}

func TestSaveAndLoadPlan(t *testing.T) {
	dir := t.TempDir()
	md := filepath.Join(dir, "plans", "t-1.md")
	jsonPath, err := SavePlan(md, samplePlan)
	if err != nil {
		t.Fatal(err)
	}
	if jsonPath != filepath.Join(dir, "plans", "t-1.json") {
		t.Errorf("json path %s", jsonPath)
	}
	for _, p := range []string{md, jsonPath} {
		got, err := LoadPlan(p)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(samplePlan, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", p, diff)
		}
	}
	if diff := cmp.Diff([]string{"calc/calc.go", "calc/calc_test.go"}, samplePlan.Files()); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	os.WriteFile(md, []byte("## Task\nx\n## Steps\nstray\n"), 0o644)
	if _, err := LoadPlan(md); err == nil || !strings.Contains(err.Error(), "t-1.md:4: text under ## Steps") {
		t.Errorf("got %v, want the file and line", err)
	}
	if _, err := SavePlan(filepath.Join(dir, "p.json"), samplePlan); err == nil {
		t.Error("a .json Markdown path was accepted")
	}
	if _, err := LoadPlan(filepath.Join(dir, "missing.md")); err == nil || !strings.Contains(err.Error(), "missing.md does not exist: write one with 'cra plan") {
		t.Errorf("missing file: got %v, want the fix named", err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{\n  \"task\": \"x\",\n  bad\n}\n"), 0o644)
	if _, err := LoadPlan(bad); err == nil || !strings.Contains(err.Error(), "bad.json:3: not valid plan JSON") || !strings.Contains(err.Error(), "pass the plan's Markdown file instead") {
		t.Errorf("bad JSON: got %v, want the line and the fix", err)
	}
}

// FuzzParsePlanMarkdown: any text parses to a valid plan or fails; a plan
// parsed survives rendering and parsing again unchanged.
func FuzzParsePlanMarkdown(f *testing.F) {
	f.Add(samplePlan.Markdown())
	f.Add("## Task\nx\n## Steps\n### 1. a.go\nChange: x\nWhy: y\n")
	f.Add("## Task\n```\n## Steps\n```\n## Steps\n### 2) `b c.go` d\n**Change**: \\# x\n<!-- c\n-->\n**Why:** z\n")
	f.Fuzz(func(t *testing.T, md string) {
		p, err := ParsePlanMarkdown(md)
		if err != nil {
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("parsed an invalid plan: %v", err)
		}
		again, err := ParsePlanMarkdown(p.Markdown())
		if err != nil {
			t.Fatalf("rendered plan does not parse: %v\n%s", err, p.Markdown())
		}
		if diff := cmp.Diff(p, again); diff != "" {
			t.Fatalf("round trip (-first +again):\n%s\n%s", diff, p.Markdown())
		}
	})
}

func TestFirstLine(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"  fix the pager\nmore text", 80, "fix the pager"},
		{"abcdef", 3, "abc…"},
		{"héllo", 2, "h…"}, // é is two bytes: no half of it
		{"日本語のタスク", 7, "日本…"},
		{"", 5, ""},
	}
	for _, tc := range tests {
		got := FirstLine(tc.in, tc.n)
		if got != tc.want || !utf8.ValidString(got) {
			t.Errorf("FirstLine(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
