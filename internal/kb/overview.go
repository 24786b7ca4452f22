package kb

import (
	"context"
	"database/sql"
	"fmt"
)

// FileContext is everything the index knows about one file (seed 001 §12
// get_file_context).
type FileContext struct {
	File              File          `json:"file"`
	Metadata          *FileMetadata `json:"metadata,omitempty"` // nil without enrichment
	Symbols           []Symbol      `json:"symbols"`
	Docstrings        []Docstring   `json:"docstrings"`
	RationaleComments []Comment     `json:"rationale_comments"`
	Imports           []Dependency  `json:"imports"`
	ImportedBy        []Dependency  `json:"imported_by"`
	CoChanges         []CoChange    `json:"co_changes"`     // the CoChangeLimit strongest
	RecentCommits     []Commit      `json:"recent_commits"` // the CommitLimit newest
}

// FileContext gathers a file's symbols, docstrings, rationale comments,
// dependency edges both ways, co-change neighbours, recent commits and
// enrichment. An unknown file is ErrNotFound.
func (k *KnowledgeBase) FileContext(ctx context.Context, fileID int64) (*FileContext, error) {
	f, err := k.FileByID(ctx, fileID)
	if err != nil {
		return nil, err
	}
	c := &FileContext{File: f}
	if c.Metadata, err = k.metadataForFile(ctx, fileID); err != nil {
		return nil, err
	}
	if c.Symbols, err = k.SymbolsForFile(ctx, fileID, ""); err != nil {
		return nil, err
	}
	if c.Docstrings, err = k.DocstringsForFile(ctx, fileID); err != nil {
		return nil, err
	}
	if c.RationaleComments, err = k.RationaleComments(ctx, fileID); err != nil {
		return nil, err
	}
	if c.Imports, err = k.Dependencies(ctx, fileID, Imports); err != nil {
		return nil, err
	}
	if c.ImportedBy, err = k.Dependencies(ctx, fileID, ImportedBy); err != nil {
		return nil, err
	}
	if c.CoChanges, err = k.coChanges(ctx, fileID, 1, k.CoChangeLimit); err != nil {
		return nil, err
	}
	if c.RecentCommits, err = k.RecentCommitsForFile(ctx, fileID, k.CommitLimit); err != nil {
		return nil, err
	}
	return c, nil
}

// RepoOverview summarises an indexed repository (seed 001 §12
// get_repo_overview). The time of the last index run is Repo.IndexedAt.
type RepoOverview struct {
	Repo        Repo            `json:"repo"`
	Files       int             `json:"files"`
	Lines       int             `json:"lines"`
	Languages   []LanguageCount `json:"languages"` // most files first
	Symbols     int             `json:"symbols"`
	SymbolKinds []Count         `json:"symbol_kinds"` // most first
	// DependencyEdges counts distinct (source, target) file pairs.
	DependencyEdges int `json:"dependency_edges"`
	Commits         int `json:"commits"`
	// FirstCommitAt and LastCommitAt bound the mined history; empty
	// without commits.
	FirstCommitAt string `json:"first_commit_at,omitempty"`
	LastCommitAt  string `json:"last_commit_at,omitempty"`
	// EnrichedFiles counts files with promoted enrichment, and Domains
	// their domains, most files first; both are empty without enrichment.
	EnrichedFiles int     `json:"enriched_files"`
	Domains       []Count `json:"domains"`
	// MostConnected are the TopN files with the most dependency
	// neighbours (distinct importers plus distinct imports).
	MostConnected []ConnectedFile `json:"most_connected"`
	// TopCoChanges are the TopN pairs of files that changed together most.
	TopCoChanges []CoChangePair `json:"top_co_changes"`
	// SyntaxWarnings counts files the parser recovered from syntax errors
	// in; their facts may be incomplete.
	SyntaxWarnings int `json:"files_with_syntax_errors"`
}

// LanguageCount is the size of one language in a repository.
type LanguageCount struct {
	Language string `json:"language"`
	Files    int    `json:"files"`
	Lines    int    `json:"lines"`
}

// Count is a name with a number of things.
type Count struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// ConnectedFile is a file with its dependency degree.
type ConnectedFile struct {
	FileID     int64  `json:"file_id"`
	Path       string `json:"path"`
	Imports    int    `json:"imports"`     // distinct files it depends on
	ImportedBy int    `json:"imported_by"` // distinct files that depend on it
}

// CoChangePair is two files that changed in Count commits together.
type CoChangePair struct {
	FileAID int64  `json:"file_a_id"`
	PathA   string `json:"path_a"`
	FileBID int64  `json:"file_b_id"`
	PathB   string `json:"path_b"`
	Count   int    `json:"count"`
}

