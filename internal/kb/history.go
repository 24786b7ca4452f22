package kb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Commit is a mined git commit.
type Commit struct {
	ID           int64  `json:"id"`
	RepoID       int64  `json:"repo_id"`
	Hash         string `json:"hash"`
	Author       string `json:"author,omitempty"`
	Message      string `json:"message,omitempty"`
	Timestamp    string `json:"timestamp"` // RFC 3339
	FilesChanged int    `json:"files_changed"`
	Insertions   int    `json:"insertions"`
	Deletions    int    `json:"deletions"`
}

// byTime orders commits newest first. julianday reads RFC 3339 with any UTC
// offset as an instant, where text order would not. Git times have whole
// seconds, so ties are common in scripted histories; the indexer stores a
// run's commits as git log gives them, newest first, so the lower id is
// the newer one.
const byTime = `julianday(c.timestamp) DESC, c.timestamp DESC, c.id`

// RecentCommitsForFile lists the commits that changed a file, newest first.
// limit <= 0 means CommitLimit.
func (k *KnowledgeBase) RecentCommitsForFile(ctx context.Context, fileID int64, limit int) ([]Commit, error) {
	if limit <= 0 {
		limit = k.CommitLimit
	}
	cs, err := queryAll(ctx, k.db, func(s scanner) (Commit, error) {
		var c Commit
		err := s.Scan(&c.ID, &c.RepoID, &c.Hash, &c.Author, &c.Message, &c.Timestamp, &c.FilesChanged, &c.Insertions, &c.Deletions)
		return c, err
	}, `SELECT c.id, c.repo_id, c.hash, COALESCE(c.author, ''), COALESCE(c.message, ''), c.timestamp,
			COALESCE(c.files_changed, 0), COALESCE(c.insertions, 0), COALESCE(c.deletions, 0)
		FROM file_commits fc JOIN commits c ON c.id = fc.commit_id
		WHERE fc.file_id = ? ORDER BY `+byTime+` LIMIT ?`, fileID, limit)
	if err != nil {
		return nil, fmt.Errorf("query commits: %w", err)
	}
	return cs, nil
}

// FileMetadata is the LLM enrichment of a file, present only after
// 'cra enrich --promote' (seed 001 §4.4).
type FileMetadata struct {
	FileID           int64    `json:"file_id"`
	Path             string   `json:"path"`
	Purpose          string   `json:"purpose,omitempty"`
	Module           string   `json:"module,omitempty"`
	Domain           string   `json:"domain,omitempty"`
	Concepts         []string `json:"concepts,omitempty"`
	PublicAPISurface []string `json:"public_api_surface,omitempty"`
	ComplexityNotes  string   `json:"complexity_notes,omitempty"`
}

const metadataSelect = `SELECT m.file_id, f.path, COALESCE(m.purpose, ''), COALESCE(m.module, ''), COALESCE(m.domain, ''),
	COALESCE(m.concepts, ''), COALESCE(m.public_api_surface, ''), COALESCE(m.complexity_notes, '')
	FROM file_metadata m JOIN files f ON f.id = m.file_id `

func scanMetadata(s scanner) (FileMetadata, error) {
	var m FileMetadata
	var concepts, api string
	if err := s.Scan(&m.FileID, &m.Path, &m.Purpose, &m.Module, &m.Domain, &concepts, &api, &m.ComplexityNotes); err != nil {
		return m, err
	}
	var err error
	if m.Concepts, err = jsonList(concepts); err != nil {
		return m, fmt.Errorf("file_metadata.concepts of %s: %w", m.Path, err)
	}
	if m.PublicAPISurface, err = jsonList(api); err != nil {
		return m, fmt.Errorf("file_metadata.public_api_surface of %s: %w", m.Path, err)
	}
	return m, nil
}

// jsonList decodes a JSON array of strings column; empty text is no list.
// Anything else is an error rather than a silently empty list: the promote
// step is meant to store only valid arrays.
func jsonList(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var l []string
	if err := json.Unmarshal([]byte(s), &l); err != nil {
		return nil, fmt.Errorf("not a JSON array of strings: %w", err)
	}
	return l, nil
}

// SearchFilesByMetadata lists the enriched files of a repository whose
// domain and module equal the given ones (ignoring case; an empty value
// does not filter) and that share at least one of concepts (none given
// does not filter), by path. It returns an empty list, not an error, when
// the repository has no enrichment (seed 001 §12).
func (k *KnowledgeBase) SearchFilesByMetadata(ctx context.Context, repoID int64, domain, module string, concepts []string) ([]FileMetadata, error) {
	ms, err := queryAll(ctx, k.db, scanMetadata, metadataSelect+`
		WHERE f.repo_id = ? AND (? = '' OR m.domain = ? COLLATE NOCASE) AND (? = '' OR m.module = ? COLLATE NOCASE)
		ORDER BY f.path`, repoID, domain, domain, module, module)
	if err != nil {
		return nil, fmt.Errorf("search file metadata: %w", err)
	}
	if len(concepts) == 0 {
		return ms, nil
	}
	out := []FileMetadata{}
	for _, m := range ms {
		if sharesConcept(m.Concepts, concepts) {
			out = append(out, m)
		}
	}
	return out, nil
}

func sharesConcept(have, want []string) bool {
	for _, h := range have {
		for _, w := range want {
			if strings.EqualFold(strings.TrimSpace(h), strings.TrimSpace(w)) {
				return true
			}
		}
	}
	return false
}

