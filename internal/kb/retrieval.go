package kb

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
)

// The reads of the retrieval pipeline (seed 001 §5): narrow, batched
// queries that return only the columns a ranking signal or the assembler
// needs, in a fixed order, so that a ranking is the same on every run.
// They serve internal/retrieve, whose latency they dominate; the methods
// of the other files serve 'cra query' and the other commands, and carry
// paths and names for display. The methods that can read thousands of rows (FilesWithCommits,
// DefinitionsOfFiles, SpansOfFiles, SymbolsByID) call a function per row
// instead of returning a slice: the caller keeps the rows in its own
// structures, and a slice on the way would double what a retrieval
// allocates.

// FileCommits is a file of a repository with the number of indexed commits
// that changed it (the churn prior of the ranking).
type FileCommits struct {
	ID       int64  `json:"id"`
	Path     string `json:"path"`
	Language string `json:"language"`
	Commits  int    `json:"commits"`
}

// FilesWithCommits calls fn for every file of a repository, by path, with
// its commit count (0 for a file no indexed commit touched).
func (k *KnowledgeBase) FilesWithCommits(ctx context.Context, repoID int64, fn func(FileCommits)) error {
	err := scanEach(ctx, k.db, func(r *sql.Rows, f *FileCommits) error {
		return r.Scan(&f.ID, &f.Path, &f.Language, &f.Commits)
	}, fn, `SELECT f.id, f.path, f.language, (SELECT COUNT(*) FROM file_commits fc WHERE fc.file_id = f.id) FROM files f
		WHERE f.repo_id = ? ORDER BY f.path`, repoID) // per file through the primary key: no temporary index of every count
	if err != nil {
		return fmt.Errorf("query files: %w", err)
	}
	return nil
}

