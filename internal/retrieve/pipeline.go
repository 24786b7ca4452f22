package retrieve

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/stage"
	"github.com/cra-dev/cra/internal/store"
)

// Judge asks the reasoning model for a stage's judgment: it sends system
// and prompt for callType ("task_analysis", "scope_judgment",
// "precision_judgment") and returns the reply text. The caller's
// implementation records the call (seed 001 §4.6 retrieval_llm_calls).
type Judge func(ctx context.Context, callType, stage, system, prompt string) (string, error)

// Stage is one retrieval stage (seed 001 §5.3): a deterministic pre-filter
// followed, when a Judge is present, by an LLM judgment.
type Stage interface {
	Name() string
	Run(ctx context.Context, sc *StageContext) error
}

// StageContext is the state threaded through the stages of one run.
type StageContext struct {
	Task       TaskQuery
	Ranker     *Ranker
	Candidates []Candidate
	// Excluded are candidates a judgment left out, with the reason.
	Excluded map[string]string
	// Details are the precision stage's symbol tiers by path and name.
	Details map[string]map[string]string
	// Symbols are the precision stage's candidates, best first.
	Symbols []SymbolCandidate
	// Linked are the definitions the precision stage reached through a
	// reference, by path and name: at least supporting, never lowered.
	Linked map[string]map[string]bool
	// Judge is nil in deterministic mode.
	Judge Judge
	// Malformed, when set, is told of each Judge reply a stage could not
	// use, right after the Judge call that returned it, so that the
	// caller marks that recorded call malformed; its error (the mark
	// could not be recorded) ends the stage.
	Malformed func(ctx context.Context, problem error) error
	// PromptTokens bounds one stage prompt: the reasoning model's window.
	PromptTokens int
	// Decisions are logged to retrieval_decisions after the run.
	Decisions []Decision
	// Info collects notes for the user (skipped tiers, fallbacks).
	Info []string
	// Warnings are what went wrong without ending the run: a stage whose
	// model replies stayed malformed fell back to its deterministic result.
	Warnings []string
}

// Assembler returns an assembler for what the stages decided: it shares
// the ranker's reads and takes the precision stage's tiers.
func (sc *StageContext) Assembler(root string) *Assembler {
	a := NewAssemblerFor(sc.Ranker, root)
	a.Details, a.Linked = sc.Details, sc.Linked
	return a
}

// Decision is one per-file retrieval decision (seed 001 §4.6).
type Decision struct {
	Stage    string `json:"stage"`
	FileID   int64  `json:"file_id"`
	Path     string `json:"path"`
	Tier     string `json:"tier"`
	Included bool   `json:"included"`
	Reason   string `json:"reason"`
}

// stageRegistry maps stage names to constructors (seed 001 §5.4).
var stageRegistry = map[string]func() Stage{
	stage.Scope:     func() Stage { return &ScopeStage{} },
	stage.Precision: func() Stage { return &PrecisionStage{} },
}

// StageNames lists the registered stages, sorted.
func StageNames() []string { return stage.Retrieval() }

// ParseStages resolves a comma-separated stage list. Every name is checked
// before anything runs; an unknown one is a hard error. Order is the
// caller's (seed 001 §5.4).
func ParseStages(list string) ([]Stage, error) {
	names, err := stage.ParseRetrieval(list)
	if err != nil {
		return nil, err
	}
	out := make([]Stage, len(names))
	for i, n := range names {
		mk, ok := stageRegistry[n]
		if !ok {
			return nil, fmt.Errorf("stage %q has no implementation in retrieve", n)
		}
		out[i] = mk()
	}
	return out, nil
}

// Pipeline runs task analysis, the stages and assembly for one task, and
// records the run (seed 001 §5.1, §11).
type Pipeline struct {
	// KB is the curated index, best over a read-only connection.
	KB *kb.KnowledgeBase
	// Corpus records each stage's decisions (retrieval_decisions); nil
	// skips logging.
	Corpus *corpus.Corpus
	RepoID int64
	Root   string
	// Session is the task's working memory (seed 001 §11); nil skips it.
	Session *store.SessionDB
	// Judge is nil in deterministic mode.
	Judge Judge
	// Malformed is told of each judge reply a stage could not use (see
	// StageContext.Malformed); nil marks nothing.
	Malformed func(ctx context.Context, problem error) error
	// PromptTokens bounds each stage prompt (the reasoning model's window).
	PromptTokens int
	// Candidates is how many ranked files the scope stage considers.
	Candidates int
	// PlanFiles are a plan's files: tier-0 seeds ahead of everything the
	// task analysis finds (implement mode with --plan, seed 001 §5.6).
	PlanFiles []string
	// Weights rank the files; nil: WeightsFor chooses (the repository's
	// own, learned by 'cra tune', when they won; DefaultWeights else).
	Weights *Weights
}

// Result is a pipeline run's output.
type Result struct {
	Package   *Package     `json:"package"`
	Stages    []string     `json:"stages"`
	Decisions []Decision   `json:"decisions"`
	Info      []string     `json:"info,omitempty"`
	Warnings  []string     `json:"warnings,omitempty"`
	Context   StageContext `json:"-"`
}

