// Command seed fills a repository's board with N tasks that a person
// closed, through the board's own Add and Close (the world log and the
// folders agree), for bench/daemon/run.sh to measure what an idle daemon
// costs with many finished tasks.
//
//	go run ./bench/daemon/seed -state REPO/.clean_room -n 10000
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/world"
)

func main() {
	state := flag.String("state", ".clean_room", "the repository's state directory")
	n := flag.Int("n", 10000, "tasks to add and close")
	flag.Parse()
	if err := seed(context.Background(), *state, *n); err != nil {
		fmt.Fprintln(os.Stderr, "seed:", err)
		os.Exit(1)
	}
}

func seed(ctx context.Context, state string, n int) error {
	l, err := world.Open(state)
	if err != nil {
		return err
	}
	l.Sync = world.SyncNever
	b := board.New(board.NewFileStore(state), l)
	for i := range n {
		t, err := b.Add(ctx, board.NewTask(fmt.Sprintf("finished task %d", i)))
		if err != nil {
			return err
		}
		if _, err := b.Close(ctx, t.ID, "done long ago"); err != nil {
			return err
		}
	}
	return nil
}
