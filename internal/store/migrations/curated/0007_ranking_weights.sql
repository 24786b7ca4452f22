-- A repository's own ranking weights, learned from its history by
-- 'cra tune' (internal/learn), with the figures that decided whether
-- retrieval uses them: they are used only when used = 1, and only while
-- global_weights are still the weights cra ships (retrieve.WeightsFor).
-- One row per repository, replaced by each tune.
CREATE TABLE ranking_weights (
  repo_id INTEGER PRIMARY KEY REFERENCES repos(id),
  weights TEXT NOT NULL,          -- JSON of retrieve.Weights
  global_weights TEXT NOT NULL,   -- JSON of the weights they were judged against
  used INTEGER NOT NULL,          -- 1: they beat global_weights on the validation commits
  reason TEXT NOT NULL,
  head TEXT NOT NULL,             -- the commit the learning history ended at
  train_commits INTEGER NOT NULL,
  valid_commits INTEGER NOT NULL,
  valid_acc5 REAL NOT NULL,       -- on the validation commits, with weights
  valid_mrr REAL NOT NULL,
  global_acc5 REAL NOT NULL,      -- on the same commits, with global_weights
  global_mrr REAL NOT NULL,
  seconds REAL NOT NULL,          -- what the tune took
  learned_at TEXT NOT NULL
);
