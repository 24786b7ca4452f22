-- The version of the extractor (index.ExtractorVersion) that wrote the
-- repository's index: what its symbols, references, imports, identifier
-- names and vendored flags were read with. A run that finds another
-- version reads every file again, whatever its stat and hash, and stores
-- its own, so a change to what cra extracts needs no migration of its own.
-- Indexes made before this column existed hold 0 and are read again once.
ALTER TABLE repo_state ADD COLUMN extractor INTEGER NOT NULL DEFAULT 0;
