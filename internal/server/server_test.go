package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/world"
)

func testBoard(t *testing.T) (*board.Board, string) {
	t.Helper()
	dir := t.TempDir()
	l, err := world.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return board.New(board.NewFileStore(dir), l), dir
}

func get(t *testing.T, h http.Handler, path, token string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("%s: not JSON: %q", path, rec.Body.String())
	}
	return rec.Code, body
}

func TestAPI(t *testing.T) {
	ctx := context.Background()
	b, _ := testBoard(t)
	for _, title := range []string{"first", "second"} {
		if _, err := b.Add(ctx, board.NewTask(title)); err != nil {
			t.Fatal(err)
		}
	}
	h := (&Server{Board: b, PID: 42, Started: time.Now()}).Handler()
	if code, body := get(t, h, "/healthz", ""); code != 200 || body["ok"] != true || body["pid"] != float64(42) {
		t.Errorf("healthz: %d %v", code, body)
	}
	code, body := get(t, h, "/api/tasks", "")
	tasks, _ := body["tasks"].([]any)
	if code != 200 || len(tasks) != 2 || tasks[0].(map[string]any)["folder"] != "pending" {
		t.Errorf("tasks: %d %v", code, body)
	}
	if code, body := get(t, h, "/api/tasks?folder=completed", ""); code != 200 || len(body["tasks"].([]any)) != 0 {
		t.Errorf("completed: %d %v", code, body)
	}
	if code, body := get(t, h, "/api/tasks?folder=done", ""); code != 400 || !strings.Contains(body["error"].(string), "done") {
		t.Errorf("a bad folder: %d %v", code, body)
	}
}

func TestToken(t *testing.T) {
	b, _ := testBoard(t)
	h := (&Server{Board: b, Token: "s3cret"}).Handler()
	if code, body := get(t, h, "/api/tasks", ""); code != 401 || !strings.Contains(body["error"].(string), "Authorization: Bearer") {
		t.Errorf("no token: %d %v", code, body)
	}
	if code, _ := get(t, h, "/api/tasks", "wrong"); code != 401 {
		t.Errorf("a wrong token: %d", code)
	}
	if code, _ := get(t, h, "/healthz", "s3cret"); code != 200 {
		t.Errorf("the token: %d", code)
	}
}

// TestDaemon: one daemon per repository, reachable at the address it
// writes; off loopback only with a token; it stops when its context ends.
func TestDaemon(t *testing.T) {
	b, dir := testBoard(t)
	ctx, cancel := context.WithCancel(context.Background())
	d := &Daemon{StateDir: dir, Addr: "127.0.0.1:0", Board: b, PassEvery: time.Hour}
	ready := make(chan Info, 1)
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, func(i Info) { ready <- i }) }()
	var info Info
	select {
	case info = <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + info.Addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("healthz: %d", resp.StatusCode)
	}
	second := &Daemon{StateDir: dir, Addr: "127.0.0.1:0", Board: b}
	var already *AlreadyRunningError
	if err := second.Run(ctx, nil); !errors.As(err, &already) || already.Info.PID != info.PID || !strings.Contains(err.Error(), info.Addr) {
		t.Errorf("a second daemon: got %v, want it refused naming pid %d and %s", err, info.PID, info.Addr)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if err := (&Daemon{StateDir: dir, Addr: "0.0.0.0:0", Board: b}).Run(context.Background(), nil); !errors.Is(err, ErrTokenRequired) {
		t.Errorf("off loopback without a token: got %v", err)
	}
}

func TestLoopback(t *testing.T) {
	for host, want := range map[string]bool{"127.0.0.1": true, "127.1.2.3": true, "localhost": true, "::1": true, "[::1]": true, "0.0.0.0": false, "": false, "10.0.0.1": false, "example.com": false, "127.evil.example": false} {
		if got := Loopback(host); got != want {
			t.Errorf("Loopback(%q) = %v, want %v", host, got, want)
		}
	}
}
