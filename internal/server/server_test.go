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
	"sync/atomic"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/cleanup"
	"github.com/cra-dev/cra/internal/fleet"
	"github.com/cra-dev/cra/internal/fleetapi"
	"github.com/cra-dev/cra/internal/flock"
	"github.com/cra-dev/cra/internal/verdict"
	"github.com/cra-dev/cra/internal/world"
)

// call sends a request to ts and returns the status and the JSON body.
func call(t *testing.T, ts *httptest.Server, method, path string, body any, hdr ...string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, ts.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if len(data) > 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatalf("%s %s: not JSON: %q", method, path, data)
		}
	}
	return resp.StatusCode, out
}

func errText(body map[string]any) string { s, _ := body["error"].(string); return s }

func TestTasks(t *testing.T) {
	f := newFixture(t)
	a := f.add(t, "first", nil)
	f.add(t, "second", nil)
	f.run(t, a.ID, 0, "all done")
	ts, _ := f.serve(t, &Server{PID: 42})

	if code, body := call(t, ts, "GET", "/healthz", nil); code != 200 || body["ok"] != true || body["pid"] != float64(42) {
		t.Errorf("healthz: %d %v", code, body)
	}
	code, body := call(t, ts, "GET", "/api/tasks", nil)
	tasks, _ := body["tasks"].([]any)
	end, _, _ := logEnd(world.Path(f.state))
	if code != 200 || len(tasks) != 2 || body["offset"] != float64(end) || end == 0 {
		t.Fatalf("tasks: %d %v (log end %d)", code, body, end)
	}
	if got := tasks[0].(map[string]any); got["folder"] != "pending" || got["need"] != "go test ./... passes" {
		t.Errorf("first listed: %v, want the pending task, whole", got)
	}
	code, body = call(t, ts, "GET", "/api/tasks?view=card&folder=completed", nil)
	tasks, _ = body["tasks"].([]any)
	if code != 200 || len(tasks) != 1 {
		t.Fatalf("cards: %d %v", code, body)
	}
	if c := tasks[0].(map[string]any); c["id"] != a.ID || c["runs"] != float64(1) || c["need"] != nil {
		t.Errorf("card: %v, want %s after one run without its long texts", c, a.ID)
	}
	for _, path := range []string{"/api/tasks?folder=done", "/api/tasks?view=everything"} {
		if code, body := call(t, ts, "GET", path, nil); code != 400 || errText(body) == "" {
			t.Errorf("%s: %d %v, want 400", path, code, body)
		}
	}
}

func TestTask(t *testing.T) {
	f := newFixture(t)
	a := f.add(t, "fix the sum", nil)
	f.run(t, a.ID, 2, "tests failed")
	f.decide(t, a.ID, world.StatusRetry, "some_progress", "retry: fix the test", "")
	f.run(t, a.ID, 0, "fixed")
	ts, _ := f.serve(t, &Server{})

	code, body := call(t, ts, "GET", "/api/tasks/"+a.ID, nil)
	if code != 200 || body["folder"] != "completed" || body["waits_for_person"] != false {
		t.Fatalf("task: %d %v", code, body)
	}
	logLines, _ := body["log"].([]any)
	if len(logLines) != 7 { // start, active, finish, review, retry, active, finish
		t.Errorf("log lines: %d, want 7: %v", len(logLines), logLines)
	}
	runs, _ := body["runs"].([]any)
	if len(runs) != 2 {
		t.Fatalf("runs: %v, want 2", runs)
	}
	r1, r2 := runs[0].(map[string]any), runs[1].(map[string]any)
	if r1["n"] != float64(1) || r1["exit_code"] != float64(2) || r1["profile"] != "builtin" || r1["log_bytes"] != float64(len("tests failed\n")) {
		t.Errorf("run 1: %v", r1)
	}
	if r2["exit_code"] != float64(0) || !strings.HasPrefix(r2["outcome"].(string), "exit 0") || r2["log"] != filepath.Join("runs", a.ID, "run-2.log") {
		t.Errorf("run 2: %v", r2)
	}
	if code, body := call(t, ts, "GET", "/api/tasks/"+a.ID+"?view=card", nil); code != 200 || body["folder"] != "completed" || body["title"] != "fix the sum" {
		t.Errorf("card: %d %v", code, body)
	}
	if code, body := call(t, ts, "GET", "/api/tasks/t-00000000", nil); code != 404 || !strings.Contains(errText(body), "no such task") {
		t.Errorf("unknown task: %d %v", code, body)
	}
	// The drawer's diff: a task that has no branch yet says so; an unknown
	// task and a bad id are refused as the task's own endpoint refuses them.
	if code, body := call(t, ts, "GET", "/api/tasks/"+a.ID+"/diff", nil); code != 200 || body["patch"] != "" ||
		body["missing"] != "no branch cra/"+a.ID+" yet: a run commits to it" {
		t.Errorf("diff without a branch: %d %v", code, body)
	}
	if code, _ := call(t, ts, "GET", "/api/tasks/t-00000000/diff", nil); code != 404 {
		t.Errorf("diff of an unknown task: %d", code)
	}
	if code, body := call(t, ts, "GET", "/api/tasks/.hidden/diff", nil); code != 400 || body["field"] != "id" {
		t.Errorf("diff with a bad id: %d %v", code, body)
	}
	if code, body := call(t, ts, "GET", "/api/tasks/.hidden", nil); code != 400 || body["field"] != "id" {
		t.Errorf("a bad id: %d %v", code, body)
	}
	if code, _ := call(t, ts, "GET", "/api/nothing", nil); code != 404 {
		t.Errorf("an unknown endpoint: %d", code)
	}
}

