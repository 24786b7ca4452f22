package review

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/pgboard"
	"github.com/cra-dev/cra/internal/pgstore"
	"github.com/cra-dev/cra/internal/pgtest"
	"github.com/cra-dev/cra/internal/statedir"
)

var _ NoticeQueue = (*pgstore.Log)(nil)

// TestNotifyOverPostgres: on a fleet the notification queue is the
// database's. Host a leads and its notifier fails: the notice waits in
// the queue. The lead moves to host b, whose notifier works: b tells it,
// once, and a afterwards tells nothing. While a holds the queue's lock,
// b tells nothing; once a lets go, b tells the next ending, once. No
// host keeps a notify-pending.jsonl.
func TestNotifyOverPostgres(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	out, up := filepath.Join(dir, "told"), filepath.Join(dir, "up")
	f := newFixture(t, fmt.Sprintf("[notify]\ncommand = 'test -f %s || exit 1; echo \"$CRA_TASK_EVENT $CRA_TASK_ID\" >> %s'\n", up, out))
	url := pgtest.DB(t)
	if _, _, err := pgstore.Init(ctx, url); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	host := func(stateDir string) (*Recycler, *pgstore.Log) {
		l, err := pgstore.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
		return &Recycler{Board: board.New(pgboard.New(l), l), Root: f.repo, StateDir: stateDir, Config: f.rec.Config,
			Notices: l, Now: func() time.Time { return now }}, l
	}
	a, la := host(f.state)
	b, _ := host(filepath.Join(t.TempDir(), statedir.Name))
	cfg, err := config.Load(statedir.Of(f.repo).Config())
	if err != nil {
		t.Fatal(err)
	}
	notify := func(r *Recycler) *Report {
		t.Helper()
		rep := &Report{}
		if err := r.Notify(ctx, cfg, rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	told := func() string {
		data, _ := os.ReadFile(out)
		return string(data)
	}
	block := func(title string) *board.Task {
		t.Helper()
		task := board.NewTask(title)
		task.Need = "it is done"
		task, err := a.Board.Add(ctx, task)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Board.Block(ctx, task.ID, "start limit reached", "look at it"); err != nil {
			t.Fatal(err)
		}
		return task
	}

	notify(a) // sets the marker at the log's end
	first := block("blocked on a")
	if rep := notify(a); len(rep.Notified) != 1 || rep.Notified[0].Err == "" {
		t.Fatalf("a's notifier down: %+v; want one failed notification", rep.Notified)
	}
	if err := os.WriteFile(up, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	now = now.Add(31 * time.Second)
	if rep := notify(b); len(rep.Notified) != 1 || rep.Notified[0].Err != "" || rep.Notified[0].TaskID != first.ID {
		t.Fatalf("b, leading now: %+v; want a's failed notification told", rep.Notified)
	}
	now = now.Add(time.Hour)
	for _, r := range []*Recycler{a, b} {
		if rep := notify(r); len(rep.Notified) != 0 {
			t.Errorf("after it was told: %+v; want nothing", rep.Notified)
		}
	}
	if got, want := told(), "blocked "+first.ID+"\n"; got != want {
		t.Errorf("told %q, want %q", got, want)
	}

	unlock, ok, err := la.LockNotices(ctx)
	if err != nil || !ok {
		t.Fatalf("a takes the lock: %v, %v", ok, err)
	}
	second := block("blocked while a reads")
	if rep := notify(b); len(rep.Notified) != 0 {
		t.Errorf("b while a holds the lock: %+v; want nothing told", rep.Notified)
	}
	unlock()
	for range 2 {
		notify(b)
	}
	if got, want := told(), "blocked "+first.ID+"\nblocked "+second.ID+"\n"; got != want {
		t.Errorf("told %q, want %q", got, want)
	}
	for _, d := range []string{a.StateDir, b.StateDir} {
		if _, err := os.Stat(statedir.At(d).NotifyPending()); !os.IsNotExist(err) {
			t.Errorf("%s: a host kept a pending file (%v); the queue is the database's", d, err)
		}
	}
}
