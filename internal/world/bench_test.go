package world

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The end-to-end benchmarks on a 1,000,000-line log, against grep, are in
// bench/worldlog/run.sh; these measure the package's parts.

func BenchmarkAppendEvent(b *testing.B) {
	l, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	out := strings.Repeat("x", 100)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Event(ctx, SourceBash, "bench", out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendEventParallel16 appends from 16 goroutines, each with its
// own Log: every append takes its own lock descriptor, so they contend as
// 16 processes would.
func BenchmarkAppendEventParallel16(b *testing.B) {
	dir := b.TempDir()
	if _, err := Open(dir); err != nil {
		b.Fatal(err)
	}
	out := strings.Repeat("x", 100)
	b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0))) // 16 goroutines in all
	b.RunParallel(func(pb *testing.PB) {
		l, _ := Open(dir)
		for pb.Next() {
			if _, err := l.Event(context.Background(), SourceBash, "bench", out); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkAppendAgent measures a lifecycle append on a log of 100,000
// lines with a side index: the check reads the index and the log's tail.
func BenchmarkAppendAgent(b *testing.B) {
	dir := b.TempDir()
	writeBenchLog(b, dir, 100_000)
	l, _ := Open(dir)
	l.Sync = SyncNever
	ctx := context.Background()
	if _, err := l.Current(ctx); err != nil { // builds the index
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		i++
		fresh, _ := Open(dir) // as a new process would: no cache
		fresh.Sync = SyncNever
		if _, err := fresh.Agent(ctx, StatusStart, fmt.Sprintf("B-%d", i), "bench", ""); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseLine(b *testing.B) {
	line := []byte("[2025-01-02T03:04:05.678Z][agent:start][T-12] add a --json flag to cra log | need: tests pass")
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if _, err := ParseLine(line); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkQueryText(b *testing.B) {
	dir := b.TempDir()
	size := writeBenchLog(b, dir, 100_000)
	l, _ := Open(dir)
	b.SetBytes(size)
	for b.Loop() {
		n := 0
		if err := l.Select(context.Background(), Filter{Text: "captcha"}, func(*Record) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCurrent(b *testing.B) {
	for _, index := range []bool{true, false} {
		b.Run(fmt.Sprintf("index=%v", index), func(b *testing.B) {
			dir := b.TempDir()
			writeBenchLog(b, dir, 100_000)
			l, _ := Open(dir)
			l.UseIndex = index
			for b.Loop() {
				fresh, _ := Open(dir) // no in-memory cache, as a new process
				fresh.UseIndex = index
				if _, err := fresh.Current(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// writeBenchLog writes n lines: one agent lifecycle step in five, the rest
// events, "captcha" in one event of a thousand. It returns the log's size.
func writeBenchLog(b *testing.B, dir string, n int) int64 {
	b.Helper()
	f, err := os.Create(Path(dir))
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	steps := []Status{StatusStart, StatusActive, StatusFinish, StatusVerified}
	agent, step := 0, 0
	t := t0
	for i := range n {
		t = t.Add(10 * time.Millisecond)
		e := Entry{Time: t, Kind: KindEvent, Source: SourceBash, ID: fmt.Sprintf("src/file%d.go", i%500), Output: fmt.Sprintf("step %d ok ok ok", i)}
		if i%5 == 0 && steps[step] == StatusVerified {
			// the review a verified needs
			line, err := Format(Entry{Time: t, Kind: KindEvent, Source: SourceReview, ID: fmt.Sprintf("T-%d", agent), Output: "reviewed"})
			if err != nil {
				b.Fatal(err)
			}
			w.WriteString(line + "\n")
		}
		if i%5 == 0 {
			e = Entry{Time: t, Kind: KindAgent, Status: steps[step], ID: fmt.Sprintf("T-%d", agent), Output: "step", Need: "tests pass"}
			if step++; step == len(steps) {
				agent, step = agent+1, 0
			}
		} else if i%1000 == 1 {
			e.Output += " captcha"
		}
		line, err := Format(e)
		if err != nil {
			b.Fatal(err)
		}
		w.WriteString(line + "\n")
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	fi, _ := f.Stat()
	f.Close()
	return fi.Size()
}
