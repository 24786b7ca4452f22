package retrieve

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/store"
)

// BenchmarkRetrieveRepo measures deterministic retrieval (analysis, ranking,
// the precision stage's deterministic step, assembly of an 8k package) on a checkout indexed with 'cra index'; set
// CRA_BENCH_REPO to it. bench/retrieval measures quality and latency on
// the shared development sets.
//
//	CRA_BENCH_REPO=~/src/django go test -run '^$' -bench RetrieveRepo ./internal/retrieve
func BenchmarkRetrieveRepo(b *testing.B) {
	root := os.Getenv("CRA_BENCH_REPO")
	if root == "" {
		b.Skip("set CRA_BENCH_REPO to an indexed checkout to benchmark")
	}
	ctx := context.Background()
	db, err := store.NewFactory(filepath.Join(root, ".clean_room")).Open(ctx, store.Curated, "", true)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var repoID int64
	if err := db.QueryRow("SELECT id FROM repos ORDER BY id LIMIT 1").Scan(&repoID); err != nil {
		b.Fatal(err)
	}
	tasks := []string{
		"QuerySet.bulk_create fails with ignore_conflicts on PostgreSQL when the model has a db_column",
		"Admin changelist filters ignore the ordering of the model Meta",
		"makemigrations crashes with TypeError when a field default is a callable",
		"`Paginator.page` raises InvalidPage for an empty last page",
	}
	for _, stage := range []string{"rank", "rank+assemble", "rank+precision+assemble"} {
		b.Run(stage, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				q := Analyze(tasks[i%len(tasks)])
				rk := NewRanker(kb.New(db), repoID)
				rk.Root = root // as cra retrieve does: the chunk signal reads the checkout
				c, err := rk.Rank(ctx, q, 100)
				if err != nil {
					b.Fatal(err)
				}
				if stage == "rank" {
					continue
				}
				sc := &StageContext{Task: q, Ranker: rk, Candidates: c, Excluded: map[string]string{}}
				if stage == "rank+precision+assemble" {
					if err := (&PrecisionStage{}).Run(ctx, sc); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := sc.Assembler(root).Assemble(ctx, q, c, Budget{ContextWindow: 10240, ReservedTokens: 2048}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
