package supervisor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/cra-dev/cra/internal/knowledge"
	"github.com/cra-dev/cra/internal/llm"
)

// The bounds of a reply: what one run may ask of the board and the store.
const (
	MaxDocuments   = 10
	MaxDirectives  = 10
	MaxItems       = 20
	MaxDescription = 400 // seed 003: ~200 characters
	MaxRationale   = 400
	MaxFiles       = 20
	MaxSummary     = 1000
	MaxContent     = knowledge.MaxRules
)

// Document is a knowledge document a supervisor returns for cra to write
// (a model cannot write files): {path, title, rules, examples: {good,
// bad}, rationale}.
type Document struct {
	Path     string   `json:"path"`
	Title    string   `json:"title"`
	Rules    string   `json:"rules"`
	Examples Examples `json:"examples"`
	// Rationale says why the rules hold.
	Rationale string `json:"rationale"`
}

// Examples are a document's good and bad examples.
type Examples struct {
	Good string `json:"good"`
	Bad  string `json:"bad"`
}

// Directive is seed 003's directive: what to do, why, how urgent, where.
type Directive struct {
	Type        string   `json:"type"` // functional | cleanup
	Description string   `json:"description"`
	Rationale   string   `json:"rationale,omitempty"`
	Priority    string   `json:"priority"` // critical | normal | low
	Files       []string `json:"files,omitempty"`
}

// Item is seed 003's internaliser knowledge item.
type Item struct {
	Category        string `json:"category"` // lesson | domain
	Content         string `json:"content"`
	SourceTask      string `json:"source_task"`
	Confidence      string `json:"confidence"` // high | medium | low
	NeedsUserReview bool   `json:"needs_user_review"`
}

// Reply is one supervisor's output, validated: seed 003's three schemas
// in one type. Updated is conventions_updated (code_style) or
// design_updates (design); Items only the internaliser's.
type Reply struct {
	Updated    []string    `json:"updated,omitempty"`
	Documents  []Document  `json:"documents,omitempty"`
	Directives []Directive `json:"directives,omitempty"`
	Items      []Item      `json:"knowledge_items,omitempty"`
	Summary    string      `json:"summary"`
}

// codeStyleReply, designReply and internaliserReply are the schemas as
// the model writes them; every key is required (a nil slice is a missing
// key).
type codeStyleReply struct {
	ConventionsUpdated *[]string    `json:"conventions_updated"`
	Documents          *[]Document  `json:"documents"`
	Directives         *[]Directive `json:"directives"`
	Summary            *string      `json:"summary"`
}

type designReply struct {
	DesignUpdates *[]string    `json:"design_updates"`
	Documents     *[]Document  `json:"documents"`
	Directives    *[]Directive `json:"directives"`
	Summary       *string      `json:"summary"`
}

type internaliserReply struct {
	KnowledgeItems *[]Item `json:"knowledge_items"`
	Summary        *string `json:"summary"`
}

