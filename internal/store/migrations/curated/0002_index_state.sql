-- cra's additions to the seed schema, kept out of the seed's tables so those
-- stay exactly as §4.5 specifies. They serve incremental indexing and the
-- identifier signals retrieval ranks with.

-- Per-file indexing facts: the stat gate (a file whose size and mtime are
-- unchanged is not even hashed), parse warnings, and the line count.
CREATE TABLE file_index (
  file_id INTEGER PRIMARY KEY REFERENCES files(id),
  mtime_ns INTEGER NOT NULL,
  line_count INTEGER NOT NULL DEFAULT 0,
  syntax_errors INTEGER NOT NULL DEFAULT 0,
  parsed INTEGER NOT NULL DEFAULT 0      -- 1 when a language parser ran
);

-- Imports as written, so dependency edges can be re-resolved when files
-- appear or disappear without re-parsing the importers.
CREATE TABLE file_imports (
  file_id INTEGER NOT NULL REFERENCES files(id),
  module TEXT NOT NULL,
  level INTEGER NOT NULL DEFAULT 0,
  names TEXT NOT NULL DEFAULT '',         -- comma-separated imported names
  type_only INTEGER NOT NULL DEFAULT 0,
  line INTEGER NOT NULL
);
CREATE INDEX idx_file_imports_file ON file_imports(file_id);

-- Names a file uses, per enclosing symbol: Python symbol_references are
-- resolved from these, and for every language they are the symbol-name
-- signals (seed 001 §5.7) and the identifier graph of retrieval.
CREATE TABLE name_refs (
  file_id INTEGER NOT NULL REFERENCES files(id),
  symbol_id INTEGER REFERENCES symbols(id),
  name TEXT NOT NULL,
  qualifier TEXT NOT NULL DEFAULT '',
  kind TEXT NOT NULL,
  line INTEGER NOT NULL
);
CREATE INDEX idx_name_refs_file ON name_refs(file_id);
CREATE INDEX idx_name_refs_symbol ON name_refs(symbol_id);
CREATE INDEX idx_name_refs_name ON name_refs(name);

-- Where git history mining stopped, so the next run reads only new commits,
-- and when the last run started (the stat gate trusts an unchanged mtime
-- only when it is older than that, as git does for racily clean files).
CREATE TABLE repo_state (
  repo_id INTEGER PRIMARY KEY REFERENCES repos(id),
  last_run_ns INTEGER NOT NULL DEFAULT 0,
  git_head TEXT,
  history_depth INTEGER,
  max_commit_files INTEGER
);

CREATE UNIQUE INDEX idx_files_repo_path_unique ON files(repo_id, path);
CREATE UNIQUE INDEX idx_commits_repo_hash_unique ON commits(repo_id, hash);
CREATE INDEX idx_file_commits_commit ON file_commits(commit_id);
CREATE INDEX idx_co_changes_b ON co_changes(file_b_id);
-- Every column that references symbols(id) or files(id) is indexed:
-- deleting a parent row makes SQLite look for children, and without an
-- index that is a scan of the child table per deleted row.
CREATE INDEX idx_docstrings_file ON docstrings(file_id);
CREATE INDEX idx_docstrings_symbol ON docstrings(symbol_id);
CREATE INDEX idx_inline_comments_file ON inline_comments(file_id);
CREATE INDEX idx_inline_comments_symbol ON inline_comments(symbol_id);
CREATE INDEX idx_symbols_parent ON symbols(parent_symbol_id);
