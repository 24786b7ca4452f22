package retrieve

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/cra-dev/cra/internal/dataset"
	"github.com/cra-dev/cra/internal/llm"
)

// ReplyError is an LLM reply that could not be used: it carries the raw
// response (seed 001 §15: parse failures propagate with the raw content).
type ReplyError struct {
	CallType string
	Raw      string
	Err      error
}

func (e *ReplyError) Error() string {
	raw := e.Raw
	if len(raw) > maxRawInError {
		raw = clip(raw, maxRawInError) + fmt.Sprintf("\n(%d of %d bytes shown: the whole reply is recorded in .clean_room/raw.sqlite, retrieval_llm_calls)", maxRawInError, len(e.Raw))
	}
	return fmt.Sprintf("%s: unusable reply: %v\n--- raw response ---\n%s", e.CallType, e.Err, raw)
}

func (e *ReplyError) Unwrap() error { return e.Err }

// maxRawInError bounds the raw reply an error message quotes; the
// recorded call keeps all of it.
const maxRawInError = 2000

// DecodeReply extracts the JSON value of a model reply into v, tolerating
// what small models wrap around it (fences, prose, trailing commas).
func DecodeReply(reply string, v any) error {
	raw, err := llm.ExtractJSON(reply)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}

// ScopeStage selects the files (seed 001 §5.6): the ranked candidates
// with their tiers, then, with a Judge, the reasoning model's verdict on
// each — relevant or not, with a reason — in batches that fit its window.
// A candidate the model leaves out keeps its deterministic decision, and
// that is logged.
type ScopeStage struct {
	// Limit is how many ranked files are candidates.
	Limit int
}

// Name implements Stage.
func (s *ScopeStage) Name() string { return "scope" }

// defaultCandidates is how many ranked files the stages consider when
// neither the pipeline nor the scope stage says.
const defaultCandidates = 60

func (s *ScopeStage) rank(ctx context.Context, sc *StageContext) error {
	limit := s.Limit
	if limit <= 0 {
		limit = defaultCandidates
	}
	cands, err := sc.Ranker.Rank(ctx, sc.Task, limit)
	if err != nil {
		return err
	}
	sc.Candidates = cands
	return nil
}

// Run implements Stage.
func (s *ScopeStage) Run(ctx context.Context, sc *StageContext) error {
	// Candidates ranked for an earlier stage ("precision,scope") are the
	// same ranking: scope judges them instead of ranking again.
	if sc.Candidates == nil {
		if err := s.rank(ctx, sc); err != nil {
			return err
		}
	}
	verdicts := map[string]scopeVerdict{}
	if sc.Judge != nil && len(sc.Candidates) > 0 {
		var err error
		if verdicts, err = judgeScope(ctx, sc); err != nil {
			return err
		}
	}
	kept := sc.Candidates[:0]
	for _, c := range sc.Candidates {
		d := Decision{Stage: "scope", FileID: c.FileID, Path: c.Path, Tier: tierName(c.Tier), Included: true, Reason: strings.Join(c.Reasons, "; ")}
		if v, ok := verdicts[c.Path]; ok {
			d.Included = v.Relevant || c.Tier <= TierSeed // the model may not drop what the task names
			d.Reason = "model: " + v.Reason
			if !v.Relevant && c.Tier <= TierSeed {
				d.Reason += " (kept: named by the task)"
			}
		} else if sc.Judge != nil {
			d.Reason = "not judged by the model; deterministic decision kept: " + d.Reason
		}
		sc.Decisions = append(sc.Decisions, d)
		if d.Included {
			kept = append(kept, c)
		} else {
			sc.Excluded[c.Path] = d.Reason
		}
	}
	sc.Candidates = kept
	return nil
}

func tierName(t int) string {
	switch t {
	case TierPlan:
		return "plan"
	case TierSeed:
		return "seed"
	case TierDep:
		return "dependency"
	case TierCoChange:
		return "co_change"
	case TierMetadata:
		return "metadata"
	}
	return "search"
}

type scopeVerdict struct {
	Path     string `json:"path"`
	Relevant bool   `json:"relevant"`
	Reason   string `json:"reason"`
}

