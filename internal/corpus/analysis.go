package corpus

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// This file is the LogAnalysisAPI of seed 001 §12: the raw database's
// counterpart of the knowledge base, read by the training modes (§8.3,
// §8.4). It links what the pipeline's stages did to how the runs they
// served ended, through task_id (§8.3's quality signal: retrieval_llm_calls
// joined with task_runs.success).
//
// A stage's calls are the retrieval calls (task analysis, whose
// stage_name may be NULL, is stage "task_analysis"; the judgments are
// "scope", "precision") and the calls outside retrieval that name a stage
// (cra plan's "execute_plan", cra solve's "execute_code", in llm_calls).
// A call is linked to the task_runs row with its task_id: a board run is
// recorded under its run id ("ID.rN") by the run and by every call it
// makes, so the link is exact. A run's outcome is the quality signal only
// for modes whose success says the work was right (plan, implement); a
// standalone retrieval succeeds when the pipeline ends, which says nothing
// of its judgments, so its calls count as having no outcome.

// stageCalls is the query prefix of every logged call that serves a
// pipeline stage, from both call tables, with its run's outcome
// (run_success NULL when it has none), as the table "linked". Without
// oneStage they are every stage's calls without their text, which keeps
// the statistics' union small; with it, those of the stage given twice as
// the first arguments (filtered in each table before the union), with
// their text (system, prompt, response).
func stageCalls(oneStage bool) string {
	retrievalText, text, retrievalWhere, generalWhere := "", "", "", "stage IS NOT NULL AND stage != ''"
	if oneStage {
		retrievalText, text = ", c.timestamp, c.model, d.system, c.prompt, c.response", ", timestamp, model, system, prompt, response"
		retrievalWhere, generalWhere = "WHERE COALESCE(c.stage_name, c.call_type) = ?", "stage = ?"
	}
	return `WITH calls AS (
	SELECT 'retrieval_llm_calls' AS tbl, c.id, c.task_id, COALESCE(c.stage_name, c.call_type) AS stage, c.call_type,
		d.error` + retrievalText + `
	FROM retrieval_llm_calls c LEFT JOIN retrieval_llm_call_details d ON d.call_id = c.id ` + retrievalWhere + `
	UNION ALL
	SELECT 'llm_calls', id, task_id, stage, call_type, error` + text + `
	FROM llm_calls WHERE ` + generalWhere + `
), linked AS (
	SELECT k.*, r.mode AS run_mode,
		CASE WHEN r.mode IN ('plan', 'implement') THEN r.success END AS run_success
	FROM calls k LEFT JOIN task_runs r ON r.task_id = k.task_id
)
`
}

// StageStat is what the log says of one stage: its calls, and the
// outcomes of the runs they served.
type StageStat struct {
	Stage string `json:"stage"`
	// Calls are the calls recorded; Failed those that got no usable reply
	// (the call failed).
	Calls  int `json:"calls"`
	Failed int `json:"failed"`
	// Linked are the calls whose run has an outcome; Succeeded those
	// whose run succeeded.
	Linked    int `json:"linked"`
	Succeeded int `json:"succeeded"`
	// Runs and RunsSucceeded count the distinct runs with an outcome the
	// stage served, and those that succeeded.
	Runs          int `json:"runs"`
	RunsSucceeded int `json:"runs_succeeded"`
}

// SuccessRate is the share of the stage's runs with an outcome that
// succeeded, and false when it served none.
func (s StageStat) SuccessRate() (float64, bool) {
	if s.Runs == 0 {
		return 0, false
	}
	return float64(s.RunsSucceeded) / float64(s.Runs), true
}

