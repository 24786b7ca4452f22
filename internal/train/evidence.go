package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/dataset"
)

// The log-analysis stages of train-plan (seed 001 §8.3: "identify weak
// pipeline stages, failure patterns, outcome correlations"). Each reads
// the raw database through the LogAnalysisAPI and adds a section of
// evidence to the planning prompt.
const (
	// StageRates: each pipeline stage's calls and the success rate of the
	// runs they served; it finds the weakest stage.
	StageRates = "stage_rates"
	// FailurePatterns: failing tests, call errors, edits that did not
	// apply, grouped and counted.
	FailurePatterns = "failure_patterns"
	// DecisionOutcomes: the retrieval decisions of successful and failed
	// runs.
	DecisionOutcomes = "decision_outcomes"
)

// AnalysisStages lists the log-analysis stages in their order.
var AnalysisStages = []string{StageRates, FailurePatterns, DecisionOutcomes}

// ParseStages reads a comma-separated list of log-analysis stages.
func ParseStages(list string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !slices.Contains(AnalysisStages, s) {
			return nil, fmt.Errorf("unknown log-analysis stage %q: use %s (train-plan reads the logs, not the code)", s, strings.Join(AnalysisStages, ", "))
		}
		if slices.Contains(out, s) {
			return nil, fmt.Errorf("log-analysis stage %q is listed twice", s)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no log-analysis stage: use some of %s", strings.Join(AnalysisStages, ", "))
	}
	return out, nil
}

// ErrNoRuns is train-plan's preflight failure (seed 001 §14.3, §15): the
// raw database holds no logged runs to learn from.
var ErrNoRuns = errors.New("no logged runs in .clean_room/raw.sqlite: train-plan learns from cra's own runs, " +
	"so run some first ('cra solve TASK' or 'cra plan TASK' log every call and outcome), " +
	"or bootstrap training data from a repository's history with 'cra bootstrap REPO' and plan from it with --source synthetic")

// ErrNoSynthetic is the preflight failure of --source synthetic.
var ErrNoSynthetic = errors.New("no bootstrapped (synthetic) datasets in .clean_room/raw.sqlite: run 'cra bootstrap REPO' first, " +
	"or plan from logged runs ('cra solve TASK', then 'cra train-plan' without --source synthetic)")

// Evidence is what the log-analysis stages found (seed 001 §8.3).
type Evidence struct {
	Source string `json:"source"`
	// Chosen says Source was not given: there were no logged runs, so
	// the bootstrapped datasets are planned from.
	Chosen bool     `json:"source_chosen,omitempty"`
	Stages []string `json:"analysis_stages"`
	// Modes are the task runs by mode.
	Modes []corpus.ModeOutcome `json:"runs"`
	// Rates are the pipeline stages' statistics (stage_rates).
	Rates []corpus.StageStat `json:"stage_rates,omitempty"`
	// Failures are the most frequent failures (failure_patterns).
	Failures []corpus.FailurePattern `json:"failure_patterns,omitempty"`
	// Decisions are the retrieval decisions by outcome
	// (decision_outcomes).
	Decisions []corpus.DecisionStat `json:"decision_outcomes,omitempty"`
	// Synthetic counts the bootstrapped examples of each stage.
	Synthetic map[string]int `json:"synthetic_examples,omitempty"`
	// Weakest is the stage to train and Why the numbers that say so.
	Weakest string `json:"weakest_stage"`
	Why     string `json:"why"`
	// Baseline is the weakest stage's run success rate (0 when unknown).
	Baseline float64 `json:"baseline"`
	// pinned: the user named the stage; the model may not choose another.
	pinned bool
}

// maxFailures bounds the failure patterns read; the prompt may show fewer.
const maxFailures = 20

