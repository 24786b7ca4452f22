package agent

import (
	"context"
	"database/sql"

	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/retrieve"
	"github.com/cra-dev/cra/internal/validation"
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
	corpus *corpus.Corpus
	// ID is the task_runs row.
	ID int64
}

// StartRun records the start of a run in c.
func StartRun(ctx context.Context, c *corpus.Corpus, r TaskRun) (*RunLog, error) {
	id, err := c.StartRun(ctx, corpus.TaskRun{
		TaskID: r.TaskID, Repo: r.Repo, Mode: r.Mode, ExecuteModel: r.ExecuteModel,
		ContextWindow: r.Budget.ContextWindow, ReservedTokens: r.Budget.ReservedTokens,
		Stages: r.Stages, PlanArtifact: r.PlanArtifact,
	})
	if err != nil {
		return nil, err
	}
	return &RunLog{corpus: c, ID: id}, nil
}

// Attempt records an attempt and, when it was validated, its validation;
// an interrupted run still records what it did.
func (l *RunLog) Attempt(ctx context.Context, a *AttemptRecord) error {
	row := corpus.Attempt{
		Attempt: a.Attempt, PromptTokens: a.PromptTokens, CompletionTokens: a.CompletionTokens,
		Latency: a.Latency, RawResponse: a.RawResponse, PatchApplied: a.PatchApplied,
	}
	if v := a.Validation; v != nil {
		output := func(name string) sql.NullString {
			if c := v.Check(name); c != nil {
				return sql.NullString{String: c.Output, Valid: true}
			}
			return sql.NullString{}
		}
		row.Validation = &corpus.Validation{Success: v.Success, TestOutput: output(validation.CheckTest), LintOutput: output(validation.CheckLint),
			TypeCheckOutput: output(validation.CheckTypecheck), FailingTests: v.FailingTests}
	}
	return l.corpus.AddAttempt(ctx, l.ID, row)
}

// RunOutcome is what Finish records: FinalDiff in implement mode,
// FinalPlan (the plan's JSON) in plan mode.
type RunOutcome = corpus.RunOutcome

// Finish completes the task_runs row; like Attempt, also when ctx has
// been cancelled.
func (l *RunLog) Finish(ctx context.Context, o RunOutcome) error {
	return l.corpus.FinishRun(ctx, l.ID, o)
}
