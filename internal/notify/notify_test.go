//go:build unix

package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var event = Event{
	TaskID: "t-42",
	Status: StatusFailed,
	Event:  EventNeedsYou,
	Title:  "fix \"it's\" $(touch pwned); `id`\nsecond line ünïcödé ✓",
	Need:   "answer: which\tbranch?\n",
	Time:   time.Date(2026, 11, 24, 5, 0, 0, 0, time.UTC),
}

// readEnv parses the NUL-separated output of env -0.
func readEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	return vars
}

func TestCommandSeesTheEvent(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CRA_TASK_ID", "inherited-from-a-run")
	n := &Notifier{Command: "cd " + dir + " && env -0 > env.out"}
	if err := n.Notify(context.Background(), event); err != nil {
		t.Fatal(err)
	}
	vars := readEnv(t, filepath.Join(dir, "env.out"))
	want := map[string]string{
		"CRA_TASK_ID":     event.TaskID,
		"CRA_TASK_STATUS": event.Status,
		"CRA_TASK_TITLE":  event.Title,
		"CRA_TASK_NEED":   event.Need,
		"CRA_TASK_EVENT":  event.Event,
	}
	got := map[string]string{}
	for k := range want {
		got[k] = vars[k]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("environment (-want +got):\n%s", diff)
	}
	if vars["PATH"] == "" {
		t.Error("the command lost cra's own environment (PATH)")
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Error("a value in the title ran as shell code")
	}
}

func TestEnvDropsNUL(t *testing.T) {
	got := Env(Event{TaskID: "a\x00b", Title: "x\ny"})
	want := []string{"CRA_TASK_ID=ab", "CRA_TASK_STATUS=", "CRA_TASK_TITLE=x\ny", "CRA_TASK_NEED=", "CRA_TASK_EVENT="}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	n := &Notifier{Command: "test \"$CRA_TASK_ID\" = ab"}
	if err := n.Notify(context.Background(), Event{TaskID: "a\x00b"}); err != nil {
		t.Errorf("a NUL in a value: %v", err)
	}
}

func TestFailingCommand(t *testing.T) {
	n := &Notifier{Command: "echo first; for i in 1 2 3 4 5 6 7; do echo line$i; done; echo 'boom: no display' >&2; exit 3"}
	err := n.Notify(context.Background(), event)
	if err == nil {
		t.Fatal("got nil, want an error")
	}
	msg := err.Error()
	for _, want := range []string{"notify command: exit status 3", "boom: no display", "line7"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not contain %q", msg, want)
		}
	}
	if strings.Contains(msg, "first") {
		t.Errorf("error %q quotes more than the last lines", msg)
	}
	if err := (&Notifier{Command: "exit 1"}).Notify(context.Background(), event); err == nil || !strings.Contains(err.Error(), "exit status 1, no output") {
		t.Errorf("silent failure: got %v, want exit status 1, no output", err)
	}
}

func TestCommandOutputIsCapped(t *testing.T) {
	// 200 KiB of output, then the line that matters.
	n := &Notifier{Command: "head -c 204800 /dev/zero | tr '\\0' x; echo; echo the-cause >&2; exit 2"}
	err := n.Notify(context.Background(), event)
	if err == nil || !strings.Contains(err.Error(), "the-cause") {
		t.Fatalf("got %v, want the last line quoted", err)
	}
	if len(err.Error()) > 4*OutputLimit {
		t.Errorf("error is %d bytes long", len(err.Error()))
	}
	var tl tail
	tl.limit = 4
	tl.Write([]byte("abcdef"))
	tl.Write([]byte("gh"))
	if string(tl.buf) != "efgh" {
		t.Errorf("tail kept %q, want efgh", tl.buf)
	}
}

// alive reports whether pid is a process that is not a zombie.
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == nil // no /proc: ask the kernel
	}
	i := bytes.LastIndexByte(data, ')')
	return i >= 0 && len(data) > i+2 && data[i+2] != 'Z' && data[i+2] != 'X'
}

