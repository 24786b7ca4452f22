package corpus

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// TaskRun is the task_runs row of a run as it starts (seed 001 §4.6).
type TaskRun struct {
	TaskID       string
	Repo         string
	Mode         string // "plan", "implement", or "retrieve" for a standalone retrieval
	ExecuteModel string
	// ContextWindow and ReservedTokens are the run's token budget.
	ContextWindow  int
	ReservedTokens int
	Stages         string
	// PlanArtifact is the --plan file of an implement run; "" is NULL.
	PlanArtifact string
}

// StartRun appends the task_runs row of a run and returns its id. The
// row's outcome stays NULL until FinishRun, so a run that dies midway is
// seen as unfinished, with the attempts it recorded.
func (c *Corpus) StartRun(ctx context.Context, r TaskRun) (int64, error) {
	res, err := c.db.ExecContext(ctx, `INSERT INTO task_runs(task_id, repo_path, mode, execute_model, context_window, reserved_tokens, stages, plan_artifact, timestamp)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.TaskID, r.Repo, r.Mode, r.ExecuteModel, r.ContextWindow, r.ReservedTokens, r.Stages, nullString(r.PlanArtifact), c.timestamp())
	if err != nil {
		return 0, fmt.Errorf("record task run: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("record task run: %w", err)
	}
	return id, nil
}

// Attempt is one attempt of a run (seed 001 §4.6 run_attempts).
type Attempt struct {
	Attempt int
	// PromptTokens and CompletionTokens are the server's counts; 0 (the
	// server gave none) is NULL.
	PromptTokens     int
	CompletionTokens int
	Latency          time.Duration
	RawResponse      string
	PatchApplied     bool
	// Validation is the attempt's validation; nil when it was not
	// validated.
	Validation *Validation
}

// Validation is the validation of an attempt (seed 001 §4.6
// validation_results).
type Validation struct {
	Success bool
	// The outputs of the test, lint and type-check commands; an invalid
	// NullString (NULL) is a check that did not run.
	TestOutput      sql.NullString
	LintOutput      sql.NullString
	TypeCheckOutput sql.NullString
	// FailingTests are stored as their JSON encoding (nil is null).
	FailingTests []string
}

// AddAttempt appends an attempt of the run runID and, when it was
// validated, its validation, in one transaction. It writes even when ctx
// has been cancelled: an interrupted run still records what it did.
func (c *Corpus) AddAttempt(ctx context.Context, runID int64, a Attempt) error {
	ctx = context.WithoutCancel(ctx)
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("record attempt: %w", err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `INSERT INTO run_attempts(task_run_id, attempt, prompt_tokens, completion_tokens, latency_ms, raw_response, patch_applied, timestamp)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		runID, a.Attempt, nullInt(a.PromptTokens), nullInt(a.CompletionTokens), a.Latency.Milliseconds(), a.RawResponse, a.PatchApplied, c.timestamp())
	if err != nil {
		return fmt.Errorf("record attempt: %w", err)
	}
	if v := a.Validation; v != nil {
		id, err := res.LastInsertId()
		if err != nil {
			return fmt.Errorf("record attempt: %w", err)
		}
		failing, _ := json.Marshal(v.FailingTests) // strings only: cannot fail
		if _, err := tx.ExecContext(ctx, `INSERT INTO validation_results(attempt_id, success, test_output, lint_output, type_check_output, failing_tests)
			VALUES (?, ?, ?, ?, ?, ?)`, id, v.Success, v.TestOutput, v.LintOutput, v.TypeCheckOutput, string(failing)); err != nil {
			return fmt.Errorf("record validation: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("record attempt: %w", err)
	}
	return nil
}

// RunOutcome is how a run ended, the rest of its task_runs row.
type RunOutcome struct {
	Success   bool
	Tokens    int
	Latency   time.Duration
	FinalDiff string // implement mode; "" is NULL
	FinalPlan string // plan mode, the plan's JSON; "" is NULL
}

// FinishRun completes the task_runs row runID with its outcome. Like
// AddAttempt it writes even when ctx has been cancelled.
func (c *Corpus) FinishRun(ctx context.Context, runID int64, o RunOutcome) error {
	_, err := c.db.ExecContext(context.WithoutCancel(ctx), `UPDATE task_runs SET success = ?, total_tokens = ?, total_latency_ms = ?, final_diff = ?, final_plan = ? WHERE id = ?`,
		o.Success, o.Tokens, o.Latency.Milliseconds(), nullString(o.FinalDiff), nullString(o.FinalPlan), runID)
	if err != nil {
		return fmt.Errorf("record task run: %w", err)
	}
	return nil
}

// HasRuns reports whether the corpus holds logged runs, the input of the
// training modes (seed 001 §14.3): task runs, or the LLM calls of
// standalone retrievals. A database whose tables were never created (an
// interrupted first run) has none.
func (c *Corpus) HasRuns(ctx context.Context) (bool, error) {
	for _, t := range []string{"task_runs", "retrieval_llm_calls"} {
		var n int
		if err := c.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, t).Scan(&n); err != nil {
			return false, err
		}
		if n == 0 {
			return false, nil
		}
	}
	var logged bool
	err := c.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM task_runs) OR EXISTS (SELECT 1 FROM retrieval_llm_calls)`).Scan(&logged)
	return logged, err
}
