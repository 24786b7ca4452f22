package retrieve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/stage"
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

// ask sends a stage's prompt to the judge and reads the reply with
// parse. A reply parse refuses is asked for once more, the problem named
// (a small model often fixes a format it is told about); a second one is
// a *ReplyError, from which the stage falls back to its deterministic
// result (fellBack). The judge records both calls.
func ask[T any](ctx context.Context, sc *StageContext, callType, stageName, system, prompt string, parse func(string) (T, error)) (T, error) {
	var zero T
	reply, err := sc.Judge(ctx, callType, stageName, system, prompt)
	if err != nil {
		return zero, err
	}
	v, perr := parse(reply)
	if perr == nil {
		return v, nil
	}
	if err := sc.malformed(ctx, callType, perr); err != nil {
		return zero, err
	}
	retry := prompt + "\n\nYour previous reply could not be used: " + clip(perr.Error(), 300) +
		". Reply again with the JSON object only, in the format asked, and nothing else."
	reply, err = sc.Judge(ctx, callType, stageName, system, retry)
	if err != nil {
		return zero, err
	}
	if v, perr = parse(reply); perr != nil {
		if err := sc.malformed(ctx, callType, perr); err != nil {
			return zero, err
		}
		return zero, &ReplyError{CallType: callType, Raw: reply, Err: perr}
	}
	return v, nil
}

// malformed tells sc.Malformed of a reply to callType that perr refused.
func (sc *StageContext) malformed(ctx context.Context, callType string, perr error) error {
	if sc.Malformed == nil {
		return nil
	}
	if err := sc.Malformed(ctx, perr); err != nil {
		return fmt.Errorf("%s: %w", callType, err)
	}
	return nil
}

