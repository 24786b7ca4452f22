package review

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cra-dev/cra/internal/parsetest"
)

const goodNote = `What was accomplished: added the --json flag to cmd/list.go
Current status: go test ./... passes
Remaining issues or limitations: none
Suggested next actions: document the flag in README.md
Validation evidence: go test ./... (ok)`

func wantNote() Note {
	return Note{
		Accomplished: "added the --json flag to cmd/list.go",
		Status:       "go test ./... passes",
		Remaining:    "none",
		Next:         "document the flag in README.md",
		Evidence:     "go test ./... (ok)",
	}
}

func TestParseReply(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Reply
		wantErr string
	}{
		{"the contract", "classification: full_complete\ncriteria: met\nneed: none\nnote:\n" + goodNote,
			Reply{Classification: FullComplete, Criteria: CriteriaMet, Note: wantNote()}, ""},
		{"need left out", "classification: some_progress\ncriteria: not_met\nnote:\n" + goodNote,
			Reply{Classification: SomeProgress, Criteria: CriteriaNotMet, Note: wantNote()}, ""},
		{"a person is needed", "classification: uncertain\ncriteria: unclear\nneed: give the agent a GITHUB_TOKEN\nnote:\n" + goodNote,
			Reply{Classification: Uncertain, Criteria: CriteriaUnclear, Need: "give the agent a GITHUB_TOKEN", Note: wantNote()}, ""},
		{"small-model decoration", "<think>hmm</think>\n```\n**Classification:** `Significant Progress`\n**criteria**: Met.\n**Need:** N/A\n**Note:**\n" +
			"## What was accomplished:\nadded the --json flag to cmd/list.go\n\n**Current status:** go test ./... passes\n- Remaining issues or limitations: none\n" +
			"### Suggested Next Actions\uff1a document the flag in README.md\n**Validation evidence**: go test ./... (ok)\n```",
			Reply{Classification: SignificantProgress, Criteria: CriteriaMet, Note: wantNote()}, ""},
		{"note text on the note line is read as the first section", "classification: some_progress\ncriteria: met\nnote: " + goodNote,
			Reply{Classification: SomeProgress, Criteria: CriteriaMet, Note: wantNote()}, ""},
		{"an empty section reads as None", "classification: some_progress\ncriteria: met\nnote:\nWhat was accomplished:\nCurrent status: x\nRemaining issues or limitations: y\nSuggested next actions: z\nValidation evidence: w",
			Reply{Classification: SomeProgress, Criteria: CriteriaMet, Note: Note{Accomplished: "None.", Status: "x", Remaining: "y", Next: "z", Evidence: "w"}}, ""},
		{"empty", "  \n", Reply{}, "the reply is empty"},
		{"no classification first", "criteria: met\nclassification: full_complete\nnote:\n" + goodNote, Reply{}, "the first line must be 'classification:"},
		{"unknown classification", "classification: done\ncriteria: met\nnote:\n" + goodNote, Reply{}, `classification "done" is not one of`},
		{"unknown criteria", "classification: full_complete\ncriteria: yes\nnote:\n" + goodNote, Reply{}, `criteria "yes" is not one of`},
		{"no criteria", "classification: full_complete\nnote:\n" + goodNote, Reply{}, "no 'criteria:"},
		{"no note", "classification: full_complete\ncriteria: met\n", Reply{}, "no 'note:' line"},
		{"a stray line", "classification: full_complete\ncriteria: met\nI think it is done\nnote:\n" + goodNote, Reply{}, "unexpected line"},
		{"twice", "classification: full_complete\ncriteria: met\ncriteria: met\nnote:\n" + goodNote, Reply{}, "appears twice"},
		{"text before the first section", "classification: full_complete\ncriteria: met\nnote:\nAll good!\n" + goodNote, Reply{}, "must begin with"},
		{"a section missing", "classification: full_complete\ncriteria: met\nnote:\nWhat was accomplished: a\nRemaining issues or limitations: c\nSuggested next actions: d\nValidation evidence: e", Reply{}, `section "Current status" is missing`},
		{"out of order", "classification: full_complete\ncriteria: met\nnote:\nWhat was accomplished: a\nCurrent status: b\nRemaining issues or limitations: c\nValidation evidence: e\nSuggested next actions: d", Reply{}, "is missing before"},
		{"a section repeated", "classification: full_complete\ncriteria: met\nnote:\nWhat was accomplished: a\nCurrent status: b\nCurrent status: b\n", Reply{}, "comes after"},
		{"the note ends early", "classification: full_complete\ncriteria: met\nnote:\nWhat was accomplished: a\nCurrent status: b", Reply{}, "ends before section"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseReply(tc.in)
			if err != nil && !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			if tc.wantErr != "" {
				got = Reply{}
			}
			parsetest.Check(t, got, err, tc.want, tc.wantErr)
		})
	}
}