// Run retrieves context for task within budget.
func (p *Pipeline) Run(ctx context.Context, taskID, task string, stages []Stage, b Budget) (*Result, error) {
	if strings.TrimSpace(task) == "" {
		return nil, ErrEmptyTask
	}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	q := Analyze(task)
	q.PlanFiles = appendNew(q.PlanFiles, p.PlanFiles...)
	sc, err := p.newStageContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if p.Judge != nil {
		if err := analyzeIntent(ctx, sc); err != nil {
			return nil, err
		}
	}
	if err := p.runStages(ctx, taskID, sc, stages); err != nil {
		return nil, err
	}
	return p.finish(ctx, taskID, sc, stages, b)
}

// Localize ranks the repository's files for task and returns the first
// n, best first, with their reasons: the candidates the deterministic
// scope stage hands on, which 'cra retrieve --deterministic' assembles
// and the retrieval harness (bench/retrieval) scores. It asks the ranker
// for at least the scope stage's number of candidates and twice n, so
// the first n are those a longer ranking puts first: full-text recall
// takes at most half the places, at the end.
func (p *Pipeline) Localize(ctx context.Context, task string, n int) (TaskQuery, []Candidate, error) {
	if strings.TrimSpace(task) == "" {
		return TaskQuery{}, nil, ErrEmptyTask
	}
	if n <= 0 {
		return TaskQuery{}, nil, fmt.Errorf("localize: want at least one file, got %d", n)
	}
	limit := max(p.Candidates, defaultCandidates, 2*n)
	q := Analyze(task)
	q.PlanFiles = appendNew(q.PlanFiles, p.PlanFiles...)
	sc, err := p.newStageContext(ctx, q)
	if err != nil {
		return q, nil, err
	}
	cands, err := sc.Ranker.Rank(ctx, q, limit)
	if err != nil {
		return q, nil, err
	}
	return q, cands[:min(n, len(cands))], nil
}

