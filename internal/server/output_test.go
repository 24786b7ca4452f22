package server

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/world"
)

// TestOutputStream: the output socket sends a run log's tail, then what
// is appended, and closes normally once the run ends; a bad run number,
// a missing task and another origin are refused.
func TestOutputStream(t *testing.T) {
	f := newFixture(t)
	ts, _ := f.serve(t, &Server{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	task := f.add(t, "talks", nil)
	if _, err := f.b.Log.Agent(ctx, world.StatusActive, task.ID, "run 1: shell", ""); err != nil {
		t.Fatal(err)
	}
	if err := f.b.Store.Move(ctx, task.ID, board.Pending, board.InProgress); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(f.state, board.RunsDir, task.ID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "run-1.log")
	if err := os.WriteFile(logPath, []byte("first\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := "ws" + strings.TrimPrefix(ts.URL, "http") + "/api/tasks/" + task.ID + "/output"
	c, _, err := websocket.Dial(ctx, base+"?run=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	read := func() string {
		t.Helper()
		_, data, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	if got := read(); got != "first\n" {
		t.Errorf("first frame %q", got)
	}
	lf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	lf.WriteString("second\n")
	lf.Close()
	if got := read(); got != "second\n" {
		t.Errorf("second frame %q", got)
	}
	if _, err := f.b.Log.Agent(ctx, world.StatusFinish, task.ID, "exit 0: done", ""); err != nil {
		t.Fatal(err)
	}
	_, _, err = c.Read(ctx)
	if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Errorf("after the run ended: %v, want a normal close", err)
	}

	for _, tc := range []struct {
		path string
		hdr  http.Header
		code int
	}{
		{base + "?run=zero", nil, http.StatusBadRequest},
		{"ws" + strings.TrimPrefix(ts.URL, "http") + "/api/tasks/t-00000000/output?run=1", nil, http.StatusNotFound},
		{base + "?run=1", http.Header{"Origin": {"http://evil.example"}}, http.StatusForbidden},
	} {
		_, resp, err := websocket.Dial(ctx, tc.path, &websocket.DialOptions{HTTPHeader: tc.hdr})
		if err == nil || resp == nil || resp.StatusCode != tc.code {
			code := 0
			if resp != nil {
				code = resp.StatusCode
			}
			t.Errorf("%s: got %d (%v), want %d", tc.path, code, errors.Unwrap(err), tc.code)
		}
	}
}
