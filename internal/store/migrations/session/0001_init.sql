-- Session DB schema, exactly as seed 001 §4.7: per-task working memory.
CREATE TABLE kv (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