// Gather runs the log-analysis stages over c, checking first that there is
// something to learn from (ErrNoRuns, ErrNoSynthetic). source "" chooses:
// logged runs when there are some, else bootstrapped datasets when there
// are some (Evidence.Chosen says so), else ErrNoRuns. target, when not
// "", is the stage to train, named by the user; otherwise the weakest
// stage is found, which needs stage_rates (or, from synthetic data only,
// the stage with the most examples).
func Gather(ctx context.Context, c *corpus.Corpus, source string, stages []string, target string) (*Evidence, error) {
	e := &Evidence{Source: source, Stages: stages, Synthetic: map[string]int{}}
	logged, err := c.HasRuns(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the raw database: %w", err)
	}
	ds, err := c.Datasets(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("read the raw database: %w", err)
	}
	// A stage's newest bootstrapped dataset, the one curate-data mixes in:
	// a rerun (--force, other settings) replaces an earlier run's pairs
	// rather than adding to them, which would count them twice.
	for _, d := range ds { // newest first
		if _, seen := e.Synthetic[d.Stage]; d.Source == corpus.SourceSynthetic && !seen {
			e.Synthetic[d.Stage] = d.Examples
		}
	}
	if source == "" {
		source = corpus.SourceLogged
		if !logged && len(e.Synthetic) > 0 {
			source, e.Chosen = corpus.SourceSynthetic, true
		}
		e.Source = source
	}
	switch source {
	case corpus.SourceLogged:
		if !logged {
			return nil, ErrNoRuns
		}
	case corpus.SourceSynthetic:
		if len(e.Synthetic) == 0 {
			return nil, ErrNoSynthetic
		}
	default:
		return nil, fmt.Errorf("unknown source %q: use %s or %s", source, corpus.SourceLogged, corpus.SourceSynthetic)
	}
	if target != "" {
		if err := dataset.CheckStage(target); err != nil {
			return nil, err
		}
	}
	if !slices.Contains(stages, StageRates) && target == "" {
		return nil, fmt.Errorf("the log-analysis stages lack %s, which finds the stage to train: add it, or name the stage with --target", StageRates)
	}
	if logged {
		if e.Modes, err = c.ModeOutcomes(ctx); err != nil {
			return nil, fmt.Errorf("analyse runs: %w", err)
		}
	}
	for _, s := range stages {
		switch s {
		case StageRates:
			all, err := c.StageStats(ctx)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s, err)
			}
			for _, st := range all {
				if dataset.BaseModel(st.Stage) != "" {
					e.Rates = append(e.Rates, st)
				}
			}
		case FailurePatterns:
			if e.Failures, err = c.FailurePatterns(ctx, maxFailures); err != nil {
				return nil, fmt.Errorf("%s: %w", s, err)
			}
		case DecisionOutcomes:
			if e.Decisions, err = c.DecisionStats(ctx); err != nil {
				return nil, fmt.Errorf("%s: %w", s, err)
			}
		}
	}
	e.pinned = target != ""
	e.pickWeakest(target)
	if e.Weakest == "" {
		return nil, errors.New("the logs link no pipeline stage to a run's outcome yet: run 'cra solve TASK' or 'cra plan TASK' " +
			"(standalone retrievals have no outcome), name the stage with --target, or plan from bootstrapped data with --source synthetic")
	}
	return e, nil
}

// pickWeakest sets Weakest: target when given; else the stage whose runs
// succeed least often (ties: more failed calls, then pipeline order); else,
// from synthetic data, the stage with the most bootstrapped examples.
func (e *Evidence) pickWeakest(target string) {
	rate := func(stage string) (corpus.StageStat, float64, bool) {
		for _, s := range e.Rates {
			if s.Stage == stage {
				r, ok := s.SuccessRate()
				return s, r, ok
			}
		}
		return corpus.StageStat{}, 0, false
	}
	if target != "" {
		e.Weakest = target
		if s, r, ok := rate(target); ok {
			e.Baseline = r
			e.Why = fmt.Sprintf("named with --target; %s", describe(s, r))
		} else {
			e.Why = "named with --target; the logs link no run outcome to it"
		}
		return
	}
	best, bestRate := corpus.StageStat{}, math.Inf(1)
	for _, stage := range dataset.Stages {
		s, r, ok := rate(stage)
		if !ok {
			continue
		}
		if r < bestRate || (r == bestRate && s.Failed > best.Failed) {
			best, bestRate = s, r
		}
	}
	if best.Stage != "" {
		e.Weakest, e.Baseline = best.Stage, bestRate
		e.Why = "lowest run success rate: " + describe(best, bestRate)
		return
	}
	if e.Source == corpus.SourceSynthetic {
		most := 0
		for _, stage := range dataset.Stages {
			if n := e.Synthetic[stage]; n > most {
				e.Weakest, most = stage, n
			}
		}
		if e.Weakest != "" {
			e.Why = fmt.Sprintf("no logged run outcome names a weak stage; %s has the most bootstrapped examples (%d)", e.Weakest, most)
		}
	}
}