func TestParseReplyCutsALongNote(t *testing.T) {
	long := strings.Repeat("did a thing. ", 600)
	in := "classification: some_progress\ncriteria: unclear\nnote:\nWhat was accomplished: " + long +
		"\nCurrent status: ok\nRemaining issues or limitations: the test TestX fails\nSuggested next actions: fix TestX\nValidation evidence: go test ./... FAIL TestX"
	r, err := ParseReply(in)
	if err != nil {
		t.Fatal(err)
	}
	if n := utf8.RuneCountInString(r.Note.String()); n > MaxNote {
		t.Errorf("note is %d characters, want at most %d", n, MaxNote)
	}
	// Blockers and evidence survive; the narrative gives way.
	if r.Note.Remaining != "the test TestX fails" || r.Note.Evidence != "go test ./... FAIL TestX" {
		t.Errorf("blockers or evidence were cut: %+v", r.Note)
	}
	if !strings.HasSuffix(r.Note.Accomplished, "…") {
		t.Errorf("the cut section does not say it was cut: %q", r.Note.Accomplished[len(r.Note.Accomplished)-20:])
	}
}

func FuzzParseReply(f *testing.F) {
	f.Add("classification: full_complete\ncriteria: met\nneed: none\nnote:\n" + goodNote)
	f.Add("classification: uncertain\ncriteria: unclear\nnote: What was accomplished: x")
	f.Add("```\n**classification:** some_progress\n```")
	f.Add("<think>\nclassification: full_complete")
	f.Fuzz(func(t *testing.T, in string) {
		r, err := ParseReply(in)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if rank(r.Classification) >= len(Classifications()) {
			t.Fatalf("accepted classification %q", r.Classification)
		}
		switch r.Criteria {
		case CriteriaMet, CriteriaNotMet, CriteriaUnclear:
		default:
			t.Fatalf("accepted criteria %q", r.Criteria)
		}
		if n := utf8.RuneCountInString(r.Note.String()); n > MaxNote {
			t.Fatalf("note of %d characters", n)
		}
		if strings.ContainsAny(r.Need, "\n\r") || utf8.RuneCountInString(r.Need) > maxNeed {
			t.Fatalf("need %q spans lines or is too long", r.Need)
		}
		// The rendered note parses back to itself.
		again, err := ParseReply("classification: " + string(r.Classification) + "\ncriteria: " + string(r.Criteria) + "\nnote:\n" + r.Note.String())
		if err != nil {
			t.Fatalf("rendered note does not parse: %v\n%s", err, r.Note.String())
		}
		if again.Note != r.Note {
			t.Fatalf("round trip changed the note:\n%+v\n%+v", r.Note, again.Note)
		}
	})
}

// TestParseReplyNeed: the ways a small model says nobody is needed are
// no need, and a real need, however it begins, is one.
func TestParseReplyNeed(t *testing.T) {
	none := []string{"none", "None.", "N/A", "nothing", "None required.", "none needed", "No person needed", "None - the agent can continue",
		"none, the agent can go on", "Not needed", "no human input required", "No person is needed.", "nobody",
		"<none, or one line: what a person must do before an agent can go on>"} // the prompt's template echoed
	needs := []string{"give the agent a GITHUB_TOKEN", "None of the API keys are set: a person must add GITHUB_TOKEN",
		"Not installed: a person must install Docker", "no GITHUB_TOKEN in the environment: set one", "Nothing works until a person sets GITHUB_TOKEN",
		"No staging credentials - a person is needed: export STAGING_TOKEN", "Not possible offline - a person is required.", "Not installed so a person is needed"}
	for _, need := range append(none, needs...) {
		r, err := ParseReply("classification: some_progress\ncriteria: unclear\nneed: " + need + "\nnote:\n" + goodNote)
		if err != nil {
			t.Fatalf("need %q: %v", need, err)
		}
		if want := !slices.Contains(none, need); (r.Need != "") != want {
			t.Errorf("need %q: got Need %q, want a need: %v", need, r.Need, want)
		}
	}
}

// TestParseReplyNoteLayouts: the layouts small models give the five
// sections (headings without colons, bold names, a numbered list) are
// the sections; a line that only begins with a section's name is text.
func TestParseReplyNoteLayouts(t *testing.T) {
	head := "classification: full_complete\ncriteria: met\nneed: none\nnote:\n"
	for name, note := range map[string]string{
		"markdown headings": "## What was accomplished\nadded the flag\n\n## Current status\ntests pass\n\n## Remaining issues or limitations\nnone\n\n## Suggested next actions\nnone\n\n## Validation evidence\ngo test ./... ok\n",
		"numbered sections": "1. What was accomplished: added the flag\n2. Current status: tests pass\n3. Remaining issues or limitations: none\n4. Suggested next actions: none\n5) Validation evidence: go test ./... ok\n",
		"bold headings":     "**What was accomplished**\nadded the flag\n**Current status**\ntests pass\n**Remaining issues or limitations**\nnone\n**Suggested next actions**\nnone\n**Validation evidence**\ngo test ./... ok\n",
	} {
		r, err := ParseReply(head + note)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if r.Note.Accomplished != "added the flag" || r.Note.Status != "tests pass" || r.Note.Evidence != "go test ./... ok" {
			t.Errorf("%s: got %+v", name, r.Note)
		}
	}
	note := "What was accomplished: added the flag\nCurrent status: tests pass\nCurrent status is green everywhere\nRemaining issues or limitations: none\nSuggested next actions: none\nValidation evidence: ok\n"
	if r, err := ParseReply(head + note); err != nil || r.Note.Status != "tests pass\nCurrent status is green everywhere" {
		t.Errorf("a line beginning with a section's name: got %+v, %v; want it in the text", r.Note, err)
	}
}
