package supervisor

import (
	"errors"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/knowledge"
)

const goodCodeStyle = `Here you go:
` + "```json" + `
{"conventions_updated": ["conventions/errors.md"],
 "documents": [{"path": "conventions/errors.md", "title": "Errors", "rules": "1. Wrap errors once.", "examples": {"good": "fmt.Errorf(\"x: %w\", err)", "bad": "return err"}, "rationale": "Context."}],
 "directives": [{"type": "cleanup", "description": "Wrap errors in a.go", "files": ["a.go"], "priority": "low"}],
 "summary": "one convention, one cleanup"}
` + "```"

func TestParseReply(t *testing.T) {
	r, err := ParseReply(knowledge.CodeStyle, goodCodeStyle)
	if err != nil || len(r.Documents) != 1 || r.Documents[0].Examples.Bad != "return err" || len(r.Directives) != 1 || r.Summary != "one convention, one cleanup" {
		t.Fatalf("got %+v, %v", r, err)
	}
	d, err := ParseReply(knowledge.Design, `{"design_updates": [], "documents": [], "directives": [{"type": "functional", "description": "Use a map", "rationale": "lookups", "priority": "normal"}], "summary": "s"}`)
	if err != nil || d.Directives[0].Rationale != "lookups" {
		t.Fatalf("design: %+v, %v", d, err)
	}
	i, err := ParseReply(knowledge.Internaliser, `{"knowledge_items": [{"category": "lesson", "content": "reducers drop None", "source_task": "t-1", "confidence": "high", "needs_user_review": true}], "summary": "s"}`)
	if err != nil || !i.Items[0].NeedsUserReview {
		t.Fatalf("internaliser: %+v, %v", i, err)
	}

	for _, tc := range []struct {
		name string
		s    knowledge.Supervisor
		text string
		want string
	}{
		{"prose", knowledge.CodeStyle, "all good, nothing to report", "no JSON object"},
		{"unknown key", knowledge.CodeStyle, `{"conventions_updated": [], "documents": [], "directives": [], "summary": "s", "mood": "good"}`, `unknown field "mood"`},
		{"another supervisor's schema", knowledge.CodeStyle, `{"design_updates": [], "documents": [], "directives": [], "summary": "s"}`, `unknown field "design_updates"`},
		{"missing key", knowledge.Design, `{"design_updates": [], "directives": [], "summary": "s"}`, "documents and directives are required"},
		{"no summary", knowledge.Internaliser, `{"knowledge_items": []}`, "summary is required"},
		{"bad type", knowledge.Design, `{"design_updates": [], "documents": [], "directives": [{"type": "urgent", "description": "d", "priority": "low"}], "summary": "s"}`, `type is "urgent"`},
		{"bad priority", knowledge.Design, `{"design_updates": [], "documents": [], "directives": [{"type": "cleanup", "description": "d", "priority": "high"}], "summary": "s"}`, `priority is "high"`},
		{"long rules", knowledge.CodeStyle, `{"conventions_updated": [], "documents": [{"path": "conventions/x.md", "title": "X", "rules": "` + strings.Repeat("r", 501) + `", "examples": {"good": "", "bad": ""}, "rationale": ""}], "directives": [], "summary": "s"}`, "at most 500"},
		{"string for a list", knowledge.CodeStyle, `{"conventions_updated": "x", "documents": [], "directives": [], "summary": "s"}`, "cannot unmarshal"},
		{"escaping file", knowledge.CodeStyle, `{"conventions_updated": [], "documents": [], "directives": [{"type": "cleanup", "description": "d", "priority": "low", "files": ["../etc/passwd"]}], "summary": "s"}`, "relative to the repository"},
		{"bad category", knowledge.Internaliser, `{"knowledge_items": [{"category": "rule", "content": "c", "source_task": "t", "confidence": "high", "needs_user_review": false}], "summary": "s"}`, `category is "rule"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseReply(tc.s, tc.text)
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func FuzzParseReply(f *testing.F) {
	f.Add(0, goodCodeStyle)
	f.Add(1, `{"design_updates": [], "documents": [], "directives": [], "summary": "s"}`)
	f.Add(2, `{"knowledge_items": [{"category": "domain", "content": "c", "source_task": "t", "confidence": "low", "needs_user_review": false}], "summary": "s"}`)
	f.Add(2, "<think>{</think>{\"knowledge_items\": [],, \"summary\": \"s\"}")
	f.Fuzz(func(t *testing.T, which int, text string) {
		ss := knowledge.Supervisors()
		s := ss[(which%len(ss)+len(ss))%len(ss)]
		r, err := ParseReply(s, text)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error not ErrMalformed: %v", err)
			}
			return
		}
		if r.Summary == "" || len(r.Documents) > MaxDocuments || len(r.Directives) > MaxDirectives || len(r.Items) > MaxItems {
			t.Fatalf("accepted out of bounds: %+v", r)
		}
		for _, d := range r.Documents {
			if len([]rune(strings.TrimSpace(d.Rules))) > knowledge.MaxRules || strings.TrimSpace(d.Title) == "" {
				t.Fatalf("accepted a bad document: %+v", d)
			}
		}
		for _, d := range r.Directives {
			if d.Type != "functional" && d.Type != "cleanup" {
				t.Fatalf("accepted type %q", d.Type)
			}
		}
		_ = r.Findings()
	})
}