func TestAddTask(t *testing.T) {
	f := newFixture(t)
	ts, _ := f.serve(t, &Server{})
	code, body := call(t, ts, "POST", "/api/tasks", map[string]any{"title": "  add a flag ", "need": "tests pass", "type": "bug", "priority": "high", "tests_may_change": true})
	id, _ := body["id"].(string)
	if code != 201 || body["folder"] != "pending" || body["title"] != "add a flag" || !strings.HasPrefix(id, "t-") || body["tests_may_change"] != true {
		t.Fatalf("add: %d %v", code, body)
	}
	got, folder, err := f.b.Store.Get(context.Background(), id)
	if err != nil || folder != board.Pending || got.Priority != board.High || got.Type != "bug" || !got.TestsMayChange {
		t.Errorf("the file: %v in %s (%v)", got, folder, err)
	}
	for _, tc := range []struct {
		name  string
		body  any
		code  int
		field string
	}{
		{"no title", map[string]any{"title": " "}, 400, "title"},
		{"a two-line title", map[string]any{"title": "a\nb"}, 400, "title"},
		{"a bad priority", map[string]any{"title": "x", "priority": "urgent"}, 400, "priority"},
		{"a bad kind", map[string]any{"title": "x", "kind": "chore"}, 400, "kind"},
		{"after an unknown task", map[string]any{"title": "x", "after": []string{"t-00000000"}}, 400, "after"},
		{"a bad id", map[string]any{"title": "x", "id": "../x"}, 400, "id"},
		{"a taken id", map[string]any{"title": "x", "id": id}, 409, ""},
		{"an unknown field", map[string]any{"title": "x", "colour": "red"}, 400, ""},
		{"not JSON", "title=x", 400, ""},
		{"no body", "", 400, ""},
		{"a body too large", map[string]any{"title": "x", "description": strings.Repeat("a", DefaultMaxBody)}, 413, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := call(t, ts, "POST", "/api/tasks", tc.body)
			if code != tc.code || errText(body) == "" {
				t.Fatalf("got %d %v, want %d", code, body, tc.code)
			}
			if tc.field != "" && (body["field"] != tc.field || body["fix"] == "") {
				t.Errorf("got field %v fix %v, want %s and a fix", body["field"], body["fix"], tc.field)
			}
		})
	}
	// A body whose length is not announced is cut at the limit too.
	req, _ := http.NewRequest("POST", ts.URL+"/api/tasks", io.MultiReader(strings.NewReader(`{"title":"x","description":"`), strings.NewReader(strings.Repeat("a", DefaultMaxBody)), strings.NewReader(`"}`)))
	req.ContentLength = -1
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Errorf("a chunked body too large: %d, want 413", resp.StatusCode)
	}
}

