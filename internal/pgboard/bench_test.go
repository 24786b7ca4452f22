package pgboard_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/pgboard"
)

// BenchmarkList lists a board of 10,000 tasks, as 'cra task list' does,
// from the files (with the list index warm, as after the first listing)
// and from PostgreSQL (the same files imported).
//
//	go test ./internal/pgboard -run '^$' -bench List -benchtime 20x
func BenchmarkList(b *testing.B) {
	const n = 10000
	ctx := context.Background()
	files := board.NewFileStore(b.TempDir())
	folders := board.Folders()
	for i := range n {
		t := board.NewTask(fmt.Sprintf("task number %d", i))
		t.ID = fmt.Sprintf("t-%08x", i)
		t.Need = "tests pass"
		body, err := board.Encode(t)
		if err != nil {
			b.Fatal(err)
		}
		path := files.Path(t.ID, folders[i%len(folders)])
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(path, body, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	l := openLog(b)
	err := pgx.BeginFunc(ctx, l.Pool(), func(tx pgx.Tx) error {
		_, err := pgboard.Import(ctx, tx, files)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range []struct {
		name  string
		store board.Store
	}{{"file", files}, {"postgresql", pgboard.New(l)}} {
		b.Run(s.name, func(b *testing.B) {
			for range b.N {
				listed, err := s.store.List(ctx, "")
				if err != nil || len(listed) != n {
					b.Fatalf("listed %d, %v", len(listed), err)
				}
			}
		})
		b.Run(s.name+"/ids", func(b *testing.B) {
			for range b.N {
				ids, err := s.store.IDs(ctx, "")
				if err != nil || len(ids) != n {
					b.Fatalf("ids %d, %v", len(ids), err)
				}
			}
		})
	}
}
