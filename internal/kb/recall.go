package kb

import (
	"context"
	"fmt"
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
	hs, err := k.matchFiles(ctx, terms, "1.0, 0.0, 1.0", limit)
	if err != nil {
		return nil, fmt.Errorf("recall files: %w", err)
	}
	return hs, nil
}