// childOf reads the pid a test script wrote and arranges that it is
// killed if a test leaves it: only pids the test's own command started.
func childOf(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the script did not record its child: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 {
		t.Fatalf("child pid %q", data)
	}
	t.Cleanup(func() {
		if alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return pid
}

// waitDead waits, generously, for pid to be gone.
func waitDead(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d (started by the command) still runs", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestTimeoutKillsTheGroup(t *testing.T) {
	tests := []struct{ name, script string }{
		{"polite", "sleep 60 & echo $! > child; sleep 60"},
		// Both ignore SIGTERM (an ignored signal stays ignored across
		// exec): only SIGKILL ends them.
		{"ignores SIGTERM", "trap '' TERM; sleep 60 & echo $! > child; sleep 60"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			n := &Notifier{Command: "cd " + dir + " || exit 1; echo started; " + tc.script, Timeout: 500 * time.Millisecond}
			start := time.Now()
			err := n.Notify(context.Background(), event)
			if err == nil || !strings.Contains(err.Error(), "notify command: killed after the 500ms timeout") || !strings.Contains(err.Error(), "started") {
				t.Errorf("got %v, want a timeout error quoting the output", err)
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("Notify returned after %v", d)
			}
			waitDead(t, childOf(t, filepath.Join(dir, "child")))
		})
	}
}

func TestCancelKillsTheGroup(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	n := &Notifier{Command: "cd " + dir + " || exit 1; sleep 60 & echo $! > child; touch ready; sleep 60"}
	go func() {
		for {
			if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	err := n.Notify(ctx, event)
	if err == nil || !strings.Contains(err.Error(), "notify command: stopped: context canceled") {
		t.Errorf("got %v, want it stopped by the cancel", err)
	}
	waitDead(t, childOf(t, filepath.Join(dir, "child")))
}

// TestLeftoversDoNotOutliveTheCommand: a command that exits at once but
// leaves a child holding its output still returns, and the child goes.
func TestLeftoversDoNotOutliveTheCommand(t *testing.T) {
	dir := t.TempDir()
	n := &Notifier{Command: "cd " + dir + " || exit 1; sleep 60 & echo $! > child; exit 0"}
	if err := n.Notify(context.Background(), event); err != nil {
		t.Fatal(err)
	}
	waitDead(t, childOf(t, filepath.Join(dir, "child")))
}

// hook is a webhook receiver recording what it was sent.
type hook struct {
	mu       sync.Mutex
	bodies   [][]byte
	headers  []http.Header
	status   int
	response string
}

func (h *hook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.bodies = append(h.bodies, body)
	h.headers = append(h.headers, r.Header.Clone())
	status, response := h.status, h.response
	h.mu.Unlock()
	if r.Method != http.MethodPost {
		status = http.StatusMethodNotAllowed
	}
	if status == 0 {
		status = http.StatusNoContent
	}
	w.WriteHeader(status)
	io.WriteString(w, response)
}

func (h *hook) requests() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.bodies)
}

func TestWebhookGetsTheEvent(t *testing.T) {
	h := &hook{}
	srv := httptest.NewServer(h)
	defer srv.Close()
	n := &Notifier{Webhook: srv.URL + "/hook", Token: "s3cret"}
	if err := n.Notify(context.Background(), event); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(event)
	if h.requests() != 1 {
		t.Fatalf("got %d requests, want 1", h.requests())
	}
	if !bytes.Equal(h.bodies[0], want) {
		t.Errorf("body:\ngot  %s\nwant %s", h.bodies[0], want)
	}
	var back Event
	if err := json.Unmarshal(h.bodies[0], &back); err != nil || !cmp.Equal(event, back) {
		t.Errorf("body decodes to %+v, %v", back, err)
	}
	if got := h.headers[0].Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type: got %q, want application/json", got)
	}
	if got := h.headers[0].Get("Authorization"); got != "Bearer s3cret" {
		t.Errorf("Authorization: got %q, want Bearer s3cret", got)
	}

	// No token, no header; a zero time is filled in.
	n.Token = ""
	if err := n.Notify(context.Background(), Event{TaskID: "t-1", Status: StatusVerified, Event: EventVerified, Title: "done"}); err != nil {
		t.Fatal(err)
	}
	if got, ok := h.headers[1]["Authorization"]; ok {
		t.Errorf("Authorization sent without a token: %q", got)
	}
	var sent map[string]any
	if err := json.Unmarshal(h.bodies[1], &sent); err != nil {
		t.Fatal(err)
	}
	if _, ok := sent["need"]; ok {
		t.Errorf("empty need was sent: %s", h.bodies[1])
	}
	if ts, _ := sent["time"].(string); strings.HasPrefix(ts, "0001-") || ts == "" {
		t.Errorf("zero time was sent as %q", ts)
	}

	// A token variable named but empty: nothing is sent, and the error
	// names the variable to export.
	n.TokenEnv = "CRA_HOOK_TOKEN"
	err := n.Notify(context.Background(), event)
	if err == nil || !strings.Contains(err.Error(), "CRA_HOOK_TOKEN (notify.webhook_token_env) is empty") || h.requests() != 2 {
		t.Errorf("an empty token variable: got %v after %d requests; want no request and an error naming CRA_HOOK_TOKEN", err, h.requests())
	}
}

