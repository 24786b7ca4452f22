package review

import (
	"fmt"

	"github.com/cra-dev/cra/internal/jsonl"
)

// appendHistory appends r to its task's reviews file and syncs it.
func appendHistory(stateDir string, r *Review) error {
	if err := jsonl.Append(HistoryPath(stateDir, r.TaskID), r); err != nil {
		return fmt.Errorf("record the review: %w", err)
	}
	return nil
}