func describe(s corpus.StageStat, r float64) string {
	return fmt.Sprintf("%s served %d run(s) with an outcome, %d succeeded (%.0f%%); %d call(s), %d failed",
		s.Stage, s.Runs, s.RunsSucceeded, 100*r, s.Calls, s.Failed)
}

// Prompt renders the evidence for the reasoning model within maxTokens
// (chars/4): the sections of the stages run, failure patterns dropped from
// the least frequent until it fits.
func (e *Evidence) Prompt(maxTokens int) (string, error) {
	failures := len(e.Failures)
	for {
		p := e.render(failures)
		if len(p)/4 <= maxTokens {
			return p, nil
		}
		if failures == 0 {
			return "", fmt.Errorf("the planning prompt needs about %d tokens but the budget leaves %d: raise --context-window or lower --reserved-tokens", len(p)/4, maxTokens)
		}
		failures--
	}
}

func (e *Evidence) render(failures int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Plan the next LoRA adapter for cra, a coding agent whose pipeline stages are %s.\n", strings.Join(dataset.Stages, ", "))
	fmt.Fprintf(&b, "Training data source: %s.\n\n", e.Source)
	if len(e.Modes) > 0 {
		b.WriteString("## Runs\nmode | runs | finished | succeeded\n")
		for _, m := range e.Modes {
			fmt.Fprintf(&b, "%s | %d | %d | %d\n", m.Mode, m.Runs, m.Finished, m.Succeeded)
		}
		b.WriteString("\n")
	}
	if slices.Contains(e.Stages, StageRates) {
		b.WriteString("## Stages\nstage | calls | failed calls | runs with outcome | runs succeeded | success rate\n")
		for _, s := range e.Rates {
			rate := "n/a"
			if r, ok := s.SuccessRate(); ok {
				rate = fmt.Sprintf("%.2f", r)
			}
			fmt.Fprintf(&b, "%s | %d | %d | %d | %d | %s\n", s.Stage, s.Calls, s.Failed, s.Runs, s.RunsSucceeded, rate)
		}
		if len(e.Rates) == 0 {
			b.WriteString("(no stage calls logged)\n")
		}
		b.WriteString("\n")
	}
	if slices.Contains(e.Stages, FailurePatterns) {
		b.WriteString("## Failure patterns\nkind | stage | pattern | count | runs\n")
		for _, f := range e.Failures[:failures] {
			fmt.Fprintf(&b, "%s | %s | %s | %d | %d\n", f.Kind, f.Stage, f.Pattern, f.Count, f.Runs)
		}
		if failures == 0 {
			b.WriteString("(none)\n")
		}
		b.WriteString("\n")
	}
	if slices.Contains(e.Stages, DecisionOutcomes) {
		b.WriteString("## Retrieval decisions\nstage | included | excluded | included in successful runs | included in failed runs\n")
		for _, d := range e.Decisions {
			fmt.Fprintf(&b, "%s | %d | %d | %d | %d\n", d.Stage, d.Included, d.Excluded, d.IncludedInSuccess, d.IncludedInFailure)
		}
		if len(e.Decisions) == 0 {
			b.WriteString("(none)\n")
		}
		b.WriteString("\n")
	}
	if len(e.Synthetic) > 0 {
		b.WriteString("## Bootstrapped examples\nstage | examples\n")
		for _, s := range dataset.Stages {
			if n, ok := e.Synthetic[s]; ok {
				fmt.Fprintf(&b, "%s | %d\n", s, n)
			}
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "## Weakest stage\n%s (%s)\n\n", e.Weakest, e.Why)
	b.WriteString(replyFormat(e.candidates()))
	return b.String()
}

// candidates are the stages the model may choose: the weakest, and the
// others with evidence of their own.
func (e *Evidence) candidates() []string {
	out := []string{e.Weakest}
	if e.pinned {
		return out
	}
	for _, s := range dataset.Stages {
		if s == e.Weakest {
			continue
		}
		has := e.Synthetic[s] > 0
		for _, r := range e.Rates {
			has = has || (r.Stage == s && r.Runs > 0)
		}
		if has {
			out = append(out, s)
		}
	}
	return out
}
