-- Phase 4 (seed 001 §16): an adapter registered from a file trained
-- outside cra (`cra adapters register --adapter PATH` without --dataset)
-- has no dataset here, so adapter_registry.dataset_id becomes optional.
-- SQLite cannot relax NOT NULL in place: the table (empty until now in
-- every release) is rebuilt, rows kept. Datasets keep the seed's shape: a
-- bootstrapped one (source = 'synthetic') belongs to a training_plans row
-- of the same source that records how it was drawn (§16.4.5).
CREATE TABLE adapter_registry_new (
  id INTEGER PRIMARY KEY,
  dataset_id INTEGER REFERENCES training_datasets(id),
  stage_name TEXT NOT NULL,
  base_model TEXT NOT NULL,
  model_tag TEXT NOT NULL,
  training_loss REAL,
  eval_metrics TEXT,
  deployed INTEGER NOT NULL DEFAULT 0,
  trained_at TEXT NOT NULL
);
INSERT INTO adapter_registry_new SELECT * FROM adapter_registry;
DROP TABLE adapter_registry;
ALTER TABLE adapter_registry_new RENAME TO adapter_registry;

CREATE INDEX idx_training_datasets_stage ON training_datasets(stage_name, source);
CREATE INDEX idx_adapter_registry_tag ON adapter_registry(model_tag);
