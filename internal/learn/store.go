package learn

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cra-dev/cra/internal/store"
)

// Store records a repository's fit in the curated DB (read-write), with
// its verdict and figures, replacing the one before: retrieval uses its
// weights when fit.Use says so (retrieve.WeightsFor). head is the commit
// the history ended at. 'cra tune' is, with the indexer, enrichment's
// promotion and adapters, a writer of the curated DB; it writes this
// table only.
func Store(ctx context.Context, db *sql.DB, repoID int64, fit RepoFit, head string, took time.Duration) error {
	w, err := json.Marshal(fit.Weights)
	if err != nil {
		return fmt.Errorf("store ranking weights: %w", err)
	}
	g, err := json.Marshal(fit.Global)
	if err != nil {
		return fmt.Errorf("store ranking weights: %w", err)
	}
	_, err = db.ExecContext(ctx, `INSERT INTO ranking_weights (repo_id, weights, global_weights, used, reason, head,
		train_commits, valid_commits, valid_acc5, valid_mrr, global_acc5, global_mrr, seconds, learned_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(repo_id) DO UPDATE SET weights = excluded.weights, global_weights = excluded.global_weights,
			used = excluded.used, reason = excluded.reason, head = excluded.head, train_commits = excluded.train_commits,
			valid_commits = excluded.valid_commits, valid_acc5 = excluded.valid_acc5, valid_mrr = excluded.valid_mrr,
			global_acc5 = excluded.global_acc5, global_mrr = excluded.global_mrr, seconds = excluded.seconds,
			learned_at = excluded.learned_at`,
		repoID, string(w), string(g), fit.Use, fit.Reason, head, len(fit.Train), len(fit.Valid),
		fit.ValidRepo.Acc5, fit.ValidRepo.MRR, fit.ValidGlobal.Acc5, fit.ValidGlobal.MRR, took.Seconds(), store.Now())
	if err != nil {
		return fmt.Errorf("store ranking weights: %w", err)
	}
	return nil
}

// Forget removes a repository's learned weights: retrieval goes back to
// the global ones. It reports whether there were any.
func Forget(ctx context.Context, db *sql.DB, repoID int64) (bool, error) {
	res, err := db.ExecContext(ctx, `DELETE FROM ranking_weights WHERE repo_id = ?`, repoID)
	if err != nil {
		return false, fmt.Errorf("forget ranking weights: %w", err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}
