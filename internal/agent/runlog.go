package agent

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cra-dev/cra/internal/retrieve"
	"github.com/cra-dev/cra/internal/store"
)

// Modes of task_runs (seed 001 §4.6).
const (
	ModePlan      = "plan"
	ModeImplement = "implement"
)

// TaskRun is the task_runs row of a plan or solve run as it starts.
type TaskRun struct {
	TaskID       string
	Repo         string
	Mode         string
	ExecuteModel string
	Budget       retrieve.Budget
	Stages       string
	// PlanArtifact is the --plan file of an implement run.
	PlanArtifact string
}

// RunLog writes a run to the raw database as it happens (seed 001 §4.6):
// the task_runs row first, its success NULL until Finish, then a
// run_attempts row per attempt and a validation_results row per
// validation, so a run that dies midway leaves its attempts behind.
type RunLog struct {
	db *sql.DB
	// ID is the task_runs row.
	ID int64
}

// StartRun inserts the task_runs row of a run.
func StartRun(ctx context.Context, raw *sql.DB, r TaskRun) (*RunLog, error) {
	var plan any
	if r.PlanArtifact != "" {
		plan = r.PlanArtifact
	}
	res, err := raw.ExecContext(ctx, `INSERT INTO task_runs(task_id, repo_path, mode, execute_model, context_window, reserved_tokens, stages, plan_artifact, timestamp)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.TaskID, r.Repo, r.Mode, r.ExecuteModel, r.Budget.ContextWindow, r.Budget.ReservedTokens, r.Stages, plan, store.Now())
	if err != nil {
		return nil, fmt.Errorf("record task run: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return nil, fmt.Errorf("record task run: %w", err)
	}
	return &RunLog{db: raw, ID: id}, nil
}

// Attempt writes a run_attempts row and, when the attempt was
// validated, its validation_results row.
func (l *RunLog) Attempt(ctx context.Context, a *AttemptRecord) error {
	ctx = context.WithoutCancel(ctx) // an interrupted run still records what it did
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("record attempt: %w", err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `INSERT INTO run_attempts(task_run_id, attempt, prompt_tokens, completion_tokens, latency_ms, raw_response, patch_applied, timestamp)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		l.ID, a.Attempt, nullInt(a.PromptTokens), nullInt(a.CompletionTokens), a.Latency.Milliseconds(), a.RawResponse, a.PatchApplied, store.Now())
	if err != nil {
		return fmt.Errorf("record attempt: %w", err)
	}
	if v := a.Validation; v != nil {
		id, err := res.LastInsertId()
		if err != nil {
			return fmt.Errorf("record attempt: %w", err)
		}
		failing, _ := json.Marshal(v.FailingTests) // strings only: cannot fail
		output := func(name string) any {
			if c := v.Check(name); c != nil {
				return c.Output
			}
			return nil
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO validation_results(attempt_id, success, test_output, lint_output, type_check_output, failing_tests)
			VALUES (?, ?, ?, ?, ?, ?)`, id, v.Success, output(CheckTest), output(CheckLint), output(CheckTypecheck), string(failing)); err != nil {
			return fmt.Errorf("record validation: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("record attempt: %w", err)
	}
	return nil
}

// RunOutcome is what Finish records.
type RunOutcome struct {
	Success   bool
	Tokens    int
	Latency   time.Duration
	FinalDiff string // implement mode
	FinalPlan string // plan mode: the plan's JSON
}

// Finish completes the task_runs row.
func (l *RunLog) Finish(ctx context.Context, o RunOutcome) error {
	var diff, plan any
	if o.FinalDiff != "" {
		diff = o.FinalDiff
	}
	if o.FinalPlan != "" {
		plan = o.FinalPlan
	}
	_, err := l.db.ExecContext(context.WithoutCancel(ctx), `UPDATE task_runs SET success = ?, total_tokens = ?, total_latency_ms = ?, final_diff = ?, final_plan = ? WHERE id = ?`,
		o.Success, o.Tokens, o.Latency.Milliseconds(), diff, plan, l.ID)
	if err != nil {
		return fmt.Errorf("record task run: %w", err)
	}
	return nil
}

func nullInt(n int) any {
	if n == 0 {
		return nil
	}
	return n
}
