package edit

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/parsetest"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Block
		wantErr string
	}{
		{
			name: "fenced block",
			in:   "calc/calc.go\n```go\n<<<<<<< SEARCH\n\treturn a - b\n=======\n\treturn a + b\n>>>>>>> REPLACE\n```\n",
			want: []Block{{Path: "calc/calc.go", Search: "\treturn a - b\n", Replace: "\treturn a + b\n", Line: 3}},
		},
		{
			name: "decorated paths, prose, two files, a block reusing the path above",
			in: "Here is the fix:\n\n**`a.py`**\n```python\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```\n" +
				"```python\n<<<<<<< SEARCH\ny = 1\n=======\n>>>>>>> REPLACE\n```\n" +
				"File: ./pkg\\b.py:\n<<<<<<<SEARCH\n=======\nnew\n>>>>>>>REPLACE\nDone.\n",
			want: []Block{
				{Path: "a.py", Search: "x = 1\n", Replace: "x = 2\n", Line: 5},
				{Path: "a.py", Search: "y = 1\n", Replace: "", Line: 12},
				{Path: "pkg/b.py", Search: "", Replace: "new\n", Line: 18},
			},
		},
		{
			name: "CRLF and longer markers",
			in:   "a.txt\r\n<<<<<<<<< SEARCH\r\none\r\n=========\r\ntwo\r\n>>>>>>>>> REPLACE\r\n",
			want: []Block{{Path: "a.txt", Search: "one\n", Replace: "two\n", Line: 2}},
		},
		{
			name: "think block ignored",
			in:   "<think>\na.txt\n<<<<<<< SEARCH\n</think>\nb.txt\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n",
			want: []Block{{Path: "b.txt", Search: "x\n", Replace: "y\n", Line: 6}},
		},
		{
			// Code about a reasoning model's tags is code: only the
			// thinking that leads the reply is left out.
			name: "think tags in code",
			in: "<think>hm</think>\nllm/strip.go\n```go\n<<<<<<< SEARCH\nfunc strip(s string) string {\n=======\nfunc strip(s string) string {\n\ti := strings.Index(s, \"<think>\")\n" +
				"\tj := strings.Index(s, \"</think>\")\n>>>>>>> REPLACE\n```\n",
			want: []Block{{Path: "llm/strip.go", Search: "func strip(s string) string {\n", Line: 4,
				Replace: "func strip(s string) string {\n\ti := strings.Index(s, \"<think>\")\n\tj := strings.Index(s, \"</think>\")\n"}},
		},
		{
			name: "bold file prefixes",
			in: "**File: a.py**\n```python\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```\n\n" +
				"**File:** `b.py`\n```python\n<<<<<<< SEARCH\nimport os\n=======\nimport sys\n>>>>>>> REPLACE\n```\n",
			want: []Block{{Path: "a.py", Search: "x = 1\n", Replace: "x = 2\n", Line: 3}, {Path: "b.py", Search: "import os\n", Replace: "import sys\n", Line: 12}},
		},
		{
			name: "paths that begin with underscores",
			in:   "__init__.py\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n**_config.yml**\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n",
			want: []Block{{Path: "__init__.py", Search: "x\n", Replace: "y\n", Line: 2}, {Path: "_config.yml", Search: "a\n", Replace: "b\n", Line: 8}},
		},
		{name: "no blocks", in: "I would change the sign.", want: nil},
		{name: "no path", in: "```\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n```\n", wantErr: "line 2: no file path before <<<<<<< SEARCH"},
		{name: "no divider", in: "a.go\n<<<<<<< SEARCH\nx\n>>>>>>> REPLACE\n", wantErr: "line 4: the block that starts at line 2 has no ======= line"},
		{name: "cut before divider", in: "a.go\n<<<<<<< SEARCH\nx\n", wantErr: "line 2: the block has no ======= line"},
		{name: "cut before end", in: "a.go\n<<<<<<< SEARCH\nx\n=======\ny\n", wantErr: "line 2: the block has no >>>>>>> REPLACE line"},
		{name: "second divider", in: "a.go\n<<<<<<< SEARCH\nx\n=======\ny\n=======\n>>>>>>> REPLACE\n", wantErr: "line 6: the block that starts at line 2 has no >>>>>>> REPLACE line"},
		{name: "stray end marker", in: "a.go\n>>>>>>> REPLACE\n", wantErr: "line 2: >>>>>>> REPLACE outside a block"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(llm.StripThink(tc.in)) // as its callers give it
			parsetest.Check(t, got, err, tc.want, tc.wantErr)
		})
	}
}

// FuzzParse: any text parses or fails with a *FormatError; the blocks
// found have paths, whole lines, and survive formatting and parsing
// again.
func FuzzParse(f *testing.F) {
	f.Add("calc/calc.go\n```go\n<<<<<<< SEARCH\n\treturn a - b\n=======\n\treturn a + b\n>>>>>>> REPLACE\n```\n")
	f.Add("a.py\n<<<<<<< SEARCH\n=======\nx = 1\n>>>>>>> REPLACE\n<<<<<<< SEARCH\nx = 1\n...\ny\n=======\nx = 2\n...\ny\n>>>>>>> REPLACE\n")
	f.Add("<think>x</think>\n**`b.ts`**:\r\n<<<<<<<<< SEARCH>\r\n=========\r\n>>>>>>>>> REPLACE\r\n")
	f.Add("=======\n")
	f.Fuzz(func(t *testing.T, s string) {
		blocks, err := Parse(s)
		if err != nil {
			if _, ok := err.(*FormatError); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		for _, b := range blocks {
			if b.Path == "" || strings.ContainsAny(b.Path, " \t\n\\") {
				t.Fatalf("bad path %q", b.Path)
			}
			for _, text := range []string{b.Search, b.Replace} {
				if text != "" && !strings.HasSuffix(text, "\n") {
					t.Fatalf("text not in whole lines: %q", text)
				}
			}
		}
		if len(blocks) == 0 {
			return
		}
		again, err := Parse(Format(blocks))
		if err != nil {
			t.Fatalf("formatted blocks do not parse: %v\n%s", err, Format(blocks))
		}
		if diff := cmp.Diff(blocks, again, cmpopts.IgnoreFields(Block{}, "Line")); diff != "" {
			t.Fatalf("round trip (-first +again):\n%s", diff)
		}
	})
}
