-- Vendored, generated and minified files (index.Vendored): copies of
-- other projects' code and the output of tools. Retrieval ranks them down
-- and leaves them out of context packages unless the task names them.
-- vendored holds why ('' for the project's own source).
ALTER TABLE file_index ADD COLUMN vendored TEXT NOT NULL DEFAULT '';
CREATE INDEX idx_file_index_vendored ON file_index(file_id) WHERE vendored != '';

-- Files indexed before this migration were never classified: make the
-- next run read them again (the stat gate fails on mtime 0, and a stored
-- hash of '' matches no content), so every file gets its flag.
UPDATE file_index SET mtime_ns = 0;
UPDATE files SET content_hash = '';
