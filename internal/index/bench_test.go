package index

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/statedir"
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
		cpu := cpuTime()
		for i := 0; i < b.N; i++ {
			dir := b.TempDir()
			res, err := NewBuilder(store.NewFactory(statedir.At(filepath.Join(dir, "state")))).Run(ctx, root)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(res.Parsed)/res.Duration.Seconds(), "files/s")
			b.Logf("%+v", res.Phases)
		}
		// CPU time, all threads: the figure to compare on a busy machine.
		b.ReportMetric((cpuTime()-cpu).Seconds()/float64(b.N), "cpu-s/op")
	})
	// CRA_BENCH_FILE names a file of the checkout to change (a line is
	// appended and removed again), e.g. django/db/models/base.py.
	if rel := os.Getenv("CRA_BENCH_FILE"); rel != "" {
		b.Run("onefile", func(b *testing.B) {
			f := store.NewFactory(statedir.At(filepath.Join(b.TempDir(), "state")))
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
		f := store.NewFactory(statedir.At(filepath.Join(b.TempDir(), "state")))
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

// BenchmarkReindex indexes a repository, changes a share of its source
// files and indexes again, against a fresh index of the changed tree:
// incremental runs must never be slower than fresh. The repository is
// generated with CRA_BENCH_SYNTH files (two Python files in three, the
// rest Go; 12001 is the size of the report), or is a clone of the
// git checkout CRA_BENCH_REINDEX_REPO, whose Python and Go files get a
// function appended. changed100 changes every file: the run rebuilds.
//
//	CRA_BENCH_SYNTH=12001 go test -run ^$ -bench Reindex -benchtime 1x -count 3 ./internal/index
func BenchmarkReindex(b *testing.B) {
	n, _ := strconv.Atoi(os.Getenv("CRA_BENCH_SYNTH"))
	src := os.Getenv("CRA_BENCH_REINDEX_REPO")
	var tree benchTree
	switch {
	case src != "":
		tree = newClonedTree(b, src)
	case n >= 10:
		tree = newSynthRepo(b, b.TempDir(), n)
	default:
		b.Skip("set CRA_BENCH_SYNTH to a file count (e.g. 12001), or CRA_BENCH_REINDEX_REPO to a checkout, to benchmark")
	}
	ctx := context.Background()
	index := func(f *store.Factory) *Result {
		res, err := NewBuilder(f).Run(ctx, tree.dir())
		if err != nil {
			b.Fatal(err)
		}
		return res
	}
	// The machine may be shared: the CPU time the run took (all threads)
	// is reported beside the wall time.
	var cpu time.Duration
	// CRA_BENCH_PROFILE names a directory for a CPU profile of each timed
	// run (go tool pprof DIR/changed50.pprof).
	profiles := os.Getenv("CRA_BENCH_PROFILE")
	timed := func(b *testing.B, f *store.Factory) *Result {
		if profiles != "" {
			out, err := os.Create(filepath.Join(profiles, path.Base(b.Name())+".pprof"))
			if err != nil {
				b.Fatal(err)
			}
			defer out.Close()
			if err := pprof.StartCPUProfile(out); err != nil {
				b.Fatal(err)
			}
			defer pprof.StopCPUProfile()
		}
		t0 := cpuTime()
		res := index(f)
		cpu += cpuTime() - t0
		return res
	}
	report := func(b *testing.B) { b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op"); cpu = 0 }
	b.Run("fresh", func(b *testing.B) {
		tree.set(b, 2, 1)
		for i := 0; i < b.N; i++ {
			res := timed(b, store.NewFactory(statedir.At(filepath.Join(b.TempDir(), "state"))))
			b.Logf("%d files, %d symbols, %d dependencies, %d references: %+v", res.Indexed, res.Symbols, res.Dependencies, res.References, res.Phases)
		}
		report(b)
	})
	for _, c := range []struct {
		name  string
		every int
	}{{"changed10", 10}, {"changed50", 2}, {"changed100", 1}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				tree.set(b, c.every, 0)
				f := store.NewFactory(statedir.At(filepath.Join(b.TempDir(), "state")))
				index(f)
				tree.set(b, c.every, 1)
				b.StartTimer()
				res := timed(b, f)
				b.Logf("%d changed (rebuilt %v), %d symbols, %d dependencies, %d references: %+v", res.Changed, res.Rebuilt, res.Symbols, res.Dependencies, res.References, res.Phases)
			}
			report(b)
		})
	}
}

// benchTree is a work tree BenchmarkReindex changes.
type benchTree interface {
	dir() string
	// set writes version v of every every-th source file, and the
	// original of the others.
	set(tb testing.TB, every, v int)
}

func (s *synthRepo) dir() string { return s.root }

func (s *synthRepo) set(tb testing.TB, every, v int) {
	for i := range s.files - 1 {
		if i%every == 0 {
			s.change(tb, i, v)
		} else {
			s.change(tb, i, 0)
		}
	}
}

// clonedTree is a clone of a checkout whose Python and Go files are
// changed by appending a function.
type clonedTree struct {
	root    string
	sources []string
}

func newClonedTree(tb testing.TB, src string) *clonedTree {
	src, err := filepath.Abs(src)
	if err != nil {
		tb.Fatal(err)
	}
	root := filepath.Join(tb.TempDir(), "repo")
	gittest.Run(tb, src, "clone", "-q", src, root)
	var sources []string
	for _, p := range strings.Split(gittest.Run(tb, root, "ls-files", "*.py", "*.go"), "\n") {
		if p != "" {
			sources = append(sources, p)
		}
	}
	return &clonedTree{root: root, sources: sources}
}

func (c *clonedTree) dir() string { return c.root }

func (c *clonedTree) set(tb testing.TB, every, v int) {
	gittest.Run(tb, c.root, "checkout", "-q", "--", ".")
	if v == 0 {
		return
	}
	for i, p := range c.sources {
		if i%every != 0 {
			continue
		}
		add := fmt.Sprintf("\n\ndef cra_bench_%d():\n    return helper(%d)\n", v, v)
		if strings.HasSuffix(p, ".go") {
			add = fmt.Sprintf("\n\n// CraBench%d is new.\nfunc CraBench%d() int { return %d }\n", v, v, v)
		}
		f, err := os.OpenFile(filepath.Join(c.root, filepath.FromSlash(p)), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			tb.Fatal(err)
		}
		_, err = f.WriteString(add)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
}
