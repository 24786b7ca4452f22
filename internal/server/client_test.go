package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/fleet"
	"github.com/cra-dev/cra/internal/fleetapi"
	"github.com/cra-dev/cra/internal/world"
)

// TestClientMatchesInProcess: every operation the client does through
// the API gives what the fleet gives in process, errors included.
func TestClientMatchesInProcess(t *testing.T) {
	f := newFixture(t)
	var out bytes.Buffer
	ts, _ := f.serve(t, &Server{Out: &out})
	c := &Client{Base: ts.URL, Command: "cra test"}
	ctx := context.Background()

	task := board.NewTask("fix the sum")
	task.Need = "go test passes"
	added, err := c.Add(ctx, task)
	if err != nil {
		t.Fatal(err)
	}
	prio := board.High
	title := "fix the sum, really"
	_, changed, err := c.Edit(ctx, added.ID, fleet.Patch{Priority: &prio, Title: &title})
	if err != nil || strings.Join(changed, ",") != "title,priority" {
		t.Errorf("edit: got %v %v, want title and priority changed", changed, err)
	}
	from, err := c.Move(ctx, added.ID, board.FailedBlocked, "parked")
	if err != nil || from != board.Pending {
		t.Errorf("move: got %v %v, want from pending", from, err)
	}
	resumed, err := c.Answer(ctx, added.ID, "use the v2 API")
	if err != nil || !resumed {
		t.Errorf("answer: got %v %v, want resumed", resumed, err)
	}
	f.run(t, added.ID, 1, "cannot reach the database")
	f.decide(t, added.ID, world.StatusFailed, "", "failed 5 times", "give the agent the database URL")

	for _, folder := range []board.Folder{"", board.FailedBlocked, board.Pending} {
		remote, err := c.List(ctx, folder)
		if err != nil {
			t.Fatal(err)
		}
		local, err := f.fleet.List(ctx, folder)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(jsonOf(t, local), jsonOf(t, remote)); diff != "" {
			t.Errorf("list %q through the daemon differs (-in process +daemon):\n%s", folder, diff)
		}
	}
	remoteNeeds, err := c.NeedsYou(ctx)
	if err != nil {
		t.Fatal(err)
	}
	localNeeds, err := f.fleet.NeedsYou(ctx)
	if err != nil || len(localNeeds) != 1 || localNeeds[0].Need != "give the agent the database URL" {
		t.Fatalf("needs you in process: got %+v %v", localNeeds, err)
	}
	if diff := cmp.Diff(jsonOf(t, localNeeds), jsonOf(t, remoteNeeds)); diff != "" {
		t.Errorf("needs-you through the daemon differs:\n%s", diff)
	}
	// A damaged review history line is counted alike.
	hist := filepath.Join(f.state, board.RunsDir, added.ID, "reviews.jsonl")
	if err := os.WriteFile(hist, []byte("{not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	remote, err := c.Show(ctx, added.ID)
	if err != nil {
		t.Fatal(err)
	}
	local, err := f.fleet.Show(ctx, added.ID)
	if err != nil {
		t.Fatal(err)
	}
	if local.BadReviews != 1 || local.ReviewFile == "" || len(local.Runs) != 1 || len(local.Entries) < 5 {
		t.Errorf("show in process: got %d bad lines in %q, %d runs, %d entries", local.BadReviews, local.ReviewFile, len(local.Runs), len(local.Entries))
	}
	if diff := cmp.Diff(jsonOf(t, local), jsonOf(t, remote)); diff != "" {
		t.Errorf("show through the daemon differs (-in process +daemon):\n%s", diff)
	}

	// A person closes it through the daemon: it leaves "needs you"; a
	// stop of a task that is not running is refused in the same words as
	// in process; reopen puts it back in pending.
	if _, err := c.CloseTask(ctx, added.ID, "not needed"); err != nil {
		t.Fatal(err)
	}
	if needs, err := c.NeedsYou(ctx); err != nil || len(needs) != 0 {
		t.Errorf("needs you after the close: got %+v %v, want none", needs, err)
	}
	_, err = c.Stop(ctx, added.ID, "")
	_, lerr := f.fleet.Stop(ctx, added.ID, "")
	if err == nil || lerr == nil || err.Error() != lerr.Error() {
		t.Errorf("stop of a closed task: got %v through the daemon, %v in process; want the same refusal", err, lerr)
	}
	if r, err := c.Reopen(ctx, added.ID); err != nil || !r.ProcessorAutoRequeue {
		t.Errorf("reopen: got %+v %v", r, err)
	}
	if _, folder, err := f.fleet.Board.Store.Get(ctx, added.ID); err != nil || folder != board.Pending {
		t.Errorf("after reopen: in %s (%v), want pending", folder, err)
	}

	// Errors keep their words and their kind.
	_, err = c.Move(ctx, "t-00000000", board.Pending, "")
	_, lerr = f.fleet.Move(ctx, "t-00000000", board.Pending, "")
	if !errors.Is(err, board.ErrNotFound) || err.Error() != lerr.Error() {
		t.Errorf("a missing task: got %v, want %v, a not-found error", err, lerr)
	}
	bad := board.NewTask("bad")
	bad.Kind = "nonsense"
	_, err = c.Add(ctx, bad)
	var ae *APIError
	if !errors.As(err, &ae) || !ae.Invalid() {
		t.Errorf("a bad field: got %v, want an invalid-input error", err)
	}
	if !strings.Contains(out.String(), `cra serve: answered "cra test" (POST /api/tasks): 201`) {
		t.Errorf("the daemon's lines: got %q, want the command it answered", out.String())
	}
}

// TestDialFindsOnlyALiveDaemon: no serve.json, a dead pid, and a pid
// that answers as another all mean no daemon: the command works in
// process.
func TestDialFindsOnlyALiveDaemon(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c, err := Dial(ctx, f.state, "", "cra test")
	if c != nil || err != nil {
		t.Errorf("no serve.json: got %v %v, want none", c, err)
	}
	ts, _ := f.serve(t, &Server{PID: os.Getpid()})
	write := func(info Info) {
		data, _ := json.Marshal(info)
		if err := os.WriteFile(filepath.Join(f.state, InfoName), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	addr := strings.TrimPrefix(ts.URL, "http://")
	write(Info{PID: 1 << 22, Addr: addr}) // beyond pid_max: dead
	if c, err := Dial(ctx, f.state, "", "cra test"); c != nil || err != nil {
		t.Errorf("a dead pid: got %v %v, want none", c, err)
	}
	write(Info{PID: os.Getppid(), Addr: addr}) // alive, but not the one answering
	if c, err := Dial(ctx, f.state, "", "cra test"); c != nil || err != nil {
		t.Errorf("another pid answers: got %v %v, want none", c, err)
	}
	write(Info{PID: os.Getpid(), Addr: addr})
	if c, err := Dial(ctx, f.state, "", "cra test"); c == nil || err != nil {
		t.Errorf("the live daemon: got %v %v, want a client", c, err)
	}
	write(Info{PID: os.Getpid(), Addr: "127.0.0.1:1"}) // nothing listens
	if c, err := Dial(ctx, f.state, "", "cra test"); c != nil || err != nil {
		t.Errorf("nothing listens: got %v %v, want none", c, err)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestClientBadReply: a reply that is not the API's (not JSON, the wrong
// shape, an error page without a message, a body cut short) is an error
// that names the daemon and what was wrong, never a zero value taken for
// an answer.
func TestClientBadReply(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		reply func(w http.ResponseWriter)
		says  string
	}{
		{"not JSON", func(w http.ResponseWriter) { io.WriteString(w, "<html>hello</html>") }, "read its answer"},
		{"the wrong shape", func(w http.ResponseWriter) {
			io.WriteString(w, `{"recycler": "off", "tasks": 5, "limits": [1]}`)
		}, "read its answer"},
		{"an error page", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, "<html>proxy error</html>")
		}, "answered 502 Bad Gateway"},
		{"a body cut short", func(w http.ResponseWriter) {
			w.Header().Set("Content-Length", "100")
			io.WriteString(w, `{"recycler": {`)
		}, "unexpected EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { tc.reply(w) }))
			defer ts.Close()
			c := &Client{Base: ts.URL}
			for op, call := range map[string]func() error{
				"settings":     func() error { _, err := c.Settings(ctx); return err },
				"set settings": func() error { _, err := c.SetSettings(ctx, fleetapi.Settings{}); return err },
				"list":         func() error { _, err := c.List(ctx, ""); return err },
				"show":         func() error { _, err := c.Show(ctx, "t-00000001"); return err },
				"cleanup":      func() error { _, err := c.Cleanup(ctx, true); return err },
			} {
				err := call()
				if err == nil || !strings.Contains(err.Error(), "the daemon at "+ts.URL) || !strings.Contains(err.Error(), tc.says) {
					t.Errorf("%s: got %v, want an error naming the daemon and saying %q", op, err, tc.says)
				}
			}
		})
	}
}
