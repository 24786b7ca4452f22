package server

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/fleet"
	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/workspace"
	"github.com/cra-dev/cra/internal/world"
)

// fixture is a real git repository with a board and a world log in its
// .clean_room, as 'cra task add' leaves it.
type fixture struct {
	repo, state string
	fleet       *fleet.Fleet
	b           *board.Board
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	repo := t.TempDir()
	gittest.Run(t, repo, "init", "-q")
	if err := os.WriteFile(filepath.Join(repo, ".gitignore"), []byte(".clean_room/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, repo, "add", "-A")
	gittest.Run(t, repo, "commit", "-qm", "initial")
	state := filepath.Join(repo, ".clean_room")
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(context.Background(), repo, workspace.Options{Exact: true})
	if err != nil {
		t.Fatal(err)
	}
	fl, err := fleet.Open(context.Background(), ws, fleet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fl.Close() })
	return &fixture{repo: repo, state: state, fleet: fl, b: fl.Board}
}

// openBoard opens a second board over the same state, as another process
// ('cra task add') would.
func openBoard(t testing.TB, state string) *board.Board {
	t.Helper()
	l, err := world.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	return board.New(board.NewFileStore(state), l)
}

func (f *fixture) add(t testing.TB, title string, edit func(*board.Task)) *board.Task {
	t.Helper()
	task := board.NewTask(title)
	task.Need = "go test ./... passes"
	if edit != nil {
		edit(task)
	}
	got, err := f.b.Add(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// run does what the processor does for one run of task id that exits
// with code: [agent:active] run N, the run's log, [agent:finish], the
// results, the file into completed or failed.
func (f *fixture) run(t testing.TB, id string, code int, out string) {
	t.Helper()
	ctx := context.Background()
	unlock, err := f.b.Store.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	task, from, err := f.b.Store.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	n := task.Runs + 1
	start, err := f.b.Log.Agent(ctx, world.StatusActive, id, fmt.Sprintf("run %d: builtin", n), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.b.Store.Move(ctx, id, from, board.InProgress); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(f.state, board.RunsDir, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("run-%d.log", n)), []byte(out+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	output, to := "exit 0: "+out, board.Completed
	if code != 0 {
		output, to = fmt.Sprintf("%s exit %d: %s", board.RunFailed, code, out), board.Failed
	}
	end, err := f.b.Log.Agent(ctx, world.StatusFinish, id, output, "")
	if err != nil {
		t.Fatal(err)
	}
	task.Runs = n
	task.SetOutput(out)
	task.Results.ExitCode = &code
	task.Results.StartedAt, task.Results.FinishedAt = start.Time, end.Time
	task.Results.DurationMS = end.Time.Sub(start.Time).Milliseconds()
	task.Results.Branch = "cra/" + id
	task.Results.DiffStat = " main.go | 12 ++++++++----\n 1 file changed, 8 insertions(+), 4 deletions(-)"
	if err := f.b.Store.Move(ctx, id, board.InProgress, to); err != nil {
		t.Fatal(err)
	}
	if err := f.b.Store.Put(ctx, task, to); err != nil {
		t.Fatal(err)
	}
}

// decide carries out a recycler's verdict on task id (board.Decide).
func (f *fixture) decide(t testing.TB, id string, status world.Status, class, output, need string) {
	t.Helper()
	ctx := context.Background()
	task, from, err := f.b.Store.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = f.b.Decide(ctx, board.Decision{ID: id, From: from, Runs: task.Runs, Status: status, Output: output, Need: need,
		Review: fmt.Sprintf("run %d: %s", task.Runs, class), Update: func(t *board.Task) {
			if t.Results == nil {
				t.Results = &board.Results{}
			}
			t.Results.Classification = class
			switch class {
			case "full_complete":
				t.ConsecutiveCompletionClaims++
				t.ConsecutiveFailures = 0
			case "":
				t.ConsecutiveFailures++
				t.ConsecutiveCompletionClaims = 0
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
}

// serve starts the API over f with a running hub on 127.0.0.1.
func (f *fixture) serve(t testing.TB, s *Server) (*httptest.Server, *Hub) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	hub := &Hub{Log: f.b.Log.(*world.Log)}
	if err := hub.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		hub.Run(ctx)
	}()
	s.Fleet, s.Hub = f.fleet, hub
	if s.Started.IsZero() {
		s.Started = time.Now()
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		cancel()
		<-done
		ts.Close()
	})
	return ts, hub
}