func TestWebhookErrors(t *testing.T) {
	long := strings.Repeat("x", 199) + "END-OF-200" + strings.Repeat("y", 500)
	h := &hook{status: http.StatusInternalServerError, response: long}
	srv := httptest.NewServer(h)
	defer srv.Close()
	n := &Notifier{Webhook: srv.URL + "/services/T0/SECRETPATH", Token: "s3cret"}
	err := n.Notify(context.Background(), event)
	if err == nil {
		t.Fatal("a 500 gave no error")
	}
	msg := err.Error()
	for _, want := range []string{"notify webhook " + srv.URL + "/…: HTTP 500 Internal Server Error", strings.Repeat("x", 199) + "E"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not contain %q", msg, want)
		}
	}
	for _, secret := range []string{"END-OF-200", "SECRETPATH", "s3cret"} {
		if strings.Contains(msg, secret) {
			t.Errorf("error %q contains %q", msg, secret)
		}
	}

	// Nothing listens on a port just closed.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	err = (&Notifier{Webhook: "http://" + addr + "/hook/SECRETPATH"}).Notify(context.Background(), event)
	if err == nil || !strings.Contains(err.Error(), "notify webhook http://"+addr+"/…: post") || strings.Contains(err.Error(), "SECRETPATH") {
		t.Errorf("unreachable webhook: got %v", err)
	}

	// A receiver that never answers is given up on after the timeout.
	release := make(chan struct{})
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer stuck.Close()
	defer close(release)
	err = (&Notifier{Webhook: stuck.URL, Timeout: 300 * time.Millisecond}).Notify(context.Background(), event)
	if err == nil || !strings.Contains(err.Error(), "notify webhook "+stuck.URL) {
		t.Errorf("stuck webhook: got %v", err)
	}

	if err := (&Notifier{Webhook: "http://[::1"}).Notify(context.Background(), event); err == nil || !strings.Contains(err.Error(), "notify webhook (not a URL)") {
		t.Errorf("bad URL: got %v", err)
	}
}

func TestOneFailingDoesNotStopTheOther(t *testing.T) {
	t.Run("command fails, webhook still posts", func(t *testing.T) {
		h := &hook{}
		srv := httptest.NewServer(h)
		defer srv.Close()
		err := (&Notifier{Command: "exit 7", Webhook: srv.URL}).Notify(context.Background(), event)
		if err == nil || !strings.Contains(err.Error(), "notify command: exit status 7") || strings.Contains(err.Error(), "webhook") {
			t.Errorf("got %v, want the command's error only", err)
		}
		if h.requests() != 1 {
			t.Errorf("webhook got %d requests, want 1", h.requests())
		}
	})
	t.Run("webhook fails, command still runs", func(t *testing.T) {
		dir := t.TempDir()
		h := &hook{status: http.StatusBadGateway, response: "upstream down"}
		srv := httptest.NewServer(h)
		defer srv.Close()
		err := (&Notifier{Command: "touch " + dir + "/ran", Webhook: srv.URL}).Notify(context.Background(), event)
		if err == nil || !strings.Contains(err.Error(), `HTTP 502 Bad Gateway: "upstream down"`) || strings.Contains(err.Error(), "command") {
			t.Errorf("got %v, want the webhook's error only", err)
		}
		if _, err := os.Stat(filepath.Join(dir, "ran")); err != nil {
			t.Errorf("the command did not run: %v", err)
		}
	})
	t.Run("both fail", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		err = (&Notifier{Command: "exit 4", Webhook: "http://" + addr}).Notify(context.Background(), event)
		if err == nil || !strings.Contains(err.Error(), "notify command: exit status 4") || !strings.Contains(err.Error(), "\nnotify webhook http://"+addr) {
			t.Errorf("got %v, want both errors, the command's first", err)
		}
	})
}

func TestConfigured(t *testing.T) {
	var none *Notifier
	for _, tc := range []struct {
		n    *Notifier
		want bool
	}{
		{none, false},
		{&Notifier{}, false},
		{&Notifier{Command: "  \n"}, false},
		{&Notifier{Token: "t", Timeout: time.Second}, false},
		{&Notifier{Command: "true"}, true},
		{&Notifier{Webhook: "https://example.org/hook"}, true},
	} {
		if got := tc.n.Configured(); got != tc.want {
			t.Errorf("%+v: Configured() = %v, want %v", tc.n, got, tc.want)
		}
	}
	if err := none.Notify(context.Background(), event); err != nil {
		t.Errorf("nil notifier: %v", err)
	}
	if err := (&Notifier{}).Notify(context.Background(), event); err != nil {
		t.Errorf("empty notifier: %v", err)
	}
}

func TestCanceledBeforeStart(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := (&Notifier{Command: "touch " + dir + "/ran"}).Notify(ctx, event)
	if err == nil || !strings.Contains(err.Error(), "notify command: not run: context canceled") {
		t.Errorf("got %v, want the command not run", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the command ran after the context ended")
	}
}