func TestAnswerMoveRetry(t *testing.T) {
	f := newFixture(t)
	blocked := f.add(t, "blocked", nil)
	f.run(t, blocked.ID, 1, "cannot reach the database")
	f.decide(t, blocked.ID, world.StatusFailed, "", "failed 5 times", "give the agent the database URL")
	verified := f.add(t, "verified", nil)
	f.run(t, verified.ID, 0, "done")
	f.decide(t, verified.ID, world.StatusVerified, "full_complete", "verified", "")
	pending := f.add(t, "pending", nil)
	ts, _ := f.serve(t, &Server{})

	if code, body := call(t, ts, "GET", "/api/tasks/"+blocked.ID, nil); code != 200 || body["waits_for_person"] != true || body["folder"] != "failed-blocked" {
		t.Fatalf("blocked: %d %v", code, body)
	}
	if code, body := call(t, ts, "POST", "/api/tasks/"+blocked.ID+"/answer", map[string]any{"text": " "}); code != 400 || body["field"] != "answer" {
		t.Errorf("an empty answer: %d %v", code, body)
	}
	code, body := call(t, ts, "POST", "/api/tasks/"+blocked.ID+"/answer", map[string]any{"text": "use postgres://localhost/test"})
	if code != 200 || body["resumed"] != true || body["task"].(map[string]any)["folder"] != "pending" {
		t.Fatalf("answer: %d %v", code, body)
	}
	hist, _ := f.b.History(context.Background(), blocked.ID)
	if e := hist[len(hist)-2]; e.Kind != world.KindEvent || e.Source != world.SourceUser || e.Output != "use postgres://localhost/test" {
		t.Errorf("the answer in the log: %+v", e)
	}
	if code, body := call(t, ts, "POST", "/api/tasks/"+verified.ID+"/answer", map[string]any{"text": "more"}); code != 409 {
		t.Errorf("an answer to a verified task: %d %v", code, body)
	}
	if code, _ := call(t, ts, "POST", "/api/tasks/t-00000000/answer", map[string]any{"text": "x"}); code != 404 {
		t.Errorf("an answer to no task: %d", code)
	}
	// A task that waits for no one takes the answer for its next run and
	// stays where it is.
	code, body = call(t, ts, "POST", "/api/tasks/"+pending.ID+"/answer", map[string]any{"text": "prefer v2"})
	if task, _ := body["task"].(map[string]any); code != 200 || body["resumed"] != false || task["folder"] != "pending" || task["waits_for_person"] == true {
		t.Errorf("an answer to a pending task: %d %v", code, body)
	}

	if code, body := call(t, ts, "POST", "/api/tasks/"+pending.ID+"/move", map[string]any{"to": "done"}); code != 400 || body["field"] != "to" {
		t.Errorf("a move to no folder: %d %v", code, body)
	}
	code, body = call(t, ts, "POST", "/api/tasks/"+pending.ID+"/move", map[string]any{"to": "in-progress"})
	if possible, _ := body["possible"].([]any); code != 409 || len(possible) == 0 {
		t.Errorf("a move to in-progress: %d %v, want 409 naming where it can go", code, body)
	}
	if code, body := call(t, ts, "POST", "/api/tasks/"+pending.ID+"/move", map[string]any{"to": "failed-blocked", "why": "not needed"}); code != 200 || body["folder"] != "failed-blocked" {
		t.Errorf("a move: %d %v", code, body)
	}
	if code, body := call(t, ts, "POST", "/api/tasks/"+verified.ID+"/retry", nil); code != 409 {
		t.Errorf("a retry of a verified task: %d %v", code, body)
	}
	failed := f.add(t, "failed", nil)
	f.run(t, failed.ID, 1, "boom")
	if code, body := call(t, ts, "POST", "/api/tasks/"+failed.ID+"/retry", map[string]any{"why": "flaky"}); code != 200 || body["folder"] != "pending" {
		t.Errorf("a retry: %d %v", code, body)
	}
	hist, _ = f.b.History(context.Background(), failed.ID)
	if e := hist[len(hist)-1]; e.Status != world.StatusRetry {
		t.Errorf("a retry in the log: %+v", e)
	}
}

