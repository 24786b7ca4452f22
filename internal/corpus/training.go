package corpus

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Sources of training data (seed 001 §16.4.5): a dataset or plan drawn
// from a repository's history, or curated from cra's own logged runs.
const (
	SourceSynthetic = "synthetic"
	SourceLogged    = "logged"
)

// ErrNoRow is returned by the training reads for an id that has no row.
var ErrNoRow = errors.New("no such row")

// Plan is one row of training_plans (seed 001 §4.6, §8.3). A bootstrap
// records a plan of source synthetic that says how its datasets were
// drawn; `cra train-plan` records the reasoning model's plan.
type Plan struct {
	ID                 int64
	TaskID             string // the command's task id
	TargetStage        string // the stage to train
	BaseModel          string // "reasoning" or "coding" (seed 001 §3.4)
	Source             string // SourceSynthetic or SourceLogged
	DataCriteria       string // JSON: what to select
	Hyperparameters    string // JSON; "" is NULL
	ImprovementTargets string // JSON; "" is NULL
	RawPlan            string // the plan as written (the model's reply, or a summary)
	Timestamp          string // set by RecordPlan
}

// RecordPlan appends p to training_plans and returns its id.
func (c *Corpus) RecordPlan(ctx context.Context, p Plan) (int64, error) {
	return c.recordPlan(ctx, c.db, p)
}

// execer is a database or a transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func (c *Corpus) recordPlan(ctx context.Context, db execer, p Plan) (int64, error) {
	if p.Source == "" {
		p.Source = SourceLogged
	}
	res, err := db.ExecContext(ctx, `INSERT INTO training_plans
		(task_id, target_stage, base_model, source, data_criteria, hyperparameters, improvement_targets, raw_plan, timestamp)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		p.TaskID, p.TargetStage, p.BaseModel, p.Source, p.DataCriteria,
		nullString(p.Hyperparameters), nullString(p.ImprovementTargets), p.RawPlan, c.timestamp())
	if err != nil {
		return 0, fmt.Errorf("record training plan: %w", err)
	}
	return res.LastInsertId()
}

// Plan returns the training plan id, or an error wrapping ErrNoRow.
func (c *Corpus) Plan(ctx context.Context, id int64) (Plan, error) {
	var p Plan
	var hyper, targets sql.NullString
	err := c.db.QueryRowContext(ctx, `SELECT id, task_id, target_stage, base_model, source, data_criteria,
		hyperparameters, improvement_targets, raw_plan, timestamp FROM training_plans WHERE id = ?`, id).
		Scan(&p.ID, &p.TaskID, &p.TargetStage, &p.BaseModel, &p.Source, &p.DataCriteria, &hyper, &targets, &p.RawPlan, &p.Timestamp)
	if errors.Is(err, sql.ErrNoRows) {
		return Plan{}, fmt.Errorf("training plan %d: %w", id, ErrNoRow)
	}
	p.Hyperparameters, p.ImprovementTargets = hyper.String, targets.String
	return p, err
}

// Dataset is one row of training_datasets (seed 001 §4.6): the examples
// of one stage, for one base model, in one directory.
type Dataset struct {
	ID        int64
	PlanID    int64 // training_plans.id
	Stage     string
	BaseModel string // "reasoning" or "coding"
	Source    string // SourceSynthetic or SourceLogged
	Path      string // the stage's directory (train.jsonl, valid.jsonl)
	Examples  int
	Positive  int
	Negative  int
	Format    string // "jsonl"
	Timestamp string // set by RecordDataset
}

// RecordDataset appends d to training_datasets and returns its id.
func (c *Corpus) RecordDataset(ctx context.Context, d Dataset) (int64, error) {
	return c.recordDataset(ctx, c.db, d)
}

// RecordPlanDatasets appends p and its datasets (their PlanID set to p's)
// in one transaction, so a failure records neither, and returns the ids.
func (c *Corpus) RecordPlanDatasets(ctx context.Context, p Plan, ds []Dataset) (int64, []int64, error) {
	var planID int64
	var ids []int64
	err := c.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		if planID, err = c.recordPlan(ctx, tx, p); err != nil {
			return err
		}
		for _, d := range ds {
			d.PlanID = planID
			id, err := c.recordDataset(ctx, tx, d)
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return planID, ids, nil
}

func (c *Corpus) recordDataset(ctx context.Context, db execer, d Dataset) (int64, error) {
	if d.Source == "" {
		d.Source = SourceLogged
	}
	if d.Format == "" {
		d.Format = "jsonl"
	}
	res, err := db.ExecContext(ctx, `INSERT INTO training_datasets
		(training_plan_id, stage_name, base_model, source, dataset_path, example_count, positive_count, negative_count, format, timestamp)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		d.PlanID, d.Stage, d.BaseModel, d.Source, d.Path, d.Examples, d.Positive, d.Negative, d.Format, c.timestamp())
	if err != nil {
		return 0, fmt.Errorf("record training dataset: %w", err)
	}
	return res.LastInsertId()
}

const datasetColumns = `id, training_plan_id, stage_name, base_model, source, dataset_path,
	example_count, positive_count, negative_count, format, timestamp`

func scanDataset(row interface{ Scan(...any) error }) (Dataset, error) {
	var d Dataset
	err := row.Scan(&d.ID, &d.PlanID, &d.Stage, &d.BaseModel, &d.Source, &d.Path,
		&d.Examples, &d.Positive, &d.Negative, &d.Format, &d.Timestamp)
	return d, err
}

// Dataset returns the dataset id, or an error wrapping ErrNoRow.
func (c *Corpus) Dataset(ctx context.Context, id int64) (Dataset, error) {
	d, err := scanDataset(c.db.QueryRowContext(ctx, `SELECT `+datasetColumns+` FROM training_datasets WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Dataset{}, fmt.Errorf("training dataset %d: %w", id, ErrNoRow)
	}
	return d, err
}

// Datasets returns every dataset, newest first; stage "" means all stages.
func (c *Corpus) Datasets(ctx context.Context, stage string) ([]Dataset, error) {
	rows, err := c.db.QueryContext(ctx, `SELECT `+datasetColumns+` FROM training_datasets
		WHERE ? = '' OR stage_name = ? ORDER BY id DESC`, stage, stage)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Dataset
	for rows.Next() {
		d, err := scanDataset(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}
