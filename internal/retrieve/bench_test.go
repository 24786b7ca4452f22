package retrieve

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
)

// BenchmarkRetrieveRepo measures deterministic retrieval (analysis, ranking,
// the precision stage's deterministic step, assembly of an 8k package) on a checkout indexed with 'cra index'; set
// CRA_BENCH_REPO to it. bench/retrieval measures quality and latency on
// the shared development sets.
//
// The tasks are four issue-style ones written for Django and up to
// benchTaskDocs drawn from the repository's own docstrings (every n-th
// docstring of a non-test file, in index order, so the mix is not
// picked by hand and follows whatever repository is benchmarked). Each
// sub-benchmark reports ms/op as usual, the median over its iterations
// as median-ms (the acceptance figure), and the process's CPU
// time per iteration as cpu-ms/op (all threads, the garbage collector's
// too: the figure to compare on a busy machine); run enough iterations
// (-benchtime 32x) for every task to count.
//
//	CRA_BENCH_REPO=~/src/django go test -run '^$' -bench RetrieveRepo -benchtime 40x ./internal/retrieve
func BenchmarkRetrieveRepo(b *testing.B) {
	root := os.Getenv("CRA_BENCH_REPO")
	if root == "" {
		b.Skip("set CRA_BENCH_REPO to an indexed checkout to benchmark")
	}
	ctx := context.Background()
	db, err := store.NewFactory(statedir.At(filepath.Join(root, ".clean_room"))).Open(ctx, store.Curated, "", true)
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
	docs, err := docstringTasks(db, repoID, benchTaskDocs)
	if err != nil {
		b.Fatal(err)
	}
	tasks = append(tasks, docs...)
	for _, stage := range []string{"rank", "rank+assemble", "rank+precision+assemble"} {
		b.Run(stage, func(b *testing.B) {
			took := make([]time.Duration, 0, b.N)
			cpu := cpuTime()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				q := Analyze(tasks[i%len(tasks)])
				rk := NewRanker(kb.New(db), repoID)
				rk.Root = root // as cra retrieve does: the chunk signal reads the checkout
				c, err := rk.Rank(ctx, q, 100)
				if err != nil {
					b.Fatal(err)
				}
				if stage != "rank" {
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
				took = append(took, time.Since(start))
			}
			cpu = cpuTime() - cpu
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2])/float64(time.Millisecond), "median-ms")
			b.ReportMetric(float64(cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
		})
	}
}

// benchTaskDocs is how many tasks BenchmarkRetrieveRepo draws from the
// repository's docstrings.
const benchTaskDocs = 12

// docstringTasks returns up to n tasks made of docstrings of the
// repository's non-test files: the first paragraph of every k-th
// docstring of at least six words, in index order.
func docstringTasks(db *sql.DB, repoID int64, n int) ([]string, error) {
	rows, err := db.Query(`SELECT d.content, f.path FROM docstrings d JOIN files f ON f.id = d.file_id
		WHERE f.repo_id = ? ORDER BY d.id`, repoID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var all []string
	for rows.Next() {
		var text, path string
		if err := rows.Scan(&text, &path); err != nil {
			return nil, err
		}
		if isTest(path) {
			continue
		}
		para, _, _ := strings.Cut(strings.TrimSpace(text), "\n\n")
		para = strings.Join(strings.Fields(para), " ")
		if len(strings.Fields(para)) >= 6 {
			all = append(all, para[:min(len(para), 300)])
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(all) <= n {
		return all, nil
	}
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, all[i*len(all)/n])
	}
	return out, nil
}