func TestLog(t *testing.T) {
	f := newFixture(t)
	a := f.add(t, "one", nil)
	ctx := context.Background()
	f.b.Log.Event(ctx, world.SourceSystem, "level1", "pass: all well")
	f.b.Log.Event(ctx, world.SourceUser, a.ID, "hello")
	ts, _ := f.serve(t, &Server{})
	code, body := call(t, ts, "GET", "/api/log?tail=2", nil)
	entries, _ := body["entries"].([]any)
	end, _, _ := logEnd(world.Path(f.state))
	if code != 200 || len(entries) != 2 || body["next"] != float64(end) {
		t.Fatalf("tail: %d %v", code, body)
	}
	second := entries[0].(map[string]any)
	if second["entry"].(map[string]any)["source"] != "system" {
		t.Errorf("tail's first: %v", second)
	}
	code, body = call(t, ts, "GET", "/api/log?since="+jsonNum(second["end"])+"&limit=5", nil)
	entries, _ = body["entries"].([]any)
	if code != 200 || len(entries) != 1 || entries[0].(map[string]any)["entry"].(map[string]any)["output"] != "hello" || body["next"] != float64(end) {
		t.Errorf("since: %d %v", code, body)
	}
	code, body = call(t, ts, "GET", "/api/log?since=0&limit=1", nil)
	if entries, _ := body["entries"].([]any); code != 200 || len(entries) != 1 || body["next"] != entries[0].(map[string]any)["end"] {
		t.Errorf("a page: %d %v", code, body)
	}
	code, body = call(t, ts, "GET", "/api/log?since=0&source=system", nil)
	if entries, _ := body["entries"].([]any); code != 200 || len(entries) != 1 {
		t.Errorf("a filter: %d %v", code, body)
	}
	for path, want := range map[string]int{"/api/log?since=3": 409, "/api/log?since=x": 400, "/api/log?tail=-1": 400, "/api/log?kind=x": 400, "/api/log?since=0&limit=0": 400} {
		if code, body := call(t, ts, "GET", path, nil); code != want || errText(body) == "" {
			t.Errorf("%s: %d %v, want %d", path, code, body, want)
		}
	}
}

func jsonNum(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestToken: off loopback every request needs the token, from a header
// or from the cookie that /?token= sets.
func TestToken(t *testing.T) {
	f := newFixture(t)
	ts, _ := f.serve(t, &Server{Token: "s3cret-s3cret-s3cret"})
	if code, body := call(t, ts, "GET", "/api/tasks", nil); code != 401 || !strings.Contains(errText(body), "Authorization: Bearer") {
		t.Errorf("no token: %d %v", code, body)
	}
	if code, _ := call(t, ts, "GET", "/", nil); code != 401 {
		t.Errorf("the page without a token: %d", code)
	}
	if code, _ := call(t, ts, "GET", "/api/tasks", nil, "Authorization", "Bearer wrong"); code != 401 {
		t.Errorf("a wrong token: %d", code)
	}
	if code, _ := call(t, ts, "GET", "/healthz", nil, "Authorization", "Bearer s3cret-s3cret-s3cret"); code != 200 {
		t.Errorf("the token: %d", code)
	}
	if code, _ := call(t, ts, "GET", "/?token=wrong", nil); code != 401 {
		t.Errorf("/?token=wrong: %d", code)
	}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get(ts.URL + "/?token=s3cret-s3cret-s3cret")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookies := resp.Cookies()
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "/" || len(cookies) != 1 || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("/?token=: %d %q %v, want a redirect to / with an HttpOnly SameSite=Strict cookie", resp.StatusCode, resp.Header.Get("Location"), cookies)
	}
	if code, _ := call(t, ts, "GET", "/api/tasks", nil, "Cookie", cookies[0].String()); code != 200 {
		t.Errorf("the cookie: %d", code)
	}
	// With a token, any host name may be used.
	if code, _ := call(t, ts, "GET", "/healthz", nil, "Host", "board.example:7777", "Authorization", "Bearer s3cret-s3cret-s3cret"); code != 200 {
		t.Errorf("another host with the token: %d", code)
	}
}

