package kb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// RankingWeights is a repository's own ranking weights as 'cra tune'
// stored them (internal/learn), with the figures that decided their use.
// Weights and GlobalWeights are JSON of retrieve.Weights.
type RankingWeights struct {
	Weights       string  `json:"weights"`
	GlobalWeights string  `json:"global_weights"`
	Used          bool    `json:"used"`
	Reason        string  `json:"reason"`
	Head          string  `json:"head"`
	TrainCommits  int     `json:"train_commits"`
	ValidCommits  int     `json:"valid_commits"`
	ValidAcc5     float64 `json:"valid_acc5"`
	ValidMRR      float64 `json:"valid_mrr"`
	GlobalAcc5    float64 `json:"global_acc5"`
	GlobalMRR     float64 `json:"global_mrr"`
	Seconds       float64 `json:"seconds"`
	LearnedAt     string  `json:"learned_at"`
}

// RankingWeights returns the repository's learned weights, or nil when it
// has none (never tuned, or an index older than the table).
func (k *KnowledgeBase) RankingWeights(ctx context.Context, repoID int64) (*RankingWeights, error) {
	var w RankingWeights
	err := k.db.QueryRowContext(ctx, `SELECT weights, global_weights, used, reason, head, train_commits, valid_commits,
		valid_acc5, valid_mrr, global_acc5, global_mrr, seconds, learned_at FROM ranking_weights WHERE repo_id = ?`, repoID).
		Scan(&w.Weights, &w.GlobalWeights, &w.Used, &w.Reason, &w.Head, &w.TrainCommits, &w.ValidCommits,
			&w.ValidAcc5, &w.ValidMRR, &w.GlobalAcc5, &w.GlobalMRR, &w.Seconds, &w.LearnedAt)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil && strings.Contains(err.Error(), "no such table"):
		return nil, nil // a read-only open of an index no run has migrated yet
	case err != nil:
		return nil, fmt.Errorf("read ranking weights: %w", err)
	}
	return &w, nil
}
