-- idx_files_repo_path (0001) and idx_files_repo_path_unique (0002) index
-- the same columns: every insert and update of a file row kept both. The
-- unique one serves every lookup the other did.
DROP INDEX IF EXISTS idx_files_repo_path;
