//go:build linux

package evidence

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/validation"
)

// benchRepo is a repository with a branch cra/bench one commit past its
// base. CRA_BENCH_REPO names a repository to clone it from (django's
// size is what issue 28 asks about); without it, a generated one of
// 2,000 small files.
func benchRepo(b *testing.B) string {
	b.Helper()
	repo := filepath.Join(b.TempDir(), "repo")
	if src := os.Getenv("CRA_BENCH_REPO"); src != "" {
		gittest.Run(b, "", "clone", "-q", "--shared", src, repo)
	} else {
		for i := range 2000 {
			p := filepath.Join(repo, fmt.Sprintf("pkg%02d", i%40), fmt.Sprintf("f%04d.txt", i))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(fmt.Sprintf("file %d\n", i)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		gittest.Run(b, repo, "init", "-q", "-b", "main")
		gittest.Run(b, repo, "add", "-A")
		gittest.Run(b, repo, "commit", "-qm", "base")
	}
	gittest.Run(b, repo, "checkout", "-q", "-b", "cra/bench")
	if err := os.WriteFile(filepath.Join(repo, "cra-bench.txt"), []byte("changed\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	gittest.Run(b, repo, "add", "-A")
	gittest.Run(b, repo, "commit", "-qm", "the task's change")
	gittest.Run(b, repo, "checkout", "-q", "-")
	return repo
}

// BenchmarkRunCopy is what a run's working copy costs to make: a clone
// sharing the repository's objects, whose git writes stay inside it (a
// run now), and a git worktree of the repository (a run before issue 28).
//
//	CRA_BENCH_REPO=/path/to/django go test ./internal/evidence -run '^$' -bench RunCopy -benchtime 10x
func BenchmarkRunCopy(b *testing.B) {
	ctx := context.Background()
	repo := benchRepo(b)
	b.Run("clone", func(b *testing.B) {
		for i := range b.N {
			path := filepath.Join(b.TempDir(), "wt")
			if _, err := gitx.OpenClone(ctx, repo, path, fmt.Sprintf("cra/c-%d-%d", b.N, i), nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("worktree", func(b *testing.B) {
		for i := range b.N {
			path := filepath.Join(b.TempDir(), "wt")
			if _, err := gitx.AddWorktree(ctx, repo, path, fmt.Sprintf("cra/w-%d-%d", b.N, i)); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			gittest.Run(b, repo, "worktree", "remove", "--force", path)
			b.StartTimer()
		}
	})
}

// BenchmarkReviewCheckout is what a review's validation costs beyond the
// command itself ('true' here): in a fresh checkout of the branch's
// commit, sandboxed, its protected files at the base (a review now), and
// in the agent's own working copy, unconfined (a review before issue 28).
//
//	CRA_BENCH_REPO=/path/to/django go test ./internal/evidence -run '^$' -bench ReviewCheckout -benchtime 10x
func BenchmarkReviewCheckout(b *testing.B) {
	ctx := context.Background()
	repo := benchRepo(b)
	v := &validation.Validator{Test: "true"}
	b.Run("fresh-sandboxed", func(b *testing.B) {
		sb := confined(b)
		for range b.N {
			e, err := Collect(ctx, Input{Repo: repo, Branch: "cra/bench", Validator: v, Sandbox: sb, ExitCode: exit(0)})
			if err != nil {
				b.Fatal(err)
			}
			if e.Validation == nil || !e.Validation.Success || e.Checkout == nil {
				b.Fatalf("validation did not run in a checkout: %s", e.Text())
			}
		}
	})
	b.Run("in-place", func(b *testing.B) {
		for range b.N {
			r, err := v.Run(ctx, repo)
			if err != nil || !r.Success {
				b.Fatalf("%+v %v", r, err)
			}
		}
	})
}
