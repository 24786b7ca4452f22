package index

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cra-dev/cra/internal/store"
)

// BenchmarkIndexRepo indexes the checkout named by CRA_BENCH_REPO from
// scratch (full) and then again with no change. bench/index/run.sh measures
// the same through the binary, with peak RSS and ctags for comparison.
//
//	CRA_BENCH_REPO=~/src/django go test -run ^$ -bench IndexRepo -benchtime 1x ./internal/index
func BenchmarkIndexRepo(b *testing.B) {
	root := os.Getenv("CRA_BENCH_REPO")
	if root == "" {
		b.Skip("set CRA_BENCH_REPO to a checkout to benchmark")
	}
	ctx := context.Background()
	b.Run("full", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			dir := b.TempDir()
			res, err := NewBuilder(store.NewFactory(filepath.Join(dir, "state"))).Run(ctx, root)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(res.Parsed)/res.Duration.Seconds(), "files/s")
			b.Logf("%+v", res.Phases)
		}
	})
	// CRA_BENCH_FILE names a file of the checkout to change (a line is
	// appended and removed again), e.g. django/db/models/base.py.
	if rel := os.Getenv("CRA_BENCH_FILE"); rel != "" {
		b.Run("onefile", func(b *testing.B) {
			f := store.NewFactory(filepath.Join(b.TempDir(), "state"))
			if _, err := NewBuilder(f).Run(ctx, root); err != nil {
				b.Fatal(err)
			}
			path := filepath.Join(root, rel)
			orig, err := os.ReadFile(path)
			if err != nil {
				b.Fatal(err)
			}
			defer os.WriteFile(path, orig, 0o644)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				os.WriteFile(path, append(orig, fmt.Sprintf("\n# bench %d\n", i)...), 0o644)
				res, err := NewBuilder(f).Run(ctx, root)
				if err != nil {
					b.Fatal(err)
				}
				b.Logf("%+v", res.Phases)
			}
		})
	}
	b.Run("nochange", func(b *testing.B) {
		f := store.NewFactory(filepath.Join(b.TempDir(), "state"))
		if _, err := NewBuilder(f).Run(ctx, root); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := NewBuilder(f).Run(ctx, root); err != nil {
				b.Fatal(err)
			}
		}
	})
}
