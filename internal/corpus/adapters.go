package corpus

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// AdapterRecord is one row of adapter_registry (seed 001 §4.6): a LoRA
// adapter registered as an Ollama model, what it was trained on, and how
// it evaluated. Whether it serves its stage is the curated
// adapter_metadata's to say (§16.3); Deployed mirrors it here for the
// training history.
type AdapterRecord struct {
	ID        int64
	DatasetID int64 // training_datasets.id; 0 for an adapter trained outside cra
	Stage     string
	BaseModel string // "reasoning" or "coding"
	ModelTag  string // the Ollama model tag
	// TrainingLoss is the trainer's final loss; nil when unknown.
	TrainingLoss *float64
	// EvalMetrics is the JSON of the last evaluation; "" when never
	// evaluated.
	EvalMetrics string
	Deployed    bool
	TrainedAt   string // set by RecordAdapter
	// Version is the adapter's place among its stage's adapters, from 1,
	// in the order they were registered.
	Version int
}

// RecordAdapter appends a to adapter_registry and returns its id.
func (c *Corpus) RecordAdapter(ctx context.Context, a AdapterRecord) (int64, error) {
	var dataset any
	if a.DatasetID != 0 {
		dataset = a.DatasetID
	}
	res, err := c.db.ExecContext(ctx, `INSERT INTO adapter_registry
		(dataset_id, stage_name, base_model, model_tag, training_loss, eval_metrics, deployed, trained_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		dataset, a.Stage, a.BaseModel, a.ModelTag, a.TrainingLoss, nullString(a.EvalMetrics), a.Deployed, c.timestamp())
	if err != nil {
		return 0, fmt.Errorf("record adapter: %w", err)
	}
	return res.LastInsertId()
}

const adapterColumns = `id, COALESCE(dataset_id, 0), stage_name, base_model, model_tag, training_loss,
	COALESCE(eval_metrics, ''), deployed != 0, trained_at,
	(SELECT COUNT(*) FROM adapter_registry o WHERE o.stage_name = adapter_registry.stage_name AND o.id <= adapter_registry.id)`

func scanAdapter(row interface{ Scan(...any) error }) (AdapterRecord, error) {
	var a AdapterRecord
	var loss sql.NullFloat64
	err := row.Scan(&a.ID, &a.DatasetID, &a.Stage, &a.BaseModel, &a.ModelTag, &loss, &a.EvalMetrics, &a.Deployed, &a.TrainedAt, &a.Version)
	if loss.Valid {
		a.TrainingLoss = &loss.Float64
	}
	return a, err
}

// AdapterByTag returns the latest adapter registered under tag, or an
// error wrapping ErrNoRow.
func (c *Corpus) AdapterByTag(ctx context.Context, tag string) (AdapterRecord, error) {
	a, err := scanAdapter(c.db.QueryRowContext(ctx, `SELECT `+adapterColumns+` FROM adapter_registry
		WHERE model_tag = ? ORDER BY id DESC LIMIT 1`, tag))
	if errors.Is(err, sql.ErrNoRows) {
		return AdapterRecord{}, fmt.Errorf("adapter %s: %w", tag, ErrNoRow)
	}
	return a, err
}

// Adapters returns the registered adapters in the order they were
// registered; stage "" means all stages.
func (c *Corpus) Adapters(ctx context.Context, stage string) ([]AdapterRecord, error) {
	rows, err := c.db.QueryContext(ctx, `SELECT `+adapterColumns+` FROM adapter_registry
		WHERE ? = '' OR stage_name = ? ORDER BY id`, stage, stage)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []AdapterRecord
	for rows.Next() {
		a, err := scanAdapter(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// SetAdapterEval stores the JSON of an adapter's evaluation.
func (c *Corpus) SetAdapterEval(ctx context.Context, id int64, metrics string) error {
	if _, err := c.db.ExecContext(ctx, `UPDATE adapter_registry SET eval_metrics = ? WHERE id = ?`, metrics, id); err != nil {
		return fmt.Errorf("record adapter evaluation: %w", err)
	}
	return nil
}

// SetAdapterDeployed marks the adapter id deployed or not; deploying one
// marks the other adapters of its stage not deployed, as the curated
// adapter_metadata keeps one active adapter per stage.
func (c *Corpus) SetAdapterDeployed(ctx context.Context, id int64, deployed bool) error {
	q := `UPDATE adapter_registry SET deployed = 0 WHERE id = ?`
	if deployed {
		q = `UPDATE adapter_registry SET deployed = (id = ?1)
			WHERE stage_name = (SELECT stage_name FROM adapter_registry WHERE id = ?1)`
	}
	if _, err := c.db.ExecContext(ctx, q, id); err != nil {
		return fmt.Errorf("record adapter deployment: %w", err)
	}
	return nil
}
