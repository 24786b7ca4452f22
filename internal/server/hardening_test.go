package server

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/fleet"
	"github.com/cra-dev/cra/internal/flock"
	"github.com/cra-dev/cra/internal/world"
)

// TestWrongMethod: another method on an API path that exists is a 405
// naming the allowed ones, not "no such API endpoint".
func TestWrongMethod(t *testing.T) {
	f := newFixture(t)
	task := f.add(t, "x", nil)
	ts, _ := f.serve(t, &Server{})
	for _, c := range [][2]string{{"PUT", "/api/tasks"}, {"DELETE", "/api/tasks/" + task.ID}, {"POST", "/api/settings"}} {
		if code, body := call(t, ts, c[0], c[1], nil); code != 405 {
			t.Errorf("%s %s: got %d %q, want 405", c[0], c[1], code, errText(body))
		}
	}
	if code, _ := call(t, ts, "GET", "/api/nothing", nil); code != 404 {
		t.Errorf("GET /api/nothing: got %d, want 404", code)
	}
}

// TestDaemonShortToken: a token from the environment shorter than the
// ones cra makes or accepts from its file is refused before listening.
func TestDaemonShortToken(t *testing.T) {
	f := newFixture(t)
	d := &Daemon{Fleet: f.fleet, Addr: "127.0.0.1:0", Workers: fleet.Workers{PassEvery: time.Hour}, Token: " x "}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	err := d.Run(ctx, func(Info) {
		t.Error("the daemon listened with a one-character token")
		stop()
	})
	if err == nil || !strings.Contains(err.Error(), "16 or more") {
		t.Errorf("got %v, want the token refused, naming the length to use", err)
	}
}

// TestMoveSurvivesHangup: a person retries a failed task and closes the
// tab while another writer holds the world log: the move is made whole
// (its event, its retry, the file in pending), not half.
func TestMoveSurvivesHangup(t *testing.T) {
	f := newFixture(t)
	task := f.add(t, "x", nil)
	f.run(t, task.ID, 1, "boom") // failed in the log, its file in failed/
	h := (&Server{Fleet: f.fleet}).Handler()
	ctx := context.Background()
	// Another writer (an event of the processor) holds the log's lock
	// shared: the move's event gets in, its lifecycle entry waits.
	lk, err := flock.Lock(ctx, filepath.Join(f.state, "world.log.lock"), false)
	if err != nil {
		t.Fatal(err)
	}
	rctx, hangUp := context.WithCancel(ctx)
	req := httptest.NewRequest("POST", "http://127.0.0.1/api/tasks/"+task.ID+"/retry", strings.NewReader(`{"why":"flaky"}`)).WithContext(rctx)
	done := make(chan struct{})
	go func() { h.ServeHTTP(httptest.NewRecorder(), req); close(done) }()
	for moved := false; !moved; {
		hist, err := f.b.History(ctx, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		last := hist[len(hist)-1]
		moved = last.Kind == world.KindEvent && strings.HasPrefix(last.Output, "moved from")
		time.Sleep(5 * time.Millisecond)
	}
	hangUp() // the tab closes while the retry waits for the lock
	select {
	case <-done: // gave up: the half-done move shows below
	case <-time.After(500 * time.Millisecond):
	}
	lk.Close()
	<-done
	a, _, err := f.b.Log.Lookup(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, folder, _ := f.b.Store.Get(ctx, task.ID); a.Status != world.StatusRetry || folder != board.Pending {
		t.Errorf("after the hang-up: the log has %s and the file is in %s, want retry and pending", a.Status, folder)
	}
}
