-- Full-text search over files for retrieval (BM25 through FTS5's bm25()).
-- Columns hold the terms of internal/terms (identifiers kept whole and split
-- into camelCase/snake_case parts), space-separated; rowid is files.id.
-- Contentless: the index keeps no copy of the sources, only the postings.
CREATE VIRTUAL TABLE file_search USING fts5(
  path, symbols, body,
  content = '', contentless_delete = 1
);

-- Document frequency per term, so a long task keeps its most telling terms.
CREATE VIRTUAL TABLE file_search_vocab USING fts5vocab(file_search, 'row');
