// Package kb is the read-only query API over the curated database (seed 001
// §12): the files, symbols, references, dependency edges, co-change pairs,
// history and enrichment of indexed repositories. Retrieval stages and
// 'cra query' read the index only through it; nothing here writes.
//
// List methods return an empty, non-nil slice when nothing matches (so that
// JSON shows [] rather than null); lookups of one thing by id or path return
// ErrNotFound.
package kb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
)

// ErrNotIndexed is returned when a repository has no entry in the curated
// database. The fix is to index it (seed 001 §14.2).
var ErrNotIndexed = errors.New("repository is not indexed: run 'cra index <repo>' first")

// ErrNotFound is returned when a file or repository asked for by id or path
// is not in the index.
var ErrNotFound = errors.New("not found")

// Directions of SymbolNeighbors, Dependencies and DependencyWalk.
const (
	Callers    = "callers"     // symbols that reference the symbol
	Callees    = "callees"     // symbols the symbol references
	Imports    = "imports"     // files the file depends on
	ImportedBy = "imported_by" // files that depend on the file
	Both       = "both"
)

// Defaults of the KnowledgeBase bounds.
const (
	DefaultSymbolLimit   = 50
	DefaultNodeLimit     = 200
	DefaultCommitLimit   = 10
	DefaultCoChangeLimit = 20
	DefaultTopN          = 10
)

// KnowledgeBase answers questions about indexed repositories from a curated
// database connection. The connection should be read-only
// (store.Factory.Open with readOnly true, seed 001 §4.2); KnowledgeBase never
// writes either way. It is safe for concurrent use.
type KnowledgeBase struct {
	db *sql.DB

	// SymbolLimit caps SearchSymbolsByName when the caller passes no limit.
	SymbolLimit int
	// NodeLimit caps the files DependencyWalk and DependencySubgraph add to
	// their seeds, so that a hub file cannot pull in the whole repository.
	NodeLimit int
	// CommitLimit is the number of commits RecentCommitsForFile returns when
	// the caller passes no limit, and the number FileContext includes.
	CommitLimit int
	// CoChangeLimit is the number of co-change neighbours FileContext
	// includes (the strongest first).
	CoChangeLimit int
	// TopN is the length of RepoOverview's lists of most-connected files and
	// top co-change pairs.
	TopN int
}

// New returns a KnowledgeBase over db with the default bounds.
func New(db *sql.DB) *KnowledgeBase {
	return &KnowledgeBase{
		db:            db,
		SymbolLimit:   DefaultSymbolLimit,
		NodeLimit:     DefaultNodeLimit,
		CommitLimit:   DefaultCommitLimit,
		CoChangeLimit: DefaultCoChangeLimit,
		TopN:          DefaultTopN,
	}
}

// Repo is one indexed repository.
type Repo struct {
	ID        int64  `json:"id"`
	Path      string `json:"path"` // absolute, as the indexer stored it
	RemoteURL string `json:"remote_url,omitempty"`
	IndexedAt string `json:"indexed_at"` // when the last index run finished
	Files     int    `json:"files"`      // indexed files; 0 means the index is empty
}

const repoCols = `r.id, r.path, COALESCE(r.remote_url, ''), r.indexed_at,
	(SELECT COUNT(*) FROM files f WHERE f.repo_id = r.id)`

func scanRepo(s scanner) (Repo, error) {
	var r Repo
	err := s.Scan(&r.ID, &r.Path, &r.RemoteURL, &r.IndexedAt, &r.Files)
	return r, err
}

// Repo returns the repository indexed at path, an absolute directory; it
// returns ErrNotIndexed when the index has no such repository.
func (k *KnowledgeBase) Repo(ctx context.Context, path string) (Repo, error) {
	r, err := scanRepo(k.db.QueryRowContext(ctx,
		`SELECT `+repoCols+` FROM repos r WHERE r.path = ? ORDER BY r.id LIMIT 1`, filepath.Clean(path)))
	if errors.Is(err, sql.ErrNoRows) {
		return Repo{}, ErrNotIndexed
	}
	if err != nil {
		return Repo{}, fmt.Errorf("query repo: %w", err)
	}
	return r, nil
}