// FileCount returns how many files a repository has (0 for an unknown
// repository).
func (k *KnowledgeBase) FileCount(ctx context.Context, repoID int64) (int, error) {
	var n int
	if err := k.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM files WHERE repo_id = ?`, repoID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count files: %w", err)
	}
	return n, nil
}

// Definer is a file that defines a symbol of a name.
type Definer struct {
	Name   string `json:"name"`
	FileID int64  `json:"file_id"`
}

// Definers lists the files of a repository that define a symbol of one of
// names (exact, case-sensitive), by name then file; a file defining a name
// twice is listed twice.
func (k *KnowledgeBase) Definers(ctx context.Context, repoID int64, names []string) ([]Definer, error) {
	names = slices.Clone(names)
	slices.Sort(names)
	names = slices.Compact(names)
	var out []Definer
	// In chunks: a pasted log can name more identifiers than SQLite takes
	// variables in one statement.
	for chunk := range slices.Chunk(names, 500) {
		ph, args := placeholders(chunk)
		ds, err := scanAll(ctx, k.db, func(r *sql.Rows, d *Definer) error {
			return r.Scan(&d.Name, &d.FileID)
		}, `SELECT s.name, s.file_id FROM symbols s JOIN files f ON f.id = s.file_id
			WHERE f.repo_id = ? AND s.name IN (`+ph+`) ORDER BY s.name, s.file_id`, append([]any{repoID}, args...)...)
		if err != nil {
			return nil, fmt.Errorf("query definers: %w", err)
		}
		out = append(out, ds...) // chunks of sorted names: in order
	}
	return out, nil
}

// SearchHit is a file the full-text index matched, with its BM25 score
// (higher is better).
type SearchHit struct {
	FileID int64   `json:"file_id"`
	Score  float64 `json:"score"`
}

// SearchFiles runs a full-text query over the files' paths, symbol names
// and text: files holding any of terms, best first, at most 300. BM25
// weighs a path match 4, a symbol name 2.5 and the text 1. The index is
// the database's, not one repository's: a hit may be a file of another
// repository.
func (k *KnowledgeBase) SearchFiles(ctx context.Context, terms []string) ([]SearchHit, error) {
	hs, err := k.matchFiles(ctx, terms, "4.0, 2.5, 1.0", 300)
	if err != nil {
		return nil, fmt.Errorf("search files: %w", err)
	}
	return hs, nil
}

// matchFiles returns the files holding any of terms (each quoted as a
// phrase, so that a term is never read as query syntax), best first by
// BM25 with the column weights given (path, symbol names, text), at most
// limit.
func (k *KnowledgeBase) matchFiles(ctx context.Context, terms []string, weights string, limit int) ([]SearchHit, error) {
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
	}
	return scanAll(ctx, k.db, func(r *sql.Rows, h *SearchHit) error {
		return r.Scan(&h.FileID, &h.Score)
	}, `SELECT rowid, -bm25(file_search, `+weights+`) AS s FROM file_search
		WHERE file_search MATCH ? ORDER BY s DESC LIMIT ?`, strings.Join(quoted, " OR "), limit)
}

// vocabularyBatch is how many terms one query of DocumentFrequencies asks
// for, below SQLite's bound on parameters.
const vocabularyBatch = 500

// DocumentFrequencies returns the number of indexed files holding each of
// terms, which are looked up as the full-text index stores its terms
// (lowercase words); a term in no file is left out. Like SearchFiles it
// counts over the whole database.
func (k *KnowledgeBase) DocumentFrequencies(ctx context.Context, terms []string) (map[string]int, error) {
	found := make(map[string]int, len(terms))
	for start := 0; start < len(terms); start += vocabularyBatch {
		batch := terms[start:min(start+vocabularyBatch, len(terms))]
		ph, args := placeholders(batch)
		err := scanRows(ctx, k.db, `SELECT term, doc FROM file_search_vocab WHERE term IN (`+ph+`)`, args, func(rows *sql.Rows) error {
			var t string
			var n int
			if err := rows.Scan(&t, &n); err != nil {
				return err
			}
			found[t] = n
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("query vocabulary: %w", err)
		}
	}
	return found, nil
}

// FileDescription is a file's promoted enrichment as text: module and
// domain as stored, concepts as the stored JSON array. Empty where the
// enrichment has none.
type FileDescription struct {
	FileID   int64  `json:"file_id"`
	Module   string `json:"module"`
	Domain   string `json:"domain"`
	Concepts string `json:"concepts"`
	Purpose  string `json:"purpose"`
}

// FileDescriptions lists the promoted enrichment of a repository's files
// (seed 001 §5.6, Scope Tier 4) by file id. Unlike SearchFilesByMetadata it
// does not decode the concepts: retrieval reads them as words.
func (k *KnowledgeBase) FileDescriptions(ctx context.Context, repoID int64) ([]FileDescription, error) {
	ds, err := scanAll(ctx, k.db, func(r *sql.Rows, d *FileDescription) error {
		return r.Scan(&d.FileID, &d.Module, &d.Domain, &d.Concepts, &d.Purpose)
	}, `SELECT m.file_id, COALESCE(m.module, ''), COALESCE(m.domain, ''), COALESCE(m.concepts, ''), COALESCE(m.purpose, '')
		FROM file_metadata m JOIN files f ON f.id = m.file_id WHERE f.repo_id = ? ORDER BY m.file_id`, repoID)
	if err != nil {
		return nil, fmt.Errorf("query file metadata: %w", err)
	}
	return ds, nil
}

// FileLink links one of a query's files (From) to another file (To).
type FileLink struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// Count is what the link counts: the commits both files changed in
	// (CoChangeLinks), the rare names they share (RareNameLinks); 0 for an import (ImportLinks).
	Count int `json:"count,omitempty"`
}

// ImportLinks lists the dependency edges of fileIDs both ways: first each
// file's imports (From imports To), then its importers (To imports From).
// An edge between two of the files appears once from each; a file that
// imports another twice (import and type_ref) links to it twice.
func (k *KnowledgeBase) ImportLinks(ctx context.Context, fileIDs []int64) ([]FileLink, error) {
	ph, args := placeholders(fileIDs)
	ls, err := scanAll(ctx, k.db, func(r *sql.Rows, l *FileLink) error {
		return r.Scan(&l.From, &l.To)
	}, `SELECT source_file_id, target_file_id FROM dependencies WHERE source_file_id IN (`+ph+`)
		UNION ALL SELECT target_file_id, source_file_id FROM dependencies WHERE target_file_id IN (`+ph+`)`, append(args, args...)...)
	if err != nil {
		return nil, fmt.Errorf("query dependency links: %w", err)
	}
	return ls, nil
}

// DeclarationKinds counts the definitions of each of fileIDs by kind, as
// lang.DeclarationKinds does: every definition, nested ones included, but
// an interface's methods. A file without definitions is absent.
func (k *KnowledgeBase) DeclarationKinds(ctx context.Context, fileIDs []int64) (map[int64]map[string]int, error) {
	out := map[int64]map[string]int{}
	if len(fileIDs) == 0 {
		return out, nil
	}
	ph, args := placeholders(fileIDs)
	err := scanRows(ctx, k.db, `SELECT s.file_id, s.kind, COUNT(*) FROM symbols s LEFT JOIN symbols p ON p.id = s.parent_symbol_id
		WHERE s.file_id IN (`+ph+`) AND NOT (s.kind = 'method' AND COALESCE(p.kind, '') = 'interface') GROUP BY s.file_id, s.kind`, args, func(rows *sql.Rows) error {
		var id int64
		var kind string
		var n int
		if err := rows.Scan(&id, &kind, &n); err != nil {
			return err
		}
		if out[id] == nil {
			out[id] = map[string]int{}
		}
		out[id][kind] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("query declaration kinds: %w", err)
	}
	return out, nil
}

// CoChangeLinks lists the files that changed together with one of fileIDs
// in at least minCount commits, with the count.
func (k *KnowledgeBase) CoChangeLinks(ctx context.Context, fileIDs []int64, minCount int) ([]FileLink, error) {
	ph, args := placeholders(fileIDs)
	ls, err := scanAll(ctx, k.db, scanLink, `SELECT file_a_id, file_b_id, count FROM co_changes WHERE file_a_id IN (`+ph+`) AND count >= ?
		UNION ALL SELECT file_b_id, file_a_id, count FROM co_changes WHERE file_b_id IN (`+ph+`) AND count >= ?`,
		append(append(append(args, minCount), args...), minCount)...)
	if err != nil {
		return nil, fmt.Errorf("query co-change links: %w", err)
	}
	return ls, nil
}

// RareNameLinks links fileIDs to other files through names defined in at
// most maxDefs files: a name defined everywhere (String, get) links
// nothing. Definers links each of fileIDs to the files that define names
// it uses (name_refs), users each of fileIDs to the files that use names
// it defines. Count is the number of such names; links come ordered by
// From, then To.
func (k *KnowledgeBase) RareNameLinks(ctx context.Context, fileIDs []int64, maxDefs int) (definers, users []FileLink, err error) {
	ph, args := placeholders(fileIDs)
	// Without the graph the links are computed here. The CTEs are
	// materialized, and the rare names joined before the other side's
	// rows: otherwise SQLite reads a common name's definers or users
	// once per pair of files (helper, save) before the bound drops them,
	// and a set of 60 files took seconds.
	qd := `WITH used AS MATERIALIZED (SELECT DISTINCT file_id, name FROM name_refs WHERE file_id IN (` + ph + `)),
		defs AS MATERIALIZED (SELECT s.name, s.file_id FROM symbols s WHERE s.name IN (SELECT name FROM used)),
		rare AS MATERIALIZED (SELECT name FROM defs GROUP BY name HAVING COUNT(DISTINCT file_id) <= ?)
		SELECT u.file_id, d.file_id, COUNT(DISTINCT u.name) FROM used u JOIN rare USING (name) JOIN defs d USING (name)
		WHERE d.file_id != u.file_id GROUP BY u.file_id, d.file_id ORDER BY 1, 2`
	qu := `WITH defined AS MATERIALIZED (SELECT DISTINCT file_id, name FROM symbols WHERE file_id IN (` + ph + `)),
		rare AS MATERIALIZED (SELECT name FROM symbols WHERE name IN (SELECT name FROM defined) GROUP BY name HAVING COUNT(DISTINCT file_id) <= ?)
		SELECT d.file_id, r.file_id, COUNT(DISTINCT r.name) FROM defined d JOIN rare USING (name) CROSS JOIN name_refs r ON r.name = d.name
		WHERE r.file_id != d.file_id GROUP BY d.file_id, r.file_id ORDER BY 1, 2`
	qargs := append(args, maxDefs)
	if ok, err := k.identGraph(ctx, maxDefs); err != nil {
		return nil, nil, fmt.Errorf("query identifier links: %w", err)
	} else if ok {
		qd = `SELECT user_file, def_file, COUNT(*) FROM ident_names WHERE user_file IN (` + ph + `) GROUP BY 1, 2 ORDER BY 1, 2`
		qu = `SELECT def_file, user_file, COUNT(*) FROM ident_names WHERE def_file IN (` + ph + `) GROUP BY 1, 2 ORDER BY 1, 2`
		qargs = args
	}
	if definers, err = scanAll(ctx, k.db, scanLink, qd, qargs...); err != nil {
		return nil, nil, fmt.Errorf("query identifier links: %w", err)
	}
	if users, err = scanAll(ctx, k.db, scanLink, qu, qargs...); err != nil {
		return nil, nil, fmt.Errorf("query identifier links: %w", err)
	}
	return definers, users, nil
}

// identGraph reports whether the indexer has built ident_names for
// maxDefs (see migration 0004): then the rare-name links are read from it,
// otherwise (an older index, opened read-only and not yet migrated; a
// fixture) computed from name_refs and symbols, with the same result.
func (k *KnowledgeBase) identGraph(ctx context.Context, maxDefs int) (bool, error) {
	var n int
	if err := k.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'ident_state'`).Scan(&n); err != nil || n == 0 {
		return false, err
	}
	err := k.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM ident_state WHERE max_defs = ?`, maxDefs).Scan(&n)
	return n > 0, err
}

func scanLink(r *sql.Rows, l *FileLink) error { return r.Scan(&l.From, &l.To, &l.Count) }

// Definition is a symbol as the context assembler lays out a file: where
// it starts and ends, what it is, and what encloses it.
type Definition struct {
	ID        int64  `json:"id"`
	FileID    int64  `json:"file_id"`
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	Signature string `json:"signature,omitempty"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
	ParentID  int64  `json:"parent_id,omitempty"` // 0 at top level
}

