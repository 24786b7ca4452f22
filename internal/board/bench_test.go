package board

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/world"
)

// BenchmarkList lists a board of 1,000 and 10,000 task files, as 'cra task
// list' and GET /api/tasks do.
func BenchmarkList(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			ctx := context.Background()
			s := NewFileStore(b.TempDir())
			folders := Folders()
			for i := range n {
				t := NewTask(fmt.Sprintf("task number %d", i))
				t.ID = fmt.Sprintf("t-%08x", i)
				t.Need = "tests pass"
				if err := s.Put(ctx, t, folders[i%len(folders)]); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for range b.N {
				listed, err := s.List(ctx, "")
				if err != nil || len(listed) != n {
					b.Fatalf("listed %d, %v", len(listed), err)
				}
			}
		})
	}
}

// BenchmarkRepairFolders is what each Level 1 pass adds to find the task
// files that are not where the log puts them, on a board of 10,000 tasks
// that agree with the log.
func BenchmarkRepairFolders(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	l, err := world.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	s := NewFileStore(dir)
	board := New(s, l)
	var lines []byte
	for i := range 10000 {
		t := NewTask(fmt.Sprintf("task number %d", i))
		t.ID = fmt.Sprintf("t-%08x", i)
		line, err := world.Format(world.Entry{Time: time.Now(), Kind: world.KindAgent, Status: world.StatusStart, ID: t.ID, Output: t.Title})
		if err != nil {
			b.Fatal(err)
		}
		lines = append(append(lines, line...), '\n')
		if err := s.Put(ctx, t, Pending); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(l.Path(), lines, 0o644); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		moved, err := board.RepairFolders(ctx, nil)
		if err != nil || len(moved) != 0 {
			b.Fatalf("moved %v, %v", moved, err)
		}
	}
}

// BenchmarkAdd adds a task to a board of 1,000 and 10,000 tasks as 'cra
// task add' does, through a world log opened afresh (each command opens
// its own): its cost should not grow with the board.
func BenchmarkAdd(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			ctx := context.Background()
			dir := b.TempDir()
			l, err := world.Open(dir)
			if err != nil {
				b.Fatal(err)
			}
			s := NewFileStore(dir)
			var lines []byte
			for i := range n {
				t := NewTask(fmt.Sprintf("task number %d", i))
				t.ID = fmt.Sprintf("t-%08x", i)
				line, err := world.Format(world.Entry{Time: time.Now(), Kind: world.KindAgent, Status: world.StatusStart, ID: t.ID, Output: t.Title})
				if err != nil {
					b.Fatal(err)
				}
				lines = append(append(lines, line...), '\n')
				if err := s.Put(ctx, t, Pending); err != nil {
					b.Fatal(err)
				}
			}
			if err := os.WriteFile(l.Path(), lines, 0o644); err != nil {
				b.Fatal(err)
			}
			if _, err := New(s, l).Add(ctx, NewTask("the side index is written")); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				l, err := world.Open(dir)
				if err != nil {
					b.Fatal(err)
				}
				l.Sync = world.SyncNever
				if _, err := New(NewFileStore(dir), l).Add(ctx, NewTask("one more")); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