// TestOrigin: a page of another origin cannot change the board (CSRF),
// nor, on loopback, read it through a rebound name.
func TestOrigin(t *testing.T) {
	f := newFixture(t)
	ts, _ := f.serve(t, &Server{})
	add := map[string]any{"title": "from a page"}
	for _, tc := range []struct {
		name string
		hdr  []string
		want int
	}{
		{"another origin", []string{"Origin", "http://evil.example"}, 403},
		{"another port", []string{"Origin", "http://127.0.0.1:1"}, 403},
		{"a cross-site fetch", []string{"Sec-Fetch-Site", "cross-site"}, 403},
		{"the board's own page", []string{"Origin", ts.URL, "Sec-Fetch-Site", "same-origin"}, 201},
		{"the CLI, no Origin", nil, 201},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := call(t, ts, "POST", "/api/tasks", add, tc.hdr...)
			if code != tc.want {
				t.Errorf("got %d %v, want %d", code, body, tc.want)
			}
		})
	}
	if code, _ := call(t, ts, "GET", "/api/tasks", nil, "Origin", "http://evil.example"); code != 200 {
		t.Errorf("a read from another origin: %d (the browser keeps the answer from the page)", code)
	}
	if code, body := call(t, ts, "GET", "/api/tasks", nil, "Host", "evil.example"); code != 403 || !strings.Contains(errText(body), "loopback") {
		t.Errorf("a rebound host name: %d %v", code, body)
	}
	if code, _ := call(t, ts, "GET", "/api/tasks", nil, "Host", "localhost:7777"); code != 200 {
		t.Errorf("localhost: %d", code)
	}
}

func TestPage(t *testing.T) {
	f := newFixture(t)
	ts, _ := f.serve(t, &Server{})
	resp, err := http.Get(ts.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "<!doctype html>") || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Errorf("page: %d %q %v", resp.StatusCode, body, resp.Header)
	}
}

func TestLoadToken(t *testing.T) {
	dir := t.TempDir()
	tok, made, err := LoadToken(dir)
	if err != nil || !made || len(tok) != 64 {
		t.Fatalf("first: %q %v %v", tok, made, err)
	}
	fi, err := os.Stat(filepath.Join(dir, TokenName))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the file: %v %v, want mode 0600", fi, err)
	}
	again, made, err := LoadToken(dir)
	if err != nil || made || again != tok {
		t.Errorf("second: %q %v %v, want the same token, not made", again, made, err)
	}
	os.Chmod(filepath.Join(dir, TokenName), 0o644)
	if _, _, err := LoadToken(dir); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a file others read: %v", err)
	}
}