// Repos lists every indexed repository by path.
func (k *KnowledgeBase) Repos(ctx context.Context) ([]Repo, error) {
	rs, err := queryAll(ctx, k.db, scanRepo, `SELECT `+repoCols+` FROM repos r ORDER BY r.path, r.id`)
	if err != nil {
		return nil, fmt.Errorf("query repos: %w", err)
	}
	return rs, nil
}

func (k *KnowledgeBase) repoByID(ctx context.Context, id int64) (Repo, error) {
	r, err := scanRepo(k.db.QueryRowContext(ctx, `SELECT `+repoCols+` FROM repos r WHERE r.id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Repo{}, fmt.Errorf("repo %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return Repo{}, fmt.Errorf("query repo: %w", err)
	}
	return r, nil
}

// File is one indexed source file. Lines and SyntaxErrors come from the
// indexer's per-file facts and are 0 when it recorded none.
type File struct {
	ID           int64  `json:"id"`
	RepoID       int64  `json:"repo_id"`
	Path         string `json:"path"` // slash-separated, relative to the repository root
	Language     string `json:"language"`
	ContentHash  string `json:"content_hash"` // hex SHA-256
	SizeBytes    int64  `json:"size_bytes"`
	Lines        int    `json:"lines"`
	SyntaxErrors int    `json:"syntax_errors,omitempty"` // damaged regions the parser recovered from
}

const fileCols = `f.id, f.repo_id, f.path, f.language, f.content_hash, f.size_bytes,
	COALESCE(fi.line_count, 0), COALESCE(fi.syntax_errors, 0)`

const fileFrom = ` FROM files f LEFT JOIN file_index fi ON fi.file_id = f.id `

func scanFile(s scanner) (File, error) {
	var f File
	err := s.Scan(&f.ID, &f.RepoID, &f.Path, &f.Language, &f.ContentHash, &f.SizeBytes, &f.Lines, &f.SyntaxErrors)
	return f, err
}

// Files lists the files of a repository by path; a non-empty language
// (python, typescript, tsx, javascript, go; any case) keeps only that one.
func (k *KnowledgeBase) Files(ctx context.Context, repoID int64, language string) ([]File, error) {
	language = strings.ToLower(language)
	fs, err := queryAll(ctx, k.db, scanFile, `SELECT `+fileCols+fileFrom+`
		WHERE f.repo_id = ? AND (? = '' OR f.language = ?) ORDER BY f.path`, repoID, language, language)
	if err != nil {
		return nil, fmt.Errorf("query files: %w", err)
	}
	return fs, nil
}

// FileByPath returns the file at p (slash-separated, relative to the
// repository root; "./a/../b" is read as "b") or ErrNotFound.
func (k *KnowledgeBase) FileByPath(ctx context.Context, repoID int64, p string) (File, error) {
	f, err := scanFile(k.db.QueryRowContext(ctx, `SELECT `+fileCols+fileFrom+`
		WHERE f.repo_id = ? AND f.path = ? ORDER BY f.id LIMIT 1`, repoID, path.Clean(p)))
	if errors.Is(err, sql.ErrNoRows) {
		return File{}, fmt.Errorf("file %q: %w", p, ErrNotFound)
	}
	if err != nil {
		return File{}, fmt.Errorf("query file: %w", err)
	}
	return f, nil
}

// FileByID returns the file with id or ErrNotFound.
func (k *KnowledgeBase) FileByID(ctx context.Context, id int64) (File, error) {
	f, err := scanFile(k.db.QueryRowContext(ctx, `SELECT `+fileCols+fileFrom+` WHERE f.id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return File{}, fmt.Errorf("file %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return File{}, fmt.Errorf("query file: %w", err)
	}
	return f, nil
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

// queryAll runs q and scans every row with scan. It returns an empty,
// non-nil slice when there are none.
func queryAll[T any](ctx context.Context, db *sql.DB, scan func(scanner) (T, error), q string, args ...any) ([]T, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// placeholders returns "?, ?, ?" for n values, and the values as []any.
func placeholders[T any](vs []T) (string, []any) {
	args := make([]any, len(vs))
	for i, v := range vs {
		args[i] = v
	}
	return strings.TrimSuffix(strings.Repeat("?, ", len(vs)), ", "), args
}

func checkDirection(direction string, allowed ...string) error {
	for _, a := range allowed {
		if direction == a {
			return nil
		}
	}
	return fmt.Errorf("invalid direction %q: want %s", direction, strings.Join(allowed, ", "))
}
