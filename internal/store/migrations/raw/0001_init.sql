-- Raw DB schema, exactly as seed 001 §4.6: append-only activity log and
-- training corpus.
CREATE TABLE index_runs (
  id INTEGER PRIMARY KEY,
  repo_path TEXT NOT NULL,
  files_scanned INTEGER NOT NULL,
  files_changed INTEGER NOT NULL,
  duration_ms INTEGER NOT NULL,
  status TEXT NOT NULL,
  timestamp TEXT NOT NULL
);

CREATE TABLE enrichment_outputs (
  id INTEGER PRIMARY KEY,
  file_id INTEGER NOT NULL,
  model TEXT NOT NULL,
  purpose TEXT,
  module TEXT,
  domain TEXT,
  concepts TEXT,
  public_api_surface TEXT,
  complexity_notes TEXT,
  raw_prompt TEXT NOT NULL,
  raw_response TEXT NOT NULL,
  promoted INTEGER NOT NULL DEFAULT 0,
  timestamp TEXT NOT NULL
);

CREATE TABLE retrieval_llm_calls (
  id INTEGER PRIMARY KEY,
  task_id TEXT NOT NULL,
  call_type TEXT NOT NULL,
  stage_name TEXT,
  model TEXT NOT NULL,
  prompt TEXT NOT NULL,
  response TEXT NOT NULL,
  prompt_tokens INTEGER,
  completion_tokens INTEGER,
  latency_ms INTEGER NOT NULL,
  timestamp TEXT NOT NULL
);

CREATE TABLE retrieval_decisions (
  id INTEGER PRIMARY KEY,
  task_id TEXT NOT NULL,
  stage TEXT NOT NULL,
  file_id INTEGER NOT NULL,
  tier TEXT,
  included INTEGER NOT NULL,
  reason TEXT,
  timestamp TEXT NOT NULL
);

CREATE TABLE task_runs (
  id INTEGER PRIMARY KEY,
  task_id TEXT NOT NULL UNIQUE,
  repo_path TEXT NOT NULL,
  mode TEXT NOT NULL,
  execute_model TEXT NOT NULL,
  context_window INTEGER NOT NULL,
  reserved_tokens INTEGER NOT NULL,
  stages TEXT NOT NULL,
  plan_artifact TEXT,
  success INTEGER,
  total_tokens INTEGER,
  total_latency_ms INTEGER,
  final_diff TEXT,
  final_plan TEXT,
  timestamp TEXT NOT NULL
);

CREATE TABLE run_attempts (
  id INTEGER PRIMARY KEY,
  task_run_id INTEGER NOT NULL REFERENCES task_runs(id),
  attempt INTEGER NOT NULL,
  prompt_tokens INTEGER,
  completion_tokens INTEGER,
  latency_ms INTEGER NOT NULL,
  raw_response TEXT NOT NULL,
  patch_applied INTEGER NOT NULL,
  timestamp TEXT NOT NULL
);

CREATE TABLE validation_results (
  id INTEGER PRIMARY KEY,
  attempt_id INTEGER NOT NULL REFERENCES run_attempts(id),
  success INTEGER NOT NULL,
  test_output TEXT,
  lint_output TEXT,
  type_check_output TEXT,
  failing_tests TEXT
);

CREATE TABLE session_archives (
  id INTEGER PRIMARY KEY,
  task_id TEXT NOT NULL,
  session_blob BLOB NOT NULL,
  archived_at TEXT NOT NULL
);

CREATE TABLE training_plans (
  id INTEGER PRIMARY KEY,
  task_id TEXT NOT NULL,
  target_stage TEXT NOT NULL,
  base_model TEXT NOT NULL,
  source TEXT NOT NULL DEFAULT 'logged',
  data_criteria TEXT NOT NULL,
  hyperparameters TEXT,
  improvement_targets TEXT,
  raw_plan TEXT NOT NULL,
  timestamp TEXT NOT NULL
);

CREATE TABLE training_datasets (
  id INTEGER PRIMARY KEY,
  training_plan_id INTEGER NOT NULL REFERENCES training_plans(id),
  stage_name TEXT NOT NULL,
  base_model TEXT NOT NULL,
  source TEXT NOT NULL DEFAULT 'logged',
  dataset_path TEXT NOT NULL,
  example_count INTEGER NOT NULL,
  positive_count INTEGER NOT NULL,
  negative_count INTEGER NOT NULL,
  format TEXT NOT NULL DEFAULT 'jsonl',
  timestamp TEXT NOT NULL
);

CREATE TABLE adapter_registry (
  id INTEGER PRIMARY KEY,
  dataset_id INTEGER NOT NULL REFERENCES training_datasets(id),
  stage_name TEXT NOT NULL,
  base_model TEXT NOT NULL,
  model_tag TEXT NOT NULL,
  training_loss REAL,
  eval_metrics TEXT,
  deployed INTEGER NOT NULL DEFAULT 0,
  trained_at TEXT NOT NULL
);

CREATE INDEX idx_retrieval_llm_calls_task ON retrieval_llm_calls(task_id);
CREATE INDEX idx_retrieval_decisions_task ON retrieval_decisions(task_id);
CREATE INDEX idx_run_attempts_task_run ON run_attempts(task_run_id);
CREATE INDEX idx_validation_results_attempt ON validation_results(attempt_id);
CREATE INDEX idx_enrichment_outputs_file ON enrichment_outputs(file_id);