// TestDaemon: one daemon per repository, reachable at the address it
// writes; off loopback with a token it makes and keeps; it stops when its
// context ends.
func TestDaemon(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	d := &Daemon{Fleet: f.fleet, Addr: "127.0.0.1:0", Workers: fleet.Workers{PassEvery: time.Hour}}
	ready := make(chan Info, 1)
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, func(i Info) { ready <- i }) }()
	var info Info
	select {
	case info = <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	if info.Token != "" {
		t.Errorf("a token on loopback: %q", info.Token)
	}
	resp, err := http.Get("http://" + info.Addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("healthz: %d", resp.StatusCode)
	}
	second := &Daemon{Fleet: f.fleet, Addr: "127.0.0.1:0"}
	var already *AlreadyRunningError
	if err := second.Run(ctx, nil); !errors.As(err, &already) || already.Info.PID != info.PID || !strings.Contains(err.Error(), info.Addr) {
		t.Errorf("a second daemon: got %v, want it refused naming pid %d and %s", err, info.PID, info.Addr)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}

	// Off loopback: a token is made, kept with mode 0600, and required.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	d = &Daemon{Fleet: f.fleet, Addr: "0.0.0.0:0", Workers: fleet.Workers{PassEvery: time.Hour}}
	go func() { done <- d.Run(ctx, func(i Info) { ready <- i }) }()
	select {
	case info = <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	kept, err := os.ReadFile(filepath.Join(f.state, TokenName))
	if !info.TokenMade || info.Token == "" || strings.TrimSpace(string(kept)) != info.Token || err != nil {
		t.Errorf("the token: %+v, kept %q (%v)", info, kept, err)
	}
	if data, _ := os.ReadFile(filepath.Join(f.state, InfoName)); strings.Contains(string(data), info.Token) {
		t.Errorf("serve.json holds the token: %s", data)
	}
	_, port, _ := strings.Cut(info.Addr, "]:")
	if port == "" {
		_, port, _ = strings.Cut(info.Addr, ":")
	}
	resp, err = http.Get("http://127.0.0.1:" + port + "/api/tasks")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("off loopback, a loopback request without the token: %d, want 401", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	d = &Daemon{Fleet: f.fleet, Addr: "0.0.0.0:0", Workers: fleet.Workers{PassEvery: time.Hour}}
	ctx, cancel = context.WithCancel(context.Background())
	go func() { done <- d.Run(ctx, func(i Info) { ready <- i }) }()
	info = <-ready
	if info.TokenMade || strings.TrimSpace(string(kept)) != info.Token {
		t.Errorf("the next start: %+v, want the kept token", info)
	}
	cancel()
	<-done
}

func TestLoopback(t *testing.T) {
	for host, want := range map[string]bool{"127.0.0.1": true, "127.1.2.3": true, "localhost": true, "::1": true, "[::1]": true, "0.0.0.0": false, "": false, "10.0.0.1": false, "example.com": false, "127.evil.example": false} {
		if got := Loopback(host); got != want {
			t.Errorf("Loopback(%q) = %v, want %v", host, got, want)
		}
	}
}

// fakeCleaner is a Cleaner whose answers the test gives.
type fakeCleaner struct {
	start   func() error
	running func() bool
}

var _ Cleaner = (*fakeCleaner)(nil)

func (c *fakeCleaner) Start() error  { return c.start() }
func (c *fakeCleaner) Running() bool { return c.running() }
func (c *fakeCleaner) Run(ctx context.Context, dryRun bool) (*fleetapi.CleanupReport, error) {
	if err := c.start(); err != nil {
		return nil, err
	}
	return &fleetapi.CleanupReport{DryRun: dryRun, Groups: []verdict.DuplicateGroup{}}, nil
}

// slowCleanup is the fixture's fleet whose cleanup pass is the test's.
type slowCleanup struct {
	*fleet.Fleet
	pass func(ctx context.Context)
}

func (f *slowCleanup) Cleanup(ctx context.Context, dryRun bool) (*fleetapi.CleanupReport, error) {
	f.pass(ctx)
	return &fleetapi.CleanupReport{Groups: []verdict.DuplicateGroup{}}, nil
}

func TestCleanupAPI(t *testing.T) {
	f := newFixture(t)
	ts, _ := f.serve(t, &Server{})
	if code, body := call(t, ts, "GET", "/api/cleanup", nil); code != 200 || body["available"] != false || body["running"] != false {
		t.Errorf("no cleaner: %d %v", code, body)
	}
	if code, body := call(t, ts, "POST", "/api/cleanup", nil); code != 503 || !strings.Contains(errText(body), "cra cleanup") {
		t.Errorf("start without a cleaner: %d %v", code, body)
	}
	var running atomic.Bool
	c := &fakeCleaner{running: running.Load, start: func() error {
		if !running.CompareAndSwap(false, true) {
			return cleanup.ErrRunning
		}
		return nil
	}}
	ts, _ = f.serve(t, &Server{Cleaner: c})
	if code, body := call(t, ts, "POST", "/api/cleanup", nil); code != 202 || body["running"] != true {
		t.Errorf("start: %d %v", code, body)
	}
	if code, body := call(t, ts, "GET", "/api/cleanup", nil); code != 200 || body["available"] != true || body["running"] != true {
		t.Errorf("while it runs: %d %v", code, body)
	}
	if code, _ := call(t, ts, "POST", "/api/cleanup", nil); code != 409 {
		t.Errorf("a second start: %d, want 409", code)
	}
	if code, _ := call(t, ts, "POST", "/api/cleanup", nil, "Origin", "http://evil.example"); code != 403 {
		t.Errorf("a start from another origin: %d, want 403", code)
	}
}

// TestDaemonCleanup: the daemon runs one pass at a time in the
// background, also refusing while 'cra cleanup' holds the lock, and
// waits for it at shutdown.
func TestDaemonCleanup(t *testing.T) {
	f := newFixture(t)
	release := make(chan struct{})
	passes := make(chan struct{}, 10)
	d := &Daemon{Fleet: &slowCleanup{Fleet: f.fleet, pass: func(ctx context.Context) {
		passes <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
	}}, Addr: "127.0.0.1:0", Workers: fleet.Workers{PassEvery: time.Hour}}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan Info, 1)
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, func(i Info) { ready <- i }) }()
	info := <-ready
	ts := &httptest.Server{URL: "http://" + info.Addr}
	if code, _ := call(t, ts, "POST", "/api/cleanup", nil); code != 202 {
		t.Fatalf("start: %d", code)
	}
	<-passes
	if code, body := call(t, ts, "GET", "/api/cleanup", nil); body["running"] != true || code != 200 {
		t.Errorf("while it runs: %d %v", code, body)
	}
	if code, _ := call(t, ts, "POST", "/api/cleanup", nil); code != 409 {
		t.Errorf("a second start: %d, want 409", code)
	}
	close(release)
	for {
		if _, body := call(t, ts, "GET", "/api/cleanup", nil); body["running"] == false {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// 'cra cleanup' in another process holds the lock.
	lk, ok, err := flock.TryLock(filepath.Join(f.state, cleanup.LockFile))
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if code, body := call(t, ts, "POST", "/api/cleanup", nil); code != 409 || !strings.Contains(errText(body), "cleanup is running") {
		t.Errorf("while 'cra cleanup' runs: %d %v", code, body)
	}
	lk.Close()
	if code, _ := call(t, ts, "POST", "/api/cleanup", nil); code != 202 {
		t.Errorf("after it: %d", code)
	}
	<-passes
	cancel() // the pass running now ends with the daemon
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestWaitsForPerson: only a failed task whose ending asks a person
// waits for one; a collapsed duplicate, also in failed-blocked/, does
// not, in the snapshot, the card and the detail alike.
func TestWaitsForPerson(t *testing.T) {
	f := newFixture(t)
	blocked := f.add(t, "blocked", nil)
	f.run(t, blocked.ID, 1, "cannot reach the database")
	f.decide(t, blocked.ID, world.StatusFailed, "", "failed 5 times", "give the agent the database URL")
	keep := f.add(t, "kept", nil)
	dup := f.add(t, "duplicate", nil)
	if _, err := f.b.Collapse(context.Background(), keep.ID, "kept", []string{dup.ID}, nil); err != nil {
		t.Fatal(err)
	}
	ts, _ := f.serve(t, &Server{})
	want := map[string]bool{blocked.ID: true, keep.ID: false, dup.ID: false}
	for _, view := range []string{"", "?view=card"} {
		_, body := call(t, ts, "GET", "/api/tasks"+view, nil)
		tasks, _ := body["tasks"].([]any)
		if len(tasks) != 3 {
			t.Fatalf("tasks%s: %v", view, body)
		}
		for _, x := range tasks {
			c := x.(map[string]any)
			if got := c["waits_for_person"]; got != want[c["id"].(string)] {
				t.Errorf("tasks%s: %s in %s waits_for_person %v, want %v", view, c["id"], c["folder"], got, want[c["id"].(string)])
			}
		}
	}
	for id, w := range want {
		for _, view := range []string{"", "?view=card"} {
			if _, body := call(t, ts, "GET", "/api/tasks/"+id+view, nil); body["waits_for_person"] != w {
				t.Errorf("task %s%s: waits_for_person %v, want %v", id, view, body["waits_for_person"], w)
			}
		}
	}
}