// metadataForFile returns a file's enrichment, or nil when it has none.
func (k *KnowledgeBase) metadataForFile(ctx context.Context, fileID int64) (*FileMetadata, error) {
	m, err := scanMetadata(k.db.QueryRowContext(ctx, metadataSelect+`WHERE m.file_id = ?`, fileID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("query file metadata: %w", err)
	}
	return &m, nil
}

// EnrichmentPromoted reports whether any file of the repository has
// promoted enrichment; without it retrieval skips Scope Tier 4 (seed 001
// §5.6, §14.4).
func (k *KnowledgeBase) EnrichmentPromoted(ctx context.Context, repoID int64) (bool, error) {
	var ok bool
	err := k.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM file_metadata m JOIN files f ON f.id = m.file_id
		WHERE f.repo_id = ?)`, repoID).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("query enrichment: %w", err)
	}
	return ok, nil
}

// Adapter is the metadata of a LoRA adapter serving one pipeline stage
// (seed 001 §4.5 adapter_metadata, §16).
type Adapter struct {
	ID               int64  `json:"id"`
	StageName        string `json:"stage_name"`
	BaseModel        string `json:"base_model"` // coding or reasoning
	ModelTag         string `json:"model_tag"`
	Version          int    `json:"version"`
	Active           bool   `json:"active"`
	PerformanceNotes string `json:"performance_notes,omitempty"`
	DeployedAt       string `json:"deployed_at"`
}

// adapterColumns are the columns of adapter_metadata scanAdapter reads.
const adapterColumns = `id, stage_name, base_model, model_tag, version, active != 0, COALESCE(performance_notes, ''), deployed_at`

func scanAdapter(s scanner) (Adapter, error) {
	var a Adapter
	err := s.Scan(&a.ID, &a.StageName, &a.BaseModel, &a.ModelTag, &a.Version, &a.Active, &a.PerformanceNotes, &a.DeployedAt)
	return a, err
}

// AdapterForStage returns the active adapter of a stage, or nil when the
// stage has none. When several are active the latest deployment wins, then
// the highest version: re-deploying an older version is a rollback.
func (k *KnowledgeBase) AdapterForStage(ctx context.Context, stageName string) (*Adapter, error) {
	a, err := scanAdapter(k.db.QueryRowContext(ctx, `SELECT `+adapterColumns+` FROM adapter_metadata
		WHERE stage_name = ? AND active = 1
		ORDER BY julianday(deployed_at) DESC, deployed_at DESC, version DESC, id DESC LIMIT 1`, stageName))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("query adapter: %w", err)
	}
	return &a, nil
}

// ActiveAdapterStages lists, by name, the stages that have an active
// adapter (seed 001 §16.1).
func (k *KnowledgeBase) ActiveAdapterStages(ctx context.Context) ([]string, error) {
	stages, err := queryAll(ctx, k.db, func(s scanner) (string, error) {
		var name string
		return name, s.Scan(&name)
	}, `SELECT DISTINCT stage_name FROM adapter_metadata WHERE active = 1 ORDER BY stage_name`)
	if err != nil {
		return nil, fmt.Errorf("query adapters: %w", err)
	}
	return stages, nil
}

// Adapters lists every row of adapter_metadata, active or not, by stage
// then version (seed 001 §4.5): the deployment history `cra adapters
// list` and rollback read.
func (k *KnowledgeBase) Adapters(ctx context.Context) ([]Adapter, error) {
	adapters, err := queryAll(ctx, k.db, scanAdapter,
		`SELECT `+adapterColumns+` FROM adapter_metadata ORDER BY stage_name, version, id`)
	if err != nil {
		return nil, fmt.Errorf("query adapters: %w", err)
	}
	return adapters, nil
}

// PastCommit is a mined commit as the ranker's history signal reads it:
// its message, how many files it changed in all (FilesChanged, the files
// the index no longer holds included), and the indexed files among them.
type PastCommit struct {
	ID           int64
	Message      string
	FilesChanged int
	Files        []int64 // by id, ascending
}

// PastCommits lists a repository's mined commits with the indexed files
// each changed, by id, and the max_commit_files bound they were mined
// with (0 when never mined). The indexer mines only commits reachable
// from the indexed HEAD (a HEAD that is not a descendant of the one mined
// before re-mines from scratch), so none is later than the checkout.
func (k *KnowledgeBase) PastCommits(ctx context.Context, repoID int64) ([]PastCommit, int, error) {
	var maxFiles sql.NullInt64
	err := k.db.QueryRowContext(ctx, `SELECT max_commit_files FROM repo_state WHERE repo_id = ?`, repoID).Scan(&maxFiles)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, 0, fmt.Errorf("query past commits: %w", err)
	}
	rows, err := k.db.QueryContext(ctx, `SELECT c.id, COALESCE(c.message, ''), COALESCE(c.files_changed, 0), fc.file_id
		FROM commits c LEFT JOIN file_commits fc ON fc.commit_id = c.id
		WHERE c.repo_id = ? ORDER BY c.id, fc.file_id`, repoID)
	if err != nil {
		return nil, 0, fmt.Errorf("query past commits: %w", err)
	}
	defer rows.Close()
	var out []PastCommit
	for rows.Next() {
		var (
			c    PastCommit
			file sql.NullInt64
		)
		if err := rows.Scan(&c.ID, &c.Message, &c.FilesChanged, &file); err != nil {
			return nil, 0, fmt.Errorf("query past commits: %w", err)
		}
		if n := len(out); n == 0 || out[n-1].ID != c.ID {
			out = append(out, c)
		}
		if file.Valid {
			last := &out[len(out)-1]
			last.Files = append(last.Files, file.Int64)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("query past commits: %w", err)
	}
	return out, int(maxFiles.Int64), nil
}
