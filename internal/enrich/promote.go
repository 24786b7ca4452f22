package enrich

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/kb"
)

// PromoteResult sums up a promotion.
type PromoteResult struct {
	// Promoted files got the newest valid output of their current content.
	Promoted int `json:"promoted"`
	// Missing files have no valid output of their current content (never
	// enriched, changed since, or only malformed replies); a row they had
	// in file_metadata is left as it was. Empty files are not counted.
	Missing int `json:"missing"`
}

// Promote copies, for each file of the repository, the newest valid
// enrichment output of its current content from the raw database into the
// curated file_metadata, and marks those outputs promoted (seed 001 §4.4).
// curated must be a read-write connection: promotion is one of the three
// writers of the curated database.
func Promote(ctx context.Context, raw *corpus.Corpus, curated *sql.DB, repoID int64) (PromoteResult, error) {
	var res PromoteResult
	all, err := kb.New(curated).Files(ctx, repoID, "")
	if err != nil {
		return res, fmt.Errorf("promote: list files: %w", err)
	}
	// Empty files are never enriched: there is nothing to describe.
	files := slices.DeleteFunc(all, func(f kb.File) bool { return f.SizeBytes == 0 })

	tx, err := curated.BeginTx(ctx, nil)
	if err != nil {
		return res, fmt.Errorf("promote: %w", err)
	}
	defer tx.Rollback()
	upsert, err := tx.PrepareContext(ctx, `INSERT INTO file_metadata
		(file_id, purpose, module, domain, concepts, public_api_surface, complexity_notes) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(file_id) DO UPDATE SET purpose = excluded.purpose, module = excluded.module, domain = excluded.domain,
			concepts = excluded.concepts, public_api_surface = excluded.public_api_surface, complexity_notes = excluded.complexity_notes`)
	if err != nil {
		return res, fmt.Errorf("promote: %w", err)
	}
	defer upsert.Close()
	var promoted []int64
	for _, f := range files {
		d, ok, err := raw.NewestEnrichment(ctx, f.Path, f.ContentHash)
		if err != nil {
			return res, fmt.Errorf("promote %s: %w", f.Path, err)
		}
		if !ok {
			res.Missing++
			continue
		}
		if _, err := upsert.ExecContext(ctx, f.ID, d.Purpose, d.Module, d.Domain, d.Concepts, d.PublicAPISurface, d.ComplexityNotes); err != nil {
			return res, fmt.Errorf("promote %s: %w", f.Path, err)
		}
		promoted = append(promoted, d.OutputID)
	}
	if err := tx.Commit(); err != nil {
		return res, fmt.Errorf("promote: %w", err)
	}
	res.Promoted = len(promoted)
	// The flags follow the curated commit: should this fail, file_metadata
	// is already right and a re-run sets them.
	if err := raw.MarkPromoted(ctx, promoted); err != nil {
		return res, fmt.Errorf("promote: %w", err)
	}
	return res, nil
}