// DefinitionsOfFiles calls fn for each symbol of fileIDs, by file, then in
// source order: one query for a whole context package.
func (k *KnowledgeBase) DefinitionsOfFiles(ctx context.Context, fileIDs []int64, fn func(Definition)) error {
	ph, args := placeholders(fileIDs)
	err := scanEach(ctx, k.db, func(r *sql.Rows, d *Definition) error {
		return r.Scan(&d.FileID, &d.ID, &d.Name, &d.Kind, &d.Signature, &d.StartLine, &d.EndLine, &d.ParentID)
	}, fn, `SELECT file_id, id, name, kind, COALESCE(signature, ''), start_line, end_line, COALESCE(parent_symbol_id, 0)
		FROM symbols WHERE file_id IN (`+ph+`) ORDER BY file_id, start_line, id`, args...)
	if err != nil {
		return fmt.Errorf("query definitions: %w", err)
	}
	return nil
}

// Span is the lines of one symbol of a file.
type Span struct {
	FileID    int64 `json:"file_id"`
	StartLine int   `json:"start_line"`
	EndLine   int   `json:"end_line"`
}

// SpansOfFiles calls fn with the line span of each symbol of fileIDs, by
// file, then in source order: what the chunk signal scores one by one.
func (k *KnowledgeBase) SpansOfFiles(ctx context.Context, fileIDs []int64, fn func(Span)) error {
	ph, args := placeholders(fileIDs)
	err := scanEach(ctx, k.db, func(r *sql.Rows, v *Span) error {
		return r.Scan(&v.FileID, &v.StartLine, &v.EndLine)
	}, fn, `SELECT file_id, start_line, end_line FROM symbols WHERE file_id IN (`+ph+`)
		ORDER BY file_id, start_line, id`, args...)
	if err != nil {
		return fmt.Errorf("query symbol spans: %w", err)
	}
	return nil
}

