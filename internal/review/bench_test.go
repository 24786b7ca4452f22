//go:build unix

package review

import (
	"context"
	"fmt"
	"testing"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/llm/llmtest"
	"github.com/cra-dev/cra/internal/world"
)

// BenchmarkTick is one recycler tick with many tasks waiting in
// completed/: it reviews the first and must not read the others. It
// reports the task files read per tick beside the time.
//
//	go test ./internal/review -run '^$' -bench Tick -benchtime 200x
func BenchmarkTick(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("tasks=%d", n), func(b *testing.B) {
			ctx := context.Background()
			f := newFixture(b, "")
			f.board.Log.(*world.Log).Sync = world.SyncNever // setup speed only
			cs := &countingStore{Store: f.board.Store}
			f.board.Store = cs
			f.rec.Board = f.board
			f.srv.SetDefault(llmtest.Text(completeReply))
			for i := range n {
				task, err := f.board.Add(ctx, board.NewTask(fmt.Sprintf("task %d", i)))
				if err != nil {
					b.Fatal(err)
				}
				for _, e := range [][2]string{{string(world.StatusActive), "run 1: bench"}, {string(world.StatusFinish), "exit 0: ok"}} {
					if _, err := f.board.Log.Agent(ctx, world.Status(e[0]), task.ID, e[1], ""); err != nil {
						b.Fatal(err)
					}
				}
				task.Runs = 1
				task.SetOutput("did the work\n")
				if err := f.board.Store.Put(ctx, task, board.Pending); err != nil {
					b.Fatal(err)
				}
				if err := f.board.Store.Move(ctx, task.ID, board.Pending, board.Completed); err != nil {
					b.Fatal(err)
				}
			}
			cs.gets = 0
			b.ResetTimer()
			for range b.N {
				rep, err := f.rec.Tick(ctx)
				if err != nil || rep.Review == nil {
					b.Fatalf("tick: %+v, %v", rep, err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(cs.gets)/float64(b.N), "reads/op")
		})
	}
}
