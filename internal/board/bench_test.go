package board

import (
	"context"
	"fmt"
	"testing"
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