// RepoOverview summarises a repository; an unknown repoID is ErrNotFound.
func (k *KnowledgeBase) RepoOverview(ctx context.Context, repoID int64) (*RepoOverview, error) {
	r, err := k.repoByID(ctx, repoID)
	if err != nil {
		return nil, err
	}
	o := &RepoOverview{Repo: r}
	fail := func(what string, err error) (*RepoOverview, error) {
		return nil, fmt.Errorf("repo overview: %s: %w", what, err)
	}

	o.Languages, err = queryAll(ctx, k.db, func(s scanner) (LanguageCount, error) {
		var l LanguageCount
		err := s.Scan(&l.Language, &l.Files, &l.Lines)
		return l, err
	}, `SELECT f.language, COUNT(*), COALESCE(SUM(fi.line_count), 0)
		FROM files f LEFT JOIN file_index fi ON fi.file_id = f.id WHERE f.repo_id = ?
		GROUP BY f.language ORDER BY 2 DESC, 1`, repoID)
	if err != nil {
		return fail("languages", err)
	}
	for _, l := range o.Languages {
		o.Files += l.Files
		o.Lines += l.Lines
	}

	o.SymbolKinds, err = queryAll(ctx, k.db, scanCount, `SELECT s.kind, COUNT(*)
		FROM symbols s JOIN files f ON f.id = s.file_id WHERE f.repo_id = ?
		GROUP BY s.kind ORDER BY 2 DESC, 1`, repoID)
	if err != nil {
		return fail("symbols", err)
	}
	for _, c := range o.SymbolKinds {
		o.Symbols += c.Count
	}

	var first, last sql.NullString
	err = k.db.QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM (SELECT DISTINCT d.source_file_id, d.target_file_id
			FROM dependencies d JOIN files f ON f.id = d.source_file_id WHERE f.repo_id = ?1)),
		(SELECT COUNT(*) FROM commits c WHERE c.repo_id = ?1),
		(SELECT c.timestamp FROM commits c WHERE c.repo_id = ?1 ORDER BY julianday(c.timestamp), c.timestamp, c.id DESC LIMIT 1),
		(SELECT c.timestamp FROM commits c WHERE c.repo_id = ?1 ORDER BY `+byTime+` LIMIT 1),
		(SELECT COUNT(*) FROM file_metadata m JOIN files f ON f.id = m.file_id WHERE f.repo_id = ?1),
		(SELECT COUNT(*) FROM file_index fi JOIN files f ON f.id = fi.file_id WHERE f.repo_id = ?1 AND fi.syntax_errors > 0)`,
		repoID).Scan(&o.DependencyEdges, &o.Commits, &first, &last, &o.EnrichedFiles, &o.SyntaxWarnings)
	if err != nil {
		return fail("counts", err)
	}
	o.FirstCommitAt, o.LastCommitAt = first.String, last.String

	o.Domains, err = queryAll(ctx, k.db, scanCount, `SELECT m.domain, COUNT(*)
		FROM file_metadata m JOIN files f ON f.id = m.file_id WHERE f.repo_id = ? AND COALESCE(m.domain, '') != ''
		GROUP BY m.domain ORDER BY 2 DESC, 1`, repoID)
	if err != nil {
		return fail("domains", err)
	}

	o.MostConnected, err = queryAll(ctx, k.db, func(s scanner) (ConnectedFile, error) {
		var c ConnectedFile
		err := s.Scan(&c.FileID, &c.Path, &c.Imports, &c.ImportedBy)
		return c, err
	}, `SELECT id, path, imports, imported_by FROM (
			SELECT f.id, f.path,
				(SELECT COUNT(DISTINCT d.target_file_id) FROM dependencies d WHERE d.source_file_id = f.id) AS imports,
				(SELECT COUNT(DISTINCT d.source_file_id) FROM dependencies d WHERE d.target_file_id = f.id) AS imported_by
			FROM files f WHERE f.repo_id = ?)
		WHERE imports + imported_by > 0
		ORDER BY imports + imported_by DESC, imported_by DESC, path LIMIT ?`, repoID, k.TopN)
	if err != nil {
		return fail("most connected files", err)
	}

	o.TopCoChanges, err = queryAll(ctx, k.db, func(s scanner) (CoChangePair, error) {
		var p CoChangePair
		err := s.Scan(&p.FileAID, &p.PathA, &p.FileBID, &p.PathB, &p.Count)
		return p, err
	}, `SELECT a.id, a.path, b.id, b.path, c.count
		FROM co_changes c JOIN files a ON a.id = c.file_a_id JOIN files b ON b.id = c.file_b_id
		WHERE a.repo_id = ? ORDER BY c.count DESC, a.path, b.path LIMIT ?`, repoID, k.TopN)
	if err != nil {
		return fail("co-changes", err)
	}
	return o, nil
}

func scanCount(s scanner) (Count, error) {
	var c Count
	err := s.Scan(&c.Name, &c.Count)
	return c, err
}