// Reference is a resolved reference edge (symbol_references, Python in the
// MVP): the caller refers to the callee.
type Reference struct {
	CallerID int64 `json:"caller_id"`
	CalleeID int64 `json:"callee_id"`
}

// ReferencesOf lists the reference edges from or to any of symbolIDs in
// the order the indexer wrote them, at most limit: a symbol with thousands
// of callers costs no more than limit rows.
func (k *KnowledgeBase) ReferencesOf(ctx context.Context, symbolIDs []int64, limit int) ([]Reference, error) {
	ph, args := placeholders(symbolIDs)
	rs, err := scanAll(ctx, k.db, func(rows *sql.Rows, r *Reference) error {
		return rows.Scan(&r.CallerID, &r.CalleeID)
	}, `SELECT caller_symbol_id, callee_symbol_id FROM symbol_references
		WHERE caller_symbol_id IN (`+ph+`) OR callee_symbol_id IN (`+ph+`) ORDER BY id LIMIT ?`, append(append(args, args...), limit)...)
	if err != nil {
		return nil, fmt.Errorf("query references: %w", err)
	}
	return rs, nil
}

// NameUsers returns the ids of the symbols of a repository whose body uses
// name (name_refs, every language), at most limit of them in no particular
// order: a caller that passes its bound plus one learns whether the name
// is used more often than it cares for.
func (k *KnowledgeBase) NameUsers(ctx context.Context, repoID int64, name string, limit int) ([]int64, error) {
	ids, err := scanAll(ctx, k.db, func(r *sql.Rows, id *int64) error {
		return r.Scan(id)
	}, `SELECT DISTINCT nr.symbol_id FROM name_refs nr JOIN files f ON f.id = nr.file_id
			WHERE nr.name = ? AND nr.symbol_id IS NOT NULL AND f.repo_id = ? LIMIT ?`, name, repoID, limit)
	if err != nil {
		return nil, fmt.Errorf("query name users: %w", err)
	}
	return ids, nil
}

