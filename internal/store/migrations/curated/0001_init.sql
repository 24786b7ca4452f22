-- Curated DB schema, exactly as seed 001 §4.5.
CREATE TABLE repos (
  id INTEGER PRIMARY KEY,
  path TEXT NOT NULL,
  remote_url TEXT,
  indexed_at TEXT NOT NULL
);

CREATE TABLE files (
  id INTEGER PRIMARY KEY,
  repo_id INTEGER NOT NULL REFERENCES repos(id),
  path TEXT NOT NULL,
  language TEXT NOT NULL,
  content_hash TEXT NOT NULL,
  size_bytes INTEGER NOT NULL
);

CREATE TABLE symbols (
  id INTEGER PRIMARY KEY,
  file_id INTEGER NOT NULL REFERENCES files(id),
  name TEXT NOT NULL,
  kind TEXT NOT NULL,
  start_line INTEGER NOT NULL,
  end_line INTEGER NOT NULL,
  signature TEXT,
  parent_symbol_id INTEGER REFERENCES symbols(id)
);

CREATE TABLE docstrings (
  id INTEGER PRIMARY KEY,
  symbol_id INTEGER REFERENCES symbols(id),
  file_id INTEGER NOT NULL REFERENCES files(id),
  content TEXT NOT NULL,
  format TEXT,
  parsed_fields TEXT
);

CREATE TABLE inline_comments (
  id INTEGER PRIMARY KEY,
  file_id INTEGER NOT NULL REFERENCES files(id),
  symbol_id INTEGER REFERENCES symbols(id),
  line INTEGER NOT NULL,
  content TEXT NOT NULL,
  kind TEXT,
  is_rationale INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE dependencies (
  id INTEGER PRIMARY KEY,
  source_file_id INTEGER NOT NULL REFERENCES files(id),
  target_file_id INTEGER NOT NULL REFERENCES files(id),
  kind TEXT NOT NULL
);

CREATE TABLE symbol_references (
  id INTEGER PRIMARY KEY,
  caller_symbol_id INTEGER NOT NULL REFERENCES symbols(id),
  callee_symbol_id INTEGER NOT NULL REFERENCES symbols(id),
  reference_kind TEXT NOT NULL,
  confidence REAL NOT NULL
);

CREATE TABLE commits (
  id INTEGER PRIMARY KEY,
  repo_id INTEGER NOT NULL REFERENCES repos(id),
  hash TEXT NOT NULL,
  author TEXT,
  message TEXT,
  timestamp TEXT NOT NULL,
  files_changed INTEGER,
  insertions INTEGER,
  deletions INTEGER
);

CREATE TABLE file_commits (
  file_id INTEGER NOT NULL REFERENCES files(id),
  commit_id INTEGER NOT NULL REFERENCES commits(id),
  PRIMARY KEY (file_id, commit_id)
);

CREATE TABLE co_changes (
  file_a_id INTEGER NOT NULL REFERENCES files(id),
  file_b_id INTEGER NOT NULL REFERENCES files(id),
  count INTEGER NOT NULL DEFAULT 1,
  last_commit_hash TEXT,
  PRIMARY KEY (file_a_id, file_b_id),
  CHECK (file_a_id < file_b_id)
);

CREATE TABLE file_metadata (
  file_id INTEGER PRIMARY KEY REFERENCES files(id),
  purpose TEXT,
  module TEXT,
  domain TEXT,
  concepts TEXT,
  public_api_surface TEXT,
  complexity_notes TEXT
);

CREATE TABLE adapter_metadata (
  id INTEGER PRIMARY KEY,
  stage_name TEXT NOT NULL,
  base_model TEXT NOT NULL,
  model_tag TEXT NOT NULL,
  version INTEGER NOT NULL DEFAULT 1,
  active INTEGER NOT NULL DEFAULT 1,
  performance_notes TEXT,
  deployed_at TEXT NOT NULL
);

CREATE INDEX idx_files_repo_path ON files(repo_id, path);
CREATE INDEX idx_symbols_file ON symbols(file_id);
CREATE INDEX idx_symbols_name ON symbols(name);
CREATE INDEX idx_symbol_references_caller ON symbol_references(caller_symbol_id);
CREATE INDEX idx_symbol_references_callee ON symbol_references(callee_symbol_id);
CREATE INDEX idx_dependencies_source ON dependencies(source_file_id);
CREATE INDEX idx_dependencies_target ON dependencies(target_file_id);
CREATE INDEX idx_commits_repo_hash ON commits(repo_id, hash);
CREATE INDEX idx_file_metadata_domain ON file_metadata(domain);
CREATE INDEX idx_file_metadata_module ON file_metadata(module);
CREATE INDEX idx_adapter_metadata_stage_active ON adapter_metadata(stage_name, active);