// Refine re-enters the pipeline for a refinement (seed 001 §13): it reads
// the task's final_context and the refinement_request that the executor
// wrote to the session, makes the missing files and symbols seeds of the
// task, runs the stages again, and writes the new package's final_context
// and stage_progress back.
func (p *Pipeline) Refine(ctx context.Context, taskID string, stages []Stage, b Budget) (*Result, error) {
	if p.Session == nil {
		return nil, errors.New("refine: no session: the refinement is read from the task's session DB")
	}
	var prev struct {
		Task *TaskQuery `json:"task"`
	}
	if ok, err := p.Session.Load(ctx, "final_context", &prev); err != nil {
		return nil, fmt.Errorf("refine: final_context: %w", err)
	} else if !ok || prev.Task == nil {
		return nil, errors.New("refine: no final_context in the session: run retrieval for the task first")
	}
	var req RefinementRequest
	if ok, err := p.Session.Load(ctx, "refinement_request", &req); err != nil {
		return nil, fmt.Errorf("refine: refinement_request: %w", err)
	} else if !ok {
		return nil, errors.New("refine: no refinement_request in the session: write it before re-entering")
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	q := *prev.Task
	q.Files = appendNew(q.Files, req.MissingFiles...)
	q.Symbols = appendNew(q.Symbols, req.MissingSymbols...)
	for _, t := range req.MissingTests {
		files, symbols := testRef(t)
		q.Files = appendNew(q.Files, files...)
		q.Symbols = appendNew(q.Symbols, symbols...)
	}
	for _, sig := range req.ErrorSignatures {
		extra := Analyze(sig)
		q.FileLines = append(q.FileLines, extra.FileLines...)
		q.Files = appendNew(q.Files, extra.Files...)
		q.Symbols = appendNew(q.Symbols, extra.Symbols...)
		q.Errors = appendNew(q.Errors, extra.Errors...)
		q.Keywords = appendNew(q.Keywords, extra.Keywords...)
	}
	sc, err := p.newStageContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if err := p.runStages(ctx, taskID, sc, stages); err != nil {
		return nil, err
	}
	return p.finish(ctx, taskID, sc, stages, b)
}

// testRef reads a missing test as a model names one: a file
// ("tests/test_x.py"), a test's name ("test_once", "TestParse"), or
// both as a pytest node ID ("tests/test_x.py::TestX::test_once").
func testRef(t string) (files, symbols []string) {
	parts := strings.Split(strings.TrimSpace(t), "::")
	if looksLikeFile(parts[0]) {
		files, parts = append(files, parts[0]), parts[1:]
	}
	for _, p := range parts {
		// A parametrised case ("test_x[a-b]") and a Go subtest
		// ("TestParse/empty") are their function.
		if name, _, _ := strings.Cut(p, "["); name != "" {
			if name, _, _ = strings.Cut(name, "/"); name != "" {
				symbols = append(symbols, name)
			}
		}
	}
	return files, symbols
}

func (p *Pipeline) newStageContext(ctx context.Context, q TaskQuery) (*StageContext, error) {
	rk := NewRanker(p.KB, p.RepoID)
	rk.Root = p.Root
	sc := &StageContext{
		Task: q, Ranker: rk, Excluded: map[string]string{},
		Judge: p.Judge, Malformed: p.Malformed, PromptTokens: p.PromptTokens,
	}
	if p.Weights != nil {
		rk.Weights = *p.Weights
		return sc, nil
	}
	c, err := WeightsFor(ctx, p.KB, p.RepoID)
	if err != nil {
		return nil, err
	}
	rk.Weights = c.Weights
	if c.Source == WeightsRepository {
		sc.Info = append(sc.Info, "ranked with the repository's own weights, learned by 'cra tune' ('cra tune --forget' goes back to the global ones)")
	}
	return sc, nil
}

// runStages runs the stages in order. Each stage's decisions are logged
// as it finishes, so a later stage's failure loses none of them.
func (p *Pipeline) runStages(ctx context.Context, taskID string, sc *StageContext, stages []Stage) error {
	limit := p.Candidates
	if limit <= 0 {
		limit = defaultCandidates
	}
	// Before any stage (seed 001 §14.4): without promoted enrichment the
	// ranking has no Tier 4, whichever stages run.
	promoted, err := p.KB.EnrichmentPromoted(ctx, p.RepoID)
	if err != nil {
		return fmt.Errorf("check enrichment: %w", err)
	}
	if !promoted {
		sc.Info = append(sc.Info, "enrichment not found, Tier 4 skipped")
	}
	var progress []map[string]string
	outputs := map[string]any{}
	for _, st := range stages {
		// The scope stage ranks; a pipeline without it still needs
		// candidates for the stages after.
		if sc.Candidates == nil && st.Name() != "scope" {
			if err := (&ScopeStage{Limit: limit}).rank(ctx, sc); err != nil {
				return err
			}
		}
		if s, ok := st.(*ScopeStage); ok && s.Limit == 0 {
			s.Limit = limit
		}
		logged := len(sc.Decisions)
		if err := st.Run(ctx, sc); err != nil {
			return fmt.Errorf("stage %s: %w", st.Name(), err)
		}
		if p.Corpus != nil {
			if err := p.Corpus.LogDecisions(ctx, taskID, corpusDecisions(sc.Decisions[logged:])); err != nil {
				return err
			}
		}
		progress = append(progress, map[string]string{"stage": st.Name(), "status": "done"})
		outputs[st.Name()] = stageOutput(st.Name(), sc)
		if p.Session != nil {
			if err := p.Session.Set(ctx, "stage_progress", progress); err != nil {
				return err
			}
			if err := p.Session.Set(ctx, "stage_outputs", outputs); err != nil {
				return err
			}
		}
	}
	return nil
}

func stageOutput(name string, sc *StageContext) any {
	if name == "precision" {
		return map[string]any{"details": sc.Details, "symbols": sc.Symbols[:min(len(sc.Symbols), 40)]}
	}
	paths := make([]string, len(sc.Candidates))
	for i, c := range sc.Candidates {
		paths[i] = c.Path
	}
	return map[string]any{"included": paths, "excluded": sc.Excluded}
}

func (p *Pipeline) finish(ctx context.Context, taskID string, sc *StageContext, stages []Stage, b Budget) (*Result, error) {
	pkg, err := sc.Assembler(p.Root).Assemble(ctx, sc.Task, sc.Candidates, b)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(stages))
	for i, s := range stages {
		names[i] = s.Name()
	}
	res := &Result{Package: pkg, Stages: names, Decisions: sc.Decisions, Info: sc.Info, Warnings: sc.Warnings, Context: *sc}
	if p.Session != nil {
		if err := p.Session.Set(ctx, "final_context", map[string]any{"task": sc.Task, "candidates": sc.Candidates, "details": sc.Details, "excluded": sc.Excluded}); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// corpusDecisions are ds as the raw database records them (without the
// path, which the curated file id names).
func corpusDecisions(ds []Decision) []corpus.Decision {
	out := make([]corpus.Decision, len(ds))
	for i, d := range ds {
		out[i] = corpus.Decision{Stage: d.Stage, FileID: d.FileID, Tier: d.Tier, Included: d.Included, Reason: d.Reason}
	}
	return out
}

// RefinementRequest asks for more context with concrete evidence (seed
// 001 §13).
type RefinementRequest struct {
	Reason          string   `json:"reason"`
	MissingFiles    []string `json:"missing_files"`
	MissingSymbols  []string `json:"missing_symbols"`
	MissingTests    []string `json:"missing_tests"`
	ErrorSignatures []string `json:"error_signatures"`
}

// Validate refuses a request without evidence: "needs more context" alone
// is not a reason to re-run retrieval (seed 001 §13).
func (r RefinementRequest) Validate() error {
	if len(r.MissingFiles)+len(r.MissingSymbols)+len(r.MissingTests)+len(r.ErrorSignatures) == 0 {
		return errors.New("refinement request without evidence: name missing files, symbols, tests or error signatures")
	}
	return nil
}

func appendNew(list []string, vals ...string) []string {
	for _, v := range vals {
		if v != "" && !slices.Contains(list, v) {
			list = append(list, v)
		}
	}
	return list
}