// SymbolLocation is a symbol with the file it is in and its first line.
type SymbolLocation struct {
	ID        int64  `json:"id"`
	FileID    int64  `json:"file_id"`
	Path      string `json:"path"`
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	Signature string `json:"signature,omitempty"`
	StartLine int    `json:"start_line"`
}

// symbolBatch is how many ids one query of SymbolsByID asks for.
const symbolBatch = 500

// SymbolsByID calls fn for each symbol of ids that exists. Any number of
// ids is asked for, in batches of symbolBatch, each read in id order.
func (k *KnowledgeBase) SymbolsByID(ctx context.Context, ids []int64, fn func(SymbolLocation)) error {
	for start := 0; start < len(ids); start += symbolBatch {
		ph, args := placeholders(ids[start:min(start+symbolBatch, len(ids))])
		err := scanEach(ctx, k.db, func(r *sql.Rows, v *SymbolLocation) error {
			return r.Scan(&v.ID, &v.FileID, &v.Name, &v.Kind, &v.Signature, &v.StartLine, &v.Path)
		}, fn, `SELECT s.id, s.file_id, s.name, s.kind, COALESCE(s.signature, ''), s.start_line, f.path
			FROM symbols s JOIN files f ON f.id = s.file_id WHERE s.id IN (`+ph+`) ORDER BY s.id`, args...)
		if err != nil {
			return fmt.Errorf("query symbols: %w", err)
		}
	}
	return nil
}

// SymbolComment is a comment inside or above a symbol.
type SymbolComment struct {
	SymbolID int64  `json:"symbol_id"`
	Content  string `json:"content"`
}

// RationalesOf lists the rationale comments (seed 001 §4.5 is_rationale)
// of symbolIDs by symbol, then by line.
func (k *KnowledgeBase) RationalesOf(ctx context.Context, symbolIDs []int64) ([]SymbolComment, error) {
	ph, args := placeholders(symbolIDs)
	cs, err := scanAll(ctx, k.db, func(r *sql.Rows, c *SymbolComment) error {
		return r.Scan(&c.SymbolID, &c.Content)
	}, `SELECT symbol_id, content FROM inline_comments
		WHERE is_rationale = 1 AND symbol_id IN (`+ph+`) ORDER BY symbol_id, line`, args...)
	if err != nil {
		return nil, fmt.Errorf("query rationale comments: %w", err)
	}
	return cs, nil
}

// scanAll runs q and scans each row in place into the slice it returns
// (empty, not nil, when there are none). Unlike queryAll, whose scanner
// interface moves each row to the heap, it costs no allocation per row.
func scanAll[T any](ctx context.Context, db *sql.DB, scan func(*sql.Rows, *T) error, q string, args ...any) ([]T, error) {
	out := []T{}
	err := scanRows(ctx, db, q, args, func(rows *sql.Rows) error {
		var zero T
		out = append(out, zero)
		return scan(rows, &out[len(out)-1])
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// scanEach runs q and calls fn with each row, scanned into one reused
// value.
func scanEach[T any](ctx context.Context, db *sql.DB, scan func(*sql.Rows, *T) error, fn func(T), q string, args ...any) error {
	var v T
	return scanRows(ctx, db, q, args, func(rows *sql.Rows) error {
		if err := scan(rows, &v); err != nil {
			return err
		}
		fn(v)
		return nil
	})
}

// scanRows runs q and calls row at each row; it closes the rows.
func scanRows(ctx context.Context, db *sql.DB, q string, args []any, row func(*sql.Rows) error) error {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