// fellBack reports whether err is a reply that stayed malformed, and
// then records the warning: the stage goes on with its deterministic
// result.
func fellBack(sc *StageContext, stageName, what string, err error) bool {
	var re *ReplyError
	if !errors.As(err, &re) {
		return false
	}
	sc.Warnings = append(sc.Warnings, fmt.Sprintf("%s: the model's reply was unusable twice (%s: %s): %s",
		stageName, re.CallType, clip(re.Err.Error(), 200), what))
	return true
}

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
	verdicts := map[string]ScopeVerdict{}
	if sc.Judge != nil && len(sc.Candidates) > 0 {
		var err error
		if verdicts, err = judgeScope(ctx, sc); err != nil {
			return err
		}
	}
	kept := sc.Candidates[:0]
	for _, c := range sc.Candidates {
		d := Decision{Stage: "scope", FileID: c.FileID, Path: c.Path, Tier: TierName(c.Tier), Included: true, Reason: strings.Join(c.Reasons, "; ")}
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

// TierName names a scope tier (seed 001 §5.6) as the decisions and the MCP
// localize tool write it.
func TierName(t int) string {
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

// ScopeVerdict is the reasoning model's verdict on one scope candidate.
type ScopeVerdict struct {
	Path     string `json:"path"`
	Relevant bool   `json:"relevant"`
	Reason   string `json:"reason"`
}

// ScopeReply is the reply the scope judgment asks for.
type ScopeReply struct {
	Files []ScopeVerdict `json:"files"`
}

const scopeSystem = `You decide which files of a repository a coding task needs.
For each candidate file, answer whether it is relevant to the task.
Reply with JSON only, an object {"files": [...]} whose list holds one
{"path": "...", "relevant": true|false, "reason": "..."} per candidate,
with the path exactly as given. Keep reasons under 15 words.`

// ScopeBatch is one scope-judgment prompt and the candidates it lists.
type ScopeBatch struct {
	Prompt     string
	Candidates []Candidate
}

// ScopePrompts builds the scope judgment's prompts (seed 001 §5.6): the
// system prompt, and the user prompts of the candidates in batches that
// fit promptTokens (the reasoning window). Inference and the bootstrapped
// training pairs (internal/bootstrap) both build them here.
func ScopePrompts(task TaskQuery, cands []Candidate, promptTokens int) (system string, batches []ScopeBatch) {
	header := "Task:\n" + task.Text + "\n"
	if task.Intent != "" {
		header += "Intent: " + task.Intent + "\n"
	}
	header += "\nCandidates:\n"
	limit := promptChars(promptTokens)
	var (
		lines strings.Builder
		batch []Candidate
	)
	flush := func() {
		if len(batch) > 0 {
			batches = append(batches, ScopeBatch{Prompt: header + lines.String(), Candidates: batch})
		}
		lines.Reset()
		batch = nil
	}
	for _, c := range cands {
		line := fmt.Sprintf("- %s (%s)\n", c.Path, strings.Join(c.Reasons[:min(2, len(c.Reasons))], "; "))
		if len(header)+lines.Len()+len(line) > limit && len(batch) > 0 {
			flush()
		}
		lines.WriteString(line)
		batch = append(batch, c)
	}
	flush()
	return scopeSystem, batches
}

// ParseScopeReply reads a scope judgment's reply, tolerating what small
// models wrap around the JSON; the verdicts come by trimmed path.
func ParseScopeReply(reply string) (map[string]ScopeVerdict, error) {
	var vs ScopeReply
	if err := DecodeReply(reply, &vs); err != nil {
		return nil, err
	}
	out := make(map[string]ScopeVerdict, len(vs.Files))
	for _, v := range vs.Files {
		out[strings.TrimSpace(v.Path)] = v
	}
	return out, nil
}

// judgeScope asks the model about the candidates in batches that fit the
// prompt budget.
func judgeScope(ctx context.Context, sc *StageContext) (map[string]ScopeVerdict, error) {
	out := map[string]ScopeVerdict{}
	system, batches := ScopePrompts(sc.Task, sc.Candidates, sc.PromptTokens)
	for _, b := range batches {
		vs, err := ask(ctx, sc, "scope_judgment", "scope", system, b.Prompt, ParseScopeReply)
		if fellBack(sc, "scope", "the deterministic ranking stands for this batch of candidates", err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for p, v := range vs {
			out[p] = v
		}
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

// PrecisionVerdict is the reasoning model's tier for one symbol.
type PrecisionVerdict struct {
	Path   string `json:"path"`
	Symbol string `json:"symbol"`
	Tier   string `json:"tier"`
}

// PrecisionReply is the reply the precision judgment asks for.
type PrecisionReply struct {
	Symbols []PrecisionVerdict `json:"symbols"`
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
	system, prompt, offeredList := PrecisionPrompt(sc.Task, cs, sc.PromptTokens)
	offered := map[[2]string]bool{}
	for _, c := range offeredList {
		offered[[2]string{c.Path, c.Name}] = true
	}
	verdicts, err := ask(ctx, sc, "precision_judgment", "precision", system, prompt, ParsePrecisionReply)
	if fellBack(sc, "precision", "the deterministic tiers stand", err) {
		return nil
	}
	if err != nil {
		return err
	}
	ignored := 0
	for _, v := range verdicts {
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

// PrecisionPrompt builds the precision judgment's prompt (seed 001 §5.7):
// the system prompt, and the user prompt listing the symbol candidates
// best first, as many as fit promptTokens (the reasoning window), each
// with why it is one. offered are the candidates listed: a verdict on any
// other is ignored. Inference and the bootstrapped training pairs
// (internal/bootstrap) both build it here.
func PrecisionPrompt(task TaskQuery, cs []SymbolCandidate, promptTokens int) (system, prompt string, offered []SymbolCandidate) {
	var b strings.Builder
	b.WriteString("Task:\n" + task.Text + "\n\nSymbols:\n")
	limit := promptChars(promptTokens)
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
		offered = append(offered, c)
	}
	return precisionSystem, b.String(), offered
}

// ParsePrecisionReply reads a precision judgment's reply: every verdict
// must name one of the four tiers.
func ParsePrecisionReply(reply string) ([]PrecisionVerdict, error) {
	var vs PrecisionReply
	if err := DecodeReply(reply, &vs); err != nil {
		return nil, err
	}
	for _, v := range vs.Symbols {
		switch v.Tier {
		case DetailPrimary, DetailSupporting, DetailTypeContext, DetailExcluded:
		default:
			return nil, fmt.Errorf("unknown tier %q for %s", v.Tier, v.Symbol)
		}
	}
	return vs.Symbols, nil
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
	v, err := ask(ctx, sc, llm.CallTaskAnalysis, stage.TaskAnalysis, intentSystem, "Task:\n"+sc.Task.Text, ParseTaskAnalysis)
	if fellBack(sc, "task analysis", "the deterministic extraction stands", err) {
		return nil
	}
	if err != nil {
		return err
	}
	sc.Task.Intent = v.Intent
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

// TaskAnalysis is the reply of task analysis's LLM step: the task's
// intent and type, and the code names and paths it implies.
type TaskAnalysis struct {
	Intent  string   `json:"intent"`
	Type    string   `json:"type"`
	Symbols []string `json:"symbols"`
	Files   []string `json:"files"`
}

// ParseTaskAnalysis reads a task-analysis reply; one without an intent is
// an error. The intent comes trimmed; a type cra does not know is kept
// here and ignored by the pipeline.
func ParseTaskAnalysis(reply string) (TaskAnalysis, error) {
	var v TaskAnalysis
	if err := DecodeReply(reply, &v); err != nil {
		return TaskAnalysis{}, err
	}
	v.Intent = strings.TrimSpace(v.Intent)
	if v.Intent == "" {
		return TaskAnalysis{}, fmt.Errorf("no intent")
	}
	return v, nil
}

// errPromptTaken stops the capture of TaskAnalysisPrompt.
var errPromptTaken = errors.New("prompt taken")

// TaskAnalysisPrompt returns the system and user prompts task analysis
// sends the reasoning model for a task's text: those analyzeIntent builds,
// taken from its call, so the bootstrapped training pairs
// (internal/bootstrap) cannot drift from what inference asks.
func TaskAnalysisPrompt(text string) (system, prompt string) {
	sc := &StageContext{Task: TaskQuery{Text: text}, Judge: func(_ context.Context, _, _, s, p string) (string, error) {
		system, prompt = s, p
		return "", errPromptTaken
	}}
	analyzeIntent(context.Background(), sc) // stops at the capture
	return system, prompt
}
