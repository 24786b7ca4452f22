package agent

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/edit"
	"github.com/cra-dev/cra/internal/retrieve"
)

func TestParseReply(t *testing.T) {
	blocks := "a.go\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n"
	tests := []struct {
		name     string
		in       string
		want     Reply
		wantErr  string
		wantLine int
	}{
		{name: "edits", in: blocks, want: Reply{Edits: []edit.Block{{Path: "a.go", Search: "x\n", Replace: "y\n", Line: 2}}}},
		{
			name: "need context, fenced",
			in: "The test file is missing.\n```NEED_CONTEXT\n{\"reason\": \"the test\", \"missing_files\": [\"calc/calc_test.go\", \"../etc/passwd\", \" \"], " +
				"\"missing_symbols\": \"TestAdd\", \"missing_tests\": [], \"error_signatures\": [\"calc_test.go:7: Add(2, 3) = -1\"]}\n```\n",
			want: Reply{Need: &retrieve.RefinementRequest{Reason: "the test", MissingFiles: []string{"calc/calc_test.go"}, MissingSymbols: []string{"TestAdd"},
				MissingTests: []string{}, ErrorSignatures: []string{"calc_test.go:7: Add(2, 3) = -1"}}},
		},
		{
			name: "need context on one line",
			in:   `NEED_CONTEXT {"missing_symbols": ["connect", "connect"]}`,
			want: Reply{Need: &retrieve.RefinementRequest{MissingFiles: []string{}, MissingSymbols: []string{"connect"}, MissingTests: []string{}, ErrorSignatures: []string{}}},
		},
		{name: "need context without evidence", in: "```NEED_CONTEXT\n{\"reason\": \"I need more context\", \"missing_files\": []}\n```", wantErr: "NEED_CONTEXT names nothing concrete", wantLine: 1},
		{name: "need context only escaping paths", in: "NEED_CONTEXT\n{\"missing_files\": [\"/etc/passwd\", \".git/config\"]}", wantErr: "names nothing concrete"},
		{name: "need context without JSON", in: "NEED_CONTEXT\nplease show me more", wantErr: "NEED_CONTEXT must be followed by a JSON object"},
		{name: "both", in: blocks + "NEED_CONTEXT\n{\"missing_files\": [\"b.go\"]}\n", wantErr: "both edit blocks and NEED_CONTEXT", wantLine: 7},
		{name: "neither", in: "Change the minus to a plus.", wantErr: "the reply has no edit blocks"},
		{name: "empty", in: "", wantErr: "the reply has no edit blocks"},
		{name: "malformed block", in: "a.go\n<<<<<<< SEARCH\nx\n", wantErr: "has no ======= line", wantLine: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseReply(tc.in)
			if tc.wantErr != "" {
				fe, ok := err.(*edit.FormatError)
				if !ok || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want a *edit.FormatError containing %q", err, tc.wantErr)
				}
				if tc.wantLine != 0 && fe.Line != tc.wantLine {
					t.Errorf("line: got %d, want %d", fe.Line, tc.wantLine)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzParseReply: any reply is edit blocks, one concrete request for more
// context, or a *edit.FormatError; never a panic.
func FuzzParseReply(f *testing.F) {
	f.Add("calc/calc.go\n```go\n<<<<<<< SEARCH\n\treturn a - b\n=======\n\treturn a + b\n>>>>>>> REPLACE\n```\n")
	f.Add("```NEED_CONTEXT\n{\"missing_files\": [\"a.py\"]}\n```")
	f.Add("NEED_CONTEXT {\"missing_symbols\": \"x\"}")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseReply(s)
		if err != nil {
			if _, ok := err.(*edit.FormatError); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if (len(r.Edits) == 0) == (r.Need == nil) {
			t.Fatalf("want edits or a request, not both or neither: %+v", r)
		}
		if r.Need != nil && r.Need.Validate() != nil {
			t.Fatalf("a request naming nothing: %+v", r.Need)
		}
	})
}
