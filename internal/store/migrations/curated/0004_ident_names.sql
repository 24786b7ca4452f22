-- The identifier graph retrieval ranks with (kb.RareNameDefiners and
-- kb.RareNameUsers), derived from symbols and name_refs by the indexer
-- and kept up to date on every run: a row for each name used in
-- user_file and defined in def_file (another file), for the names defined
-- in at most ident_state.max_defs files. Read at query time from
-- name_refs and symbols, the graph cost a retrieval on a repository of
-- 5,000 files a third of its time.
--
-- Rows name files without foreign keys: the indexer deletes files and
-- rewrites their rows before it brings this table up to date in the same
-- transaction.
CREATE TABLE ident_names (
  user_file INTEGER NOT NULL,
  def_file INTEGER NOT NULL,
  name TEXT NOT NULL,
  PRIMARY KEY (user_file, def_file, name)
) WITHOUT ROWID;
CREATE INDEX idx_ident_names_def ON ident_names(def_file, user_file);

-- One row once the indexer has built ident_names: the bound on defining
-- files it was built for. Without it (an index written before this
-- table, or by a test fixture) readers compute the graph from name_refs
-- and symbols.
CREATE TABLE ident_state (
  max_defs INTEGER NOT NULL
);
