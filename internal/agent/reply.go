package agent

import (
	"encoding/json"
	"strings"

	"github.com/cra-dev/cra/internal/edit"
	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/retrieve"
)

// Reply is a coding model's reply: edit blocks, or a request for more
// context.
type Reply struct {
	Edits []edit.Block
	Need  *retrieve.RefinementRequest
}

// maxNeedItems bounds each list of a NEED_CONTEXT request: a model that
// asks for everything has no concrete evidence.
const maxNeedItems = 20

// ParseReply reads a coding model's reply: SEARCH/REPLACE blocks, or one
// NEED_CONTEXT request, a JSON object after a NEED_CONTEXT line:
//
//	```NEED_CONTEXT
//	{"reason": "...", "missing_files": ["app/db.py"], "missing_symbols": ["connect"],
//	 "missing_tests": [], "error_signatures": []}
//	```
//
// A request must name something concrete (seed 001 §13); one that names
// nothing, a reply with both forms and a reply with neither are
// *edit.FormatError: a malformed reply, not a refinement.
func ParseReply(text string) (Reply, error) {
	blocks, needLine, err := edit.ParseMarked(llm.StripThink(text))
	if err != nil {
		return Reply{}, err
	}
	if needLine == 0 {
		if len(blocks) == 0 {
			return Reply{}, &edit.FormatError{Line: 0, Msg: "the reply has no edit blocks: answer with SEARCH/REPLACE blocks (path line, <<<<<<< SEARCH, =======, >>>>>>> REPLACE), or with one NEED_CONTEXT block"}
		}
		return Reply{Edits: blocks}, nil
	}
	if len(blocks) > 0 {
		return Reply{}, &edit.FormatError{Line: needLine, Msg: "the reply has both edit blocks and NEED_CONTEXT: answer with edit blocks only, or with NEED_CONTEXT only"}
	}
	lines := strings.SplitAfter(llm.StripThink(text), "\n")
	rest := strings.Join(lines[needLine:], "")
	if first := strings.TrimSpace(lines[needLine-1]); strings.Contains(first, "{") {
		// NEED_CONTEXT {"missing_files": …} on one line.
		rest = first[strings.Index(first, "{"):] + "\n" + rest
	}
	raw, err := llm.ExtractJSON(rest)
	if err != nil {
		return Reply{}, &edit.FormatError{Line: needLine, Msg: "NEED_CONTEXT must be followed by a JSON object with reason, missing_files, missing_symbols, missing_tests and error_signatures"}
	}
	var v struct {
		Reason          string `json:"reason"`
		MissingFiles    any    `json:"missing_files"`
		MissingSymbols  any    `json:"missing_symbols"`
		MissingTests    any    `json:"missing_tests"`
		ErrorSignatures any    `json:"error_signatures"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return Reply{}, &edit.FormatError{Line: needLine, Msg: "NEED_CONTEXT JSON: " + err.Error()}
	}
	req := &retrieve.RefinementRequest{
		Reason:          strings.TrimSpace(v.Reason),
		MissingFiles:    needList(v.MissingFiles, true),
		MissingSymbols:  needList(v.MissingSymbols, false),
		MissingTests:    needList(v.MissingTests, false),
		ErrorSignatures: needList(v.ErrorSignatures, false),
	}
	if err := req.Validate(); err != nil {
		return Reply{}, &edit.FormatError{Line: needLine, Msg: "NEED_CONTEXT names nothing concrete: list the missing files, symbols, tests or error messages, or answer with edit blocks"}
	}
	return Reply{Need: req}, nil
}

// needList reads one list of a NEED_CONTEXT request: strings (a lone
// string is a list of one), trimmed, without duplicates or empties, and
// for files only paths inside the repository.
func needList(v any, paths bool) []string {
	var in []any
	switch x := v.(type) {
	case string:
		in = []any{x}
	case []any:
		in = x
	}
	out := []string{}
	seen := map[string]bool{}
	for _, e := range in {
		s, ok := e.(string)
		if !ok {
			continue
		}
		s = strings.TrimSpace(s)
		if paths {
			s = strings.TrimPrefix(strings.ReplaceAll(s, "\\", "/"), "./")
			if edit.ValidPath(s) != nil {
				continue
			}
		}
		if s == "" || len(s) > 500 || seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
		if len(out) == maxNeedItems {
			break
		}
	}
	return out
}
