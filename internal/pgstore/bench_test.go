package pgstore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/world"
)

// bigLog writes n lines of cra's format (agents' lifecycles among
// events) to the file log of a new state directory, at once.
func bigLog(t testing.TB, n int) *world.Log {
	t.Helper()
	f := openFile(t, nil)
	var buf bytes.Buffer
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	steps := []world.Status{world.StatusStart, world.StatusActive, world.StatusFinish}
	for i := range n {
		e := world.Entry{Time: at.Add(time.Duration(i) * time.Millisecond), Kind: world.KindEvent, Source: world.SourceBash,
			ID: fmt.Sprintf("ev-%d", i%97), Output: fmt.Sprintf("line %d: odd \x00 \xff \n | need: x", i)}
		if i%10 == 0 {
			e = world.Entry{Time: e.Time, Kind: world.KindAgent, Status: steps[(i/10)%3], ID: fmt.Sprintf("T-%d", i/30), Output: "step"}
		}
		line, err := world.Format(e)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString(line)
		buf.WriteByte('\n')
	}
	if err := os.WriteFile(f.Path(), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestImportExportBig: a log of 20,000 lines goes into PostgreSQL and
// comes back byte for byte, with the same agents' states
// (BenchmarkImportExport does 100,000).
func TestImportExportBig(t *testing.T) {
	importExport(t, 20_000)
}

// BenchmarkImportExport: import then export of a 100,000-line log.
func BenchmarkImportExport(b *testing.B) {
	for b.Loop() {
		importExport(b, 100_000)
	}
}

func importExport(t testing.TB, lines int) {
	ctx := context.Background()
	t0 := time.Now()
	f := bigLog(t, lines)
	pg := openPG(t, nil)
	t1 := time.Now()
	n, err := pg.Import(ctx, f)
	t.Logf("setup %v, import %v", t1.Sub(t0), time.Since(t1))
	t1 = time.Now()
	if err != nil || n != int64(lines) {
		t.Fatalf("import = %d, %v", n, err)
	}
	var out bytes.Buffer
	if err := pg.Export(ctx, &out); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(f.Path())
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("export differs from the imported file (%d bytes, want %d)", out.Len(), len(want))
	}
	t.Logf("export %v", time.Since(t1))
	t1 = time.Now()
	a, err := f.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("file current %v", time.Since(t1))
	t1 = time.Now()
	b, err := pg.Current(ctx)
	t.Logf("pg current %v", time.Since(t1))
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != (lines+29)/30 || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("agents after import: file %d, postgresql %d; equal %v", len(a), len(b), fmt.Sprint(a) == fmt.Sprint(b))
	}
}

func backends(b *testing.B) map[string]func(b *testing.B) world.Store {
	return map[string]func(b *testing.B) world.Store{
		"file":       func(b *testing.B) world.Store { return openFile(b, nil) },
		"postgresql": func(b *testing.B) world.Store { return openPG(b, nil) },
	}
}

// BenchmarkAppendEvent: one event per op, one writer.
func BenchmarkAppendEvent(b *testing.B) {
	ctx := context.Background()
	for name, open := range backends(b) {
		b.Run(name, func(b *testing.B) {
			s := open(b)
			i := 0
			for b.Loop() {
				i++
				if _, err := s.Event(ctx, world.SourceBash, "bench", fmt.Sprint("event ", i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAppendAgent: one lifecycle step per op (start, then active, of
// a new agent), checked against the fold; the file fsyncs agent entries.
func BenchmarkAppendAgent(b *testing.B) {
	ctx := context.Background()
	for name, open := range backends(b) {
		b.Run(name, func(b *testing.B) {
			s := open(b)
			i := 0
			for b.Loop() {
				i++
				st := world.StatusStart
				if i%2 == 0 {
					st = world.StatusActive
				}
				if _, err := s.Agent(ctx, st, fmt.Sprint("T-", (i+1)/2), "step", ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRead: over a log of 100,000 lines, every line (Select all), a
// selective query (one id), the last 10 lines, and every agent's state.
func BenchmarkRead(b *testing.B) {
	ctx := context.Background()
	f := bigLog(b, 100_000)
	pg := openPG(b, nil)
	if _, err := pg.Import(ctx, f); err != nil {
		b.Fatal(err)
	}
	for _, s := range []struct {
		name string
		s    world.Store
	}{{"file", f}, {"postgresql", pg}} {
		count := func(r *world.Record) error { return nil }
		b.Run("select-all/"+s.name, func(b *testing.B) {
			for b.Loop() {
				if err := s.s.Select(ctx, world.Filter{}, count); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("select-id/"+s.name, func(b *testing.B) {
			for b.Loop() {
				if err := s.s.Select(ctx, world.Filter{IDs: []string{"T-7"}}, count); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("tail-10/"+s.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.s.Tail(ctx, 10, world.Filter{}, count); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("current/"+s.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.s.Current(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
