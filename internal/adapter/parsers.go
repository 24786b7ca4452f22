package adapter

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cra-dev/cra/internal/retrieve"
)

// The readers of the reasoning stages' replies, in the shapes the stages
// ask for (internal/retrieve/stages.go): scope's {"files": […]},
// precision's {"symbols": […]}, task analysis's {"intent", "type",
// "symbols", "files"}. They decode with retrieve.DecodeReply, as the
// stages do, so an evaluation reads a reply as inference would.
//
// Branch boot exports the same readers from internal/retrieve
// (ParseScopeReply, ParsePrecisionReply, ParseTaskAnalysis) with these
// signatures; once both are merged these three delegate to them.

type scopeVerdict struct {
	Path     string `json:"path"`
	Relevant bool   `json:"relevant"`
	Reason   string `json:"reason"`
}

// parseScopeReply reads a scope judgment; the verdicts come by trimmed path.
func parseScopeReply(reply string) (map[string]scopeVerdict, error) {
	var vs struct {
		Files []scopeVerdict `json:"files"`
	}
	if err := retrieve.DecodeReply(reply, &vs); err != nil {
		return nil, err
	}
	out := make(map[string]scopeVerdict, len(vs.Files))
	for _, v := range vs.Files {
		out[strings.TrimSpace(v.Path)] = v
	}
	return out, nil
}

type precisionVerdict struct {
	Path   string `json:"path"`
	Symbol string `json:"symbol"`
	Tier   string `json:"tier"`
}

// parsePrecisionReply reads a precision judgment: every verdict must name
// one of the four tiers.
func parsePrecisionReply(reply string) ([]precisionVerdict, error) {
	var vs struct {
		Symbols []precisionVerdict `json:"symbols"`
	}
	if err := retrieve.DecodeReply(reply, &vs); err != nil {
		return nil, err
	}
	for _, v := range vs.Symbols {
		switch v.Tier {
		case retrieve.DetailPrimary, retrieve.DetailSupporting, retrieve.DetailTypeContext, retrieve.DetailExcluded:
		default:
			return nil, fmt.Errorf("unknown tier %q for %s", v.Tier, v.Symbol)
		}
	}
	return vs.Symbols, nil
}

type taskAnalysis struct {
	Intent  string   `json:"intent"`
	Type    string   `json:"type"`
	Symbols []string `json:"symbols"`
	Files   []string `json:"files"`
}

// parseTaskAnalysis reads a task-analysis reply; one without an intent is
// an error.
func parseTaskAnalysis(reply string) (taskAnalysis, error) {
	var v taskAnalysis
	if err := retrieve.DecodeReply(reply, &v); err != nil {
		return taskAnalysis{}, err
	}
	v.Intent = strings.TrimSpace(v.Intent)
	if v.Intent == "" {
		return taskAnalysis{}, errors.New("no intent")
	}
	return v, nil
}