const scopeSystem = `You decide which files of a repository a coding task needs.
For each candidate file, answer whether it is relevant to the task.
Reply with JSON only, an object {"files": [...]} whose list holds one
{"path": "...", "relevant": true|false, "reason": "..."} per candidate,
with the path exactly as given. Keep reasons under 15 words.`

// judgeScope asks the model about the candidates in batches that fit the
// prompt budget.
func judgeScope(ctx context.Context, sc *StageContext) (map[string]scopeVerdict, error) {
	out := map[string]scopeVerdict{}
	header := "Task:\n" + sc.Task.Text + "\n"
	if sc.Task.Intent != "" {
		header += "Intent: " + sc.Task.Intent + "\n"
	}
	header += "\nCandidates:\n"
	limit := promptChars(sc.PromptTokens)
	var batch []string
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		reply, err := sc.Judge(ctx, "scope_judgment", "scope", scopeSystem, header+strings.Join(batch, ""))
		if err != nil {
			return err
		}
		var vs struct {
			Files []scopeVerdict `json:"files"`
		}
		if err := DecodeReply(reply, &vs); err != nil {
			return &ReplyError{CallType: "scope_judgment", Raw: reply, Err: err}
		}
		for _, v := range vs.Files {
			out[strings.TrimSpace(v.Path)] = v
		}
		batch = batch[:0]
		return nil
	}
	size := len(header)
	for _, c := range sc.Candidates {
		line := fmt.Sprintf("- %s (%s)\n", c.Path, strings.Join(c.Reasons[:min(2, len(c.Reasons))], "; "))
		if size+len(line) > limit && len(batch) > 0 {
			if err := flush(); err != nil {
				return nil, err
			}
			size = len(header)
		}
		batch = append(batch, line)
		size += len(line)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// promptChars is the character budget of one stage prompt: three
// quarters of the reasoning window (the rest is the reply), chars/4.
func promptChars(tokens int) int {
	if tokens <= 0 {
		tokens = 4096
	}
	return tokens * 3
}

// PrecisionStage classifies the symbols of the scoped files (seed 001
// §5.7) into primary, supporting, type_context and excluded. Its
// deterministic step weighs the definitions of the best files and follows
// references from the best of them (symbolCandidates): a definition
// reached through a reference — a caller, a callee, a test that exercises
// it — is at least supporting (StageContext.Linked); the rest keep the
// assembler's tiers, from the task's names, referenced lines and words.
// With a Judge the model sees the candidates best first, with why each is
// one, and decides for the symbols it names; the rest keep the
// deterministic tier.
type PrecisionStage struct {
	// Files is how many of the top scoped files are weighed.
	Files int
}

// Name implements Stage.
func (s *PrecisionStage) Name() string { return "precision" }

type precisionVerdict struct {
	Path   string `json:"path"`
	Symbol string `json:"symbol"`
	Tier   string `json:"tier"`
}

const precisionSystem = `You decide how much of each code symbol a coding task needs.
The symbols are listed best first, each with why it is a candidate.
Classify each listed symbol as one of:
"primary" (needed in full), "supporting" (its signature and surroundings help),
"type_context" (its signature is enough), "excluded" (not needed).
Reply with JSON only, an object {"symbols": [...]} whose list holds
{"path": "...", "symbol": "...", "tier": "..."} for each symbol.`

// Run implements Stage.
func (s *PrecisionStage) Run(ctx context.Context, sc *StageContext) error {
	if sc.Details == nil {
		sc.Details = map[string]map[string]string{}
	}
	if len(sc.Candidates) == 0 {
		return nil
	}
	files := s.Files
	if files <= 0 {
		files = precisionFiles
	}
	cs, err := symbolCandidates(ctx, sc.Ranker, sc.Task, sc.Candidates, files)
	if err != nil {
		return err
	}
	sc.Symbols = cs
	sc.Linked = map[string]map[string]bool{}
	for _, c := range cs {
		if c.Linked {
			setIn(sc.Linked, c.Path, c.Name, true)
		}
	}
	if sc.Judge == nil {
		return nil
	}
	var b strings.Builder
	b.WriteString("Task:\n" + sc.Task.Text + "\n\nSymbols:\n")
	limit := promptChars(sc.PromptTokens)
	offered := map[[2]string]bool{}
	for _, c := range cs {
		line := fmt.Sprintf("- %s %s %s: %s", c.Path, c.Kind, c.Name, c.Signature)
		var why []string
		why = append(why, c.Reasons...)
		if c.Rationale != "" {
			why = append(why, "rationale: "+c.Rationale)
		}
		if len(why) > 0 {
			line += " (" + strings.Join(why, "; ") + ")"
		}
		line += "\n"
		if b.Len()+len(line) > limit {
			break
		}
		b.WriteString(line)
		offered[[2]string{c.Path, c.Name}] = true
	}
	reply, err := sc.Judge(ctx, "precision_judgment", "precision", precisionSystem, b.String())
	if err != nil {
		return err
	}
	var vs struct {
		Symbols []precisionVerdict `json:"symbols"`
	}
	if err := DecodeReply(reply, &vs); err != nil {
		return &ReplyError{CallType: "precision_judgment", Raw: reply, Err: err}
	}
	ignored := 0
	for _, v := range vs.Symbols {
		switch v.Tier {
		case DetailPrimary, DetailSupporting, DetailTypeContext, DetailExcluded:
		default:
			return &ReplyError{CallType: "precision_judgment", Raw: reply, Err: fmt.Errorf("unknown tier %q for %s", v.Tier, v.Symbol)}
		}
		if !offered[[2]string{v.Path, v.Symbol}] {
			ignored++ // a symbol the prompt did not list: a slip of the model
			continue
		}
		setIn(sc.Details, v.Path, v.Symbol, v.Tier)
	}
	if ignored > 0 {
		sc.Info = append(sc.Info, fmt.Sprintf("precision: %d verdict(s) named symbols that were not offered; ignored", ignored))
	}
	return nil
}

// setIn sets m[path][name], making the inner map when needed.
func setIn[V any](m map[string]map[string]V, path, name string, v V) {
	if m[path] == nil {
		m[path] = map[string]V{}
	}
	m[path][name] = v
}

const intentSystem = `You read a coding task and state its intent for a retrieval system.
Reply with JSON only: {"intent": "<one or two sentences>", "type": "bug|feature|refactor|test|docs",
"symbols": ["code names the task implies but does not spell out"], "files": ["paths it implies"]}.`

// analyzeIntent is task analysis's LLM step (seed 001 §5.2): intent and
// type, and names to add; it only adds to the deterministic extraction.
func analyzeIntent(ctx context.Context, sc *StageContext) error {
	reply, err := sc.Judge(ctx, llm.CallTaskAnalysis, dataset.TaskAnalysis, intentSystem, "Task:\n"+sc.Task.Text)
	if err != nil {
		return err
	}
	var v struct {
		Intent  string   `json:"intent"`
		Type    string   `json:"type"`
		Symbols []string `json:"symbols"`
		Files   []string `json:"files"`
	}
	if err := DecodeReply(reply, &v); err != nil {
		return &ReplyError{CallType: llm.CallTaskAnalysis, Raw: reply, Err: err}
	}
	if strings.TrimSpace(v.Intent) == "" {
		return &ReplyError{CallType: llm.CallTaskAnalysis, Raw: reply, Err: fmt.Errorf("no intent")}
	}
	sc.Task.Intent = strings.TrimSpace(v.Intent)
	switch v.Type {
	case TypeBug, TypeFeature, TypeRefactor, TypeTest, TypeDocs:
		sc.Task.Type = v.Type
	}
	for _, n := range v.Symbols {
		if !slices.Contains(sc.Task.Symbols, n) {
			sc.Task.ImpliedSymbols = appendNew(sc.Task.ImpliedSymbols, n)
		}
	}
	for _, f := range v.Files {
		if !slices.Contains(sc.Task.Files, f) {
			sc.Task.ImpliedFiles = appendNew(sc.Task.ImpliedFiles, f)
		}
	}
	return nil
}
