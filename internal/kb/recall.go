package kb

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// RecallFiles ranks files by plain BM25 over their paths and text (the
// symbol-name column weighs nothing), as a baseline text search would,
// for candidate recall: terms may repeat, and a term said twice weighs
// twice. It returns up to limit hits, best first, and like SearchFiles
// counts over the whole database.
func (k *KnowledgeBase) RecallFiles(ctx context.Context, terms []string, limit int) ([]SearchHit, error) {
	if len(terms) == 0 {
		return nil, nil
	}
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
	}
	hs, err := scanAll(ctx, k.db, func(r *sql.Rows, h *SearchHit) error {
		return r.Scan(&h.FileID, &h.Score)
	}, `SELECT rowid, -bm25(file_search, 1.0, 0.0, 1.0) AS s FROM file_search
		WHERE file_search MATCH ? ORDER BY s DESC LIMIT ?`, strings.Join(quoted, " OR "), limit)
	if err != nil {
		return nil, fmt.Errorf("recall files: %w", err)
	}
	return hs, nil
}