// ErrMalformed is a reply that does not match its supervisor's schema
// (seed 003, "Supervisor Output Validation"): it is discarded whole.
var ErrMalformed = errors.New("malformed supervisor reply")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// ParseReply reads supervisor s's reply strictly: one JSON object (found
// by llm.ExtractJSON), exactly the keys of s's schema, each value of its
// type and within its bounds. Any problem is an error wrapping
// ErrMalformed that names it. Document paths are not checked against s's
// folders here: a write outside them is refused and logged one by one,
// not a malformed reply.
func ParseReply(s knowledge.Supervisor, text string) (*Reply, error) {
	raw, err := llm.ExtractJSON(text)
	if err != nil {
		return nil, malformed("%v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	r := &Reply{}
	var summary *string
	switch s {
	case knowledge.CodeStyle:
		var v codeStyleReply
		if err := dec.Decode(&v); err != nil {
			return nil, malformed("%v", err)
		}
		if v.ConventionsUpdated == nil || v.Documents == nil || v.Directives == nil {
			return nil, malformed("conventions_updated, documents and directives are required (use [] for none)")
		}
		r.Updated, r.Documents, r.Directives, summary = *v.ConventionsUpdated, *v.Documents, *v.Directives, v.Summary
	case knowledge.Design:
		var v designReply
		if err := dec.Decode(&v); err != nil {
			return nil, malformed("%v", err)
		}
		if v.DesignUpdates == nil || v.Documents == nil || v.Directives == nil {
			return nil, malformed("design_updates, documents and directives are required (use [] for none)")
		}
		r.Updated, r.Documents, r.Directives, summary = *v.DesignUpdates, *v.Documents, *v.Directives, v.Summary
	case knowledge.Internaliser:
		var v internaliserReply
		if err := dec.Decode(&v); err != nil {
			return nil, malformed("%v", err)
		}
		if v.KnowledgeItems == nil {
			return nil, malformed("knowledge_items is required (use [] for none)")
		}
		r.Items, summary = *v.KnowledgeItems, v.Summary
	default:
		return nil, fmt.Errorf("no schema for supervisor %q", s)
	}
	if summary == nil || strings.TrimSpace(*summary) == "" {
		return nil, malformed("summary is required")
	}
	r.Summary = strings.TrimSpace(*summary)
	if err := r.validate(); err != nil {
		return nil, err
	}
	return r, nil
}

// validate checks the values' bounds and enumerations.
func (r *Reply) validate() error {
	switch {
	case len([]rune(r.Summary)) > MaxSummary:
		return malformed("summary is over %d characters", MaxSummary)
	case len(r.Documents) > MaxDocuments:
		return malformed("%d documents: at most %d", len(r.Documents), MaxDocuments)
	case len(r.Directives) > MaxDirectives:
		return malformed("%d directives: at most %d", len(r.Directives), MaxDirectives)
	case len(r.Items) > MaxItems:
		return malformed("%d knowledge_items: at most %d", len(r.Items), MaxItems)
	case len(r.Updated) > MaxDocuments:
		return malformed("%d updated documents listed: at most %d", len(r.Updated), MaxDocuments)
	}
	for i, d := range r.Documents {
		switch {
		case strings.TrimSpace(d.Path) == "":
			return malformed("documents[%d].path is empty", i)
		case strings.TrimSpace(d.Title) == "" || strings.ContainsAny(d.Title, "\r\n"):
			return malformed("documents[%d].title must be one non-empty line", i)
		case strings.TrimSpace(d.Rules) == "":
			return malformed("documents[%d].rules is empty", i)
		case len([]rune(strings.TrimSpace(d.Rules))) > knowledge.MaxRules:
			return malformed("documents[%d].rules is %d characters: at most %d", i, len([]rune(strings.TrimSpace(d.Rules))), knowledge.MaxRules)
		case len(d.Examples.Good)+len(d.Examples.Bad)+len(d.Rationale) > 4000:
			return malformed("documents[%d]: examples and rationale are over 4000 characters", i)
		}
	}
	for i, d := range r.Directives {
		switch {
		case d.Type != "functional" && d.Type != "cleanup":
			return malformed("directives[%d].type is %q: use functional or cleanup", i, d.Type)
		case d.Priority != "critical" && d.Priority != "normal" && d.Priority != "low":
			return malformed("directives[%d].priority is %q: use critical, normal or low", i, d.Priority)
		case strings.TrimSpace(d.Description) == "":
			return malformed("directives[%d].description is empty", i)
		case len([]rune(d.Description)) > MaxDescription:
			return malformed("directives[%d].description is over %d characters", i, MaxDescription)
		case len([]rune(d.Rationale)) > MaxRationale:
			return malformed("directives[%d].rationale is over %d characters", i, MaxRationale)
		case len(d.Files) > MaxFiles:
			return malformed("directives[%d] lists %d files: at most %d", i, len(d.Files), MaxFiles)
		}
		for _, f := range d.Files {
			if !repoPath(f) {
				return malformed("directives[%d].files lists %q: use paths relative to the repository", i, f)
			}
		}
	}
	for i, it := range r.Items {
		switch {
		case it.Category != "lesson" && it.Category != "domain":
			return malformed("knowledge_items[%d].category is %q: use lesson or domain", i, it.Category)
		case it.Confidence != "high" && it.Confidence != "medium" && it.Confidence != "low":
			return malformed("knowledge_items[%d].confidence is %q: use high, medium or low", i, it.Confidence)
		case strings.TrimSpace(it.Content) == "":
			return malformed("knowledge_items[%d].content is empty", i)
		case len([]rune(it.Content)) > MaxContent:
			return malformed("knowledge_items[%d].content is over %d characters", i, MaxContent)
		case len(it.SourceTask) > 100 || strings.ContainsAny(it.SourceTask, "\r\n"):
			return malformed("knowledge_items[%d].source_task is not a task id", i)
		}
	}
	return nil
}

// repoPath reports whether f is a plausible repository-relative path.
func repoPath(f string) bool {
	f = strings.TrimSpace(f)
	if f == "" || len(f) > 300 || strings.ContainsAny(f, "\x00\r\n") || path.IsAbs(f) || strings.HasPrefix(f, `\`) {
		return false
	}
	for _, part := range strings.Split(f, "/") {
		if part == ".." {
			return false
		}
	}
	return true
}

// Findings are a reply's findings, each reduced to its words in order of
// first use: what convergence compares between two runs.
func (r *Reply) Findings() []string {
	var out []string
	for _, d := range r.Documents {
		out = append(out, normalize("doc "+d.Path+" "+d.Rules))
	}
	for _, d := range r.Directives {
		out = append(out, normalize("directive "+d.Description))
	}
	for _, it := range r.Items {
		out = append(out, normalize("item "+it.Content))
	}
	return out
}

// normalize lowercases s and keeps its words, each once, sorted: two
// wordings of the same finding in another order compare equal.
func normalize(s string) string {
	f := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '/' || r == '.')
	})
	seen := map[string]bool{}
	var words []string
	for _, w := range f {
		w = strings.Trim(w, ".")
		if w != "" && !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	slices.Sort(words)
	return strings.Join(words, " ")
}