// StageStats returns the per-stage statistics of the logged calls, by
// stage name.
func (c *Corpus) StageStats(ctx context.Context) ([]StageStat, error) {
	rows, err := c.db.QueryContext(ctx, stageCalls(false)+`SELECT stage, COUNT(*), COALESCE(SUM(error IS NOT NULL), 0),
		COALESCE(SUM(run_success IS NOT NULL), 0), COALESCE(SUM(run_success = 1), 0),
		COUNT(DISTINCT CASE WHEN run_success IS NOT NULL THEN task_id END),
		COUNT(DISTINCT CASE WHEN run_success = 1 THEN task_id END)
		FROM linked GROUP BY stage ORDER BY stage`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []StageStat
	for rows.Next() {
		var s StageStat
		if err := rows.Scan(&s.Stage, &s.Calls, &s.Failed, &s.Linked, &s.Succeeded, &s.Runs, &s.RunsSucceeded); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// ModeOutcome counts the task runs of one mode and how they ended.
type ModeOutcome struct {
	Mode      string `json:"mode"`
	Runs      int    `json:"runs"`
	Finished  int    `json:"finished"` // success is set
	Succeeded int    `json:"succeeded"`
}

// ModeOutcomes returns the task runs' outcomes by mode.
func (c *Corpus) ModeOutcomes(ctx context.Context) ([]ModeOutcome, error) {
	rows, err := c.db.QueryContext(ctx, `SELECT mode, COUNT(*), COALESCE(SUM(success IS NOT NULL), 0), COALESCE(SUM(success = 1), 0)
		FROM task_runs GROUP BY mode ORDER BY mode`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ModeOutcome
	for rows.Next() {
		var m ModeOutcome
		if err := rows.Scan(&m.Mode, &m.Runs, &m.Finished, &m.Succeeded); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// The kinds of failure pattern.
const (
	// FailingTest is a test that failed a validation, counted over the
	// attempts it failed.
	FailingTest = "failing_test"
	// CallError is a call's error, by stage and first line.
	CallError = "call_error"
	// PatchNotApplied counts attempts whose edits did not apply: the
	// reply did not parse or did not match the files.
	PatchNotApplied = "patch_not_applied"
	// ValidationFailed counts validations that failed without naming a
	// failing test (lint, type check, a build error).
	ValidationFailed = "validation_failed"
)

// FailurePattern is one recurring failure of the logged runs.
type FailurePattern struct {
	Kind    string `json:"kind"`    // FailingTest, CallError, PatchNotApplied or ValidationFailed
	Stage   string `json:"stage"`   // the stage it belongs to: execute_code for attempts
	Pattern string `json:"pattern"` // the test's name, the error's first line; "" for counts
	Count   int    `json:"count"`
	Runs    int    `json:"runs"`    // distinct runs it happened in
	Example string `json:"example"` // the task id of one run it happened in
}

// maxPattern bounds the text of a pattern (an error's first line).
const maxPattern = 200

// FailurePatterns returns the failures of the logged runs, most frequent
// first (then by kind and pattern), at most limit of them (0: all).
func (c *Corpus) FailurePatterns(ctx context.Context, limit int) ([]FailurePattern, error) {
	var out []FailurePattern
	// Failing tests and attempts, from run_attempts and validation_results.
	rows, err := c.db.QueryContext(ctx, `SELECT r.task_id, a.patch_applied, v.success, v.failing_tests
		FROM run_attempts a JOIN task_runs r ON r.id = a.task_run_id
		LEFT JOIN validation_results v ON v.attempt_id = a.id ORDER BY a.id`)
	if err != nil {
		return nil, err
	}
	type key struct{ kind, stage, pattern string }
	type acc struct {
		count   int
		runs    map[string]bool
		example string
	}
	groups := map[key]*acc{}
	add := func(k key, task string) {
		g := groups[k]
		if g == nil {
			g = &acc{runs: map[string]bool{}, example: task}
			groups[k] = g
		}
		g.count++
		g.runs[task] = true
	}
	for rows.Next() {
		var task string
		var applied bool
		var success sql.NullBool
		var failing sql.NullString
		if err := rows.Scan(&task, &applied, &success, &failing); err != nil {
			rows.Close()
			return nil, err
		}
		if !applied {
			add(key{PatchNotApplied, "execute_code", ""}, task)
		}
		if !success.Valid || success.Bool {
			continue
		}
		var tests []string
		if failing.Valid {
			json.Unmarshal([]byte(failing.String), &tests) // a malformed list names no test
		}
		if len(tests) == 0 {
			add(key{ValidationFailed, "execute_code", ""}, task)
		}
		for _, t := range tests {
			add(key{FailingTest, "execute_code", clipLine(t)}, task)
		}
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	// Call errors, by stage and first line.
	rows, err = c.db.QueryContext(ctx, stageCalls(false)+`SELECT stage, COALESCE(task_id, ''), error FROM linked WHERE error IS NOT NULL ORDER BY tbl, id`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var stage, task, msg string
		if err := rows.Scan(&stage, &task, &msg); err != nil {
			rows.Close()
			return nil, err
		}
		add(key{CallError, stage, clipLine(msg)}, task)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	for k, g := range groups {
		out = append(out, FailurePattern{Kind: k.kind, Stage: k.stage, Pattern: k.pattern, Count: g.count, Runs: len(g.runs), Example: g.example})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Stage != b.Stage {
			return a.Stage < b.Stage
		}
		return a.Pattern < b.Pattern
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// clipLine is the first line of s, trimmed and bounded.
func clipLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	s = strings.TrimSpace(s)
	if len(s) > maxPattern {
		s = strings.ToValidUTF8(s[:maxPattern], "") + "…"
	}
	return s
}

// DecisionStat is what one retrieval stage decided, split by the outcome
// of the runs the decisions were part of (seed 001 §16.2).
type DecisionStat struct {
	Stage    string `json:"stage"`
	Included int    `json:"included"`
	Excluded int    `json:"excluded"`
	// IncludedInSuccess and IncludedInFailure are the included decisions
	// of runs that succeeded and failed.
	IncludedInSuccess int `json:"included_in_success"`
	IncludedInFailure int `json:"included_in_failure"`
}

// DecisionStats returns the retrieval decisions by stage.
func (c *Corpus) DecisionStats(ctx context.Context) ([]DecisionStat, error) {
	rows, err := c.db.QueryContext(ctx, `SELECT d.stage, COALESCE(SUM(d.included = 1), 0), COALESCE(SUM(d.included = 0), 0),
		COALESCE(SUM(d.included = 1 AND r.mode IN ('plan', 'implement') AND r.success = 1), 0),
		COALESCE(SUM(d.included = 1 AND r.mode IN ('plan', 'implement') AND r.success = 0), 0)
		FROM retrieval_decisions d LEFT JOIN task_runs r ON r.task_id = d.task_id
		GROUP BY d.stage ORDER BY d.stage`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []DecisionStat
	for rows.Next() {
		var s DecisionStat
		if err := rows.Scan(&s.Stage, &s.Included, &s.Excluded, &s.IncludedInSuccess, &s.IncludedInFailure); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// The outcomes a CallFilter selects on.
const (
	OutcomeAny      = ""         // every call, with an outcome or not
	OutcomeFinished = "finished" // calls of runs with an outcome
	OutcomeSuccess  = "success"  // calls of runs that succeeded
	OutcomeFailure  = "failure"  // calls of runs that failed
)

// CallFilter selects logged calls (seed 001 §16.2).
type CallFilter struct {
	// Stage is the stage the calls served; required.
	Stage string
	// Outcome is one of the Outcome constants.
	Outcome string
	// WithDecisions keeps only calls whose run recorded an included
	// retrieval decision of the stage: judgments that were part of the
	// run's context.
	WithDecisions bool
	// Accepted leaves out the replies an attempt of their run rejected:
	// its edits did not apply, or its validation failed. A run that
	// succeeded on its second attempt logged its first reply too.
	Accepted bool
	// Limit bounds the calls returned, newest kept; 0 is no bound.
	Limit int
}

// LoggedCall is one logged call that served a stage, with its run's
// outcome.
type LoggedCall struct {
	Table    string // retrieval_llm_calls or llm_calls
	ID       int64  // the row id in Table
	TaskID   string
	Stage    string
	Type     string
	Model    string
	System   string
	Prompt   string
	Response string
	Time     time.Time
	// RunMode is the mode of the run the call served; "" when none was
	// recorded.
	RunMode string
	// Outcome is whether the run succeeded; invalid when it has no
	// outcome.
	Outcome sql.NullBool
}

// LoggedCalls returns the calls that served f.Stage and got a reply
// (failed calls have nothing to learn from), oldest first.
func (c *Corpus) LoggedCalls(ctx context.Context, f CallFilter) ([]LoggedCall, error) {
	if f.Stage == "" {
		return nil, fmt.Errorf("logged calls: no stage")
	}
	where := []string{"error IS NULL"}
	args := []any{f.Stage, f.Stage}
	switch f.Outcome {
	case OutcomeAny:
	case OutcomeFinished:
		where = append(where, "run_success IS NOT NULL")
	case OutcomeSuccess:
		where = append(where, "run_success = 1")
	case OutcomeFailure:
		where = append(where, "run_success = 0")
	default:
		return nil, fmt.Errorf("logged calls: unknown outcome %q: use %q, %q or %q", f.Outcome, OutcomeFinished, OutcomeSuccess, OutcomeFailure)
	}
	if f.WithDecisions {
		where = append(where, `EXISTS (SELECT 1 FROM retrieval_decisions d WHERE d.task_id = linked.task_id AND d.stage = linked.stage AND d.included = 1)`)
	}
	if f.Accepted {
		where = append(where, `NOT EXISTS (SELECT 1 FROM run_attempts a JOIN task_runs r ON r.id = a.task_run_id
			WHERE r.task_id = linked.task_id AND a.raw_response = linked.response
			AND (a.patch_applied = 0 OR EXISTS (SELECT 1 FROM validation_results v WHERE v.attempt_id = a.id AND v.success = 0)))`)
	}
	q := stageCalls(true) + `SELECT tbl, id, COALESCE(task_id, ''), stage, call_type, model, COALESCE(system, ''), prompt, response, timestamp,
		COALESCE(run_mode, ''), run_success FROM linked WHERE ` + strings.Join(where, " AND ") + ` ORDER BY timestamp DESC, tbl, id DESC`
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	rows, err := c.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []LoggedCall
	for rows.Next() {
		var l LoggedCall
		var ts string
		if err := rows.Scan(&l.Table, &l.ID, &l.TaskID, &l.Stage, &l.Type, &l.Model, &l.System, &l.Prompt, &l.Response, &ts,
			&l.RunMode, &l.Outcome); err != nil {
			return nil, err
		}
		if l.Time, err = time.Parse(TimestampFormat, ts); err != nil {
			return nil, fmt.Errorf("logged call %s %d: timestamp %q: %w", l.Table, l.ID, ts, err)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// Oldest first: the newest were kept under the limit.
	slices.Reverse(out)
	return out, nil
}
