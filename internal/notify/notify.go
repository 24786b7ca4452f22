// Package notify tells a person that a task ended verified, is blocked,
// or needs them, so that nobody has to watch the board (vibe-kanban's
// most-requested feature; seed 004 leaves alerts for blocked tasks as a
// future enhancement).
//
// A Notifier has two independent channels, either or both configured
// ([notify] in config.toml): a shell command, which sees the event in
// CRA_TASK_* environment variables, and a webhook, which is POSTed the
// event as JSON. Both run at once, each bounded by the timeout (a command
// that must be killed takes up to a few seconds more); one failing never
// keeps the other from running. The command runs in a
// process group of its own, and nothing it starts outlives it: on
// timeout, on cancel, and when the shell exits, whatever is left of the
// group is sent SIGTERM, then SIGKILL after a short grace, and reaped.
//
// Values travel as data, never as shell text: a title holding quotes,
// newlines or "$(…)" reaches the command verbatim in its environment, and
// the webhook body is exactly the JSON of the Event.
//
// The package depends on the standard library only.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cra-dev/cra/internal/procgroup"
)

// The kinds of Event.Event.
const (
	EventVerified = "verified"  // the task's run passed its checks
	EventBlocked  = "blocked"   // the task stopped for good (failed-blocked, seed 004)
	EventNeedsYou = "needs-you" // the task waits for a person's answer
)

// The values of Event.Status.
const (
	StatusVerified = "verified"
	StatusFailed   = "failed"
)

// Event is what a notification says. Its JSON is the webhook's body.
type Event struct {
	TaskID string `json:"task_id"`
	// Status is the task's outcome: StatusVerified or StatusFailed.
	Status string `json:"status"`
	// Event is why the person is told: EventVerified, EventBlocked or
	// EventNeedsYou.
	Event string `json:"event"`
	Title string `json:"title"`
	// Need says what the task needs from the person, when it needs
	// something.
	Need string `json:"need,omitempty"`
	// Time is when it happened; Notify sets it to now when it is zero.
	Time time.Time `json:"time"`
}

// DefaultTimeout bounds each notifier when Notifier.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// OutputLimit is how much of the command's output, its last bytes, is
// kept for the error of a command that fails.
const OutputLimit = 8 << 10

// killGrace is how long a command's group has after SIGTERM before
// SIGKILL.
const killGrace = 2 * time.Second

// errorLines and errorBodyBytes bound what an error quotes of a failing
// command's output and of a webhook's reply.
const (
	errorLines     = 5
	errorBodyBytes = 200
)

// Notifier sends Events. The zero value sends nothing; set Command,
// Webhook or both. A Notifier is safe for concurrent use if its Client
// is.
type Notifier struct {
	// Command is run by sh -c with the event in the environment:
	// CRA_TASK_ID, CRA_TASK_STATUS, CRA_TASK_TITLE, CRA_TASK_NEED and
	// CRA_TASK_EVENT, besides cra's own environment. Empty means no
	// command.
	Command string
	// Webhook is an http(s) URL POSTed the Event as JSON. Empty means no
	// webhook.
	Webhook string
	// Token, when set, is sent to the webhook as "Authorization: Bearer
	// <Token>". The caller reads it from the variable [notify]
	// webhook_token_env names; it never appears in an error.
	Token string
	// TokenEnv is the variable Token was read from, for the message of a
	// webhook not sent because it was empty; "" when the webhook takes
	// no token.
	TokenEnv string
	// Timeout bounds each notifier, the command and the webhook apart;
	// zero means DefaultTimeout.
	Timeout time.Duration
	// Client posts to the webhook; nil means a client bounded by
	// Timeout. The request is bounded by Timeout either way.
	Client *http.Client
}

// Configured reports whether n has anything to send to.
func (n *Notifier) Configured() bool {
	return n != nil && (strings.TrimSpace(n.Command) != "" || n.Webhook != "")
}

func (n *Notifier) timeout() time.Duration {
	if n.Timeout > 0 {
		return n.Timeout
	}
	return DefaultTimeout
}

// Notify runs the command and posts to the webhook, at once, and waits
// for both. It returns their errors joined, the command's first, each
// naming its notifier and why it failed: the exit status and the end of
// the output, or the HTTP status and the start of the reply. A Notifier
// with nothing configured returns nil.
func (n *Notifier) Notify(ctx context.Context, e Event) error {
	if !n.Configured() {
		return nil
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	var wg sync.WaitGroup
	var cmdErr, hookErr error
	if strings.TrimSpace(n.Command) != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer recoverInto(&cmdErr, "notify command")
			cmdErr = n.runCommand(ctx, e)
		}()
	}
	switch {
	case n.Webhook != "" && n.TokenEnv != "" && n.Token == "":
		// Sent without its token, it would only be refused: say which
		// variable to export instead.
		hookErr = fmt.Errorf("notify webhook: not sent: %s (notify.webhook_token_env) is empty in this process's environment: export it where cra runs ('cra serve' reads it at start), then restart", n.TokenEnv)
	case n.Webhook != "":
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer recoverInto(&hookErr, "notify webhook")
			hookErr = n.post(ctx, e)
		}()
	}
	wg.Wait()
	return errors.Join(cmdErr, hookErr)
}

// recoverInto turns a panic into an error: a notification is never worth
// the daemon that sends it.
func recoverInto(err *error, what string) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%s: internal error: %v", what, r)
	}
}

// Env returns the variables the command sees for e, as KEY=value.
// Values pass unchanged, except NUL bytes, which no environment can hold
// and which are dropped.
func Env(e Event) []string {
	clean := func(s string) string { return strings.ReplaceAll(s, "\x00", "") }
	return []string{
		"CRA_TASK_ID=" + clean(e.TaskID),
		"CRA_TASK_STATUS=" + clean(e.Status),
		"CRA_TASK_TITLE=" + clean(e.Title),
		"CRA_TASK_NEED=" + clean(e.Need),
		"CRA_TASK_EVENT=" + clean(e.Event),
	}
}

// runCommand runs n.Command for e and stops its whole group when it
// ends, times out or ctx ends.
func (n *Notifier) runCommand(ctx context.Context, e Event) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("notify command: not run: %w", context.Cause(ctx))
	}
	timeout := n.timeout()
	parent := ctx
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()

	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("notify command: %w", err)
	}
	cmd := exec.Command("sh", "-c", n.Command)
	// Appended last, the event's variables win over inherited ones of
	// the same name (a daemon started from a task's run has CRA_TASK_ID).
	cmd.Env = append(os.Environ(), Env(e)...)
	cmd.Stdout, cmd.Stderr = w, w // *os.File: the child writes the pipe itself
	procgroup.Own(cmd)
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return fmt.Errorf("notify command: start sh: %w", err)
	}
	out := &tail{limit: OutputLimit}
	copied := make(chan struct{})
	go func() {
		io.Copy(out, r) // ends at EOF, or when r is closed below
		close(copied)
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var waitErr error
	stopped := false
	select {
	case waitErr = <-exited:
	case <-ctx.Done():
		stopped = true
		stopGroup(cmd)
		waitErr = <-exited
	}
	// Whatever the shell left running goes too; a no-op when nothing is
	// left.
	stopGroup(cmd)
	select {
	case <-copied:
	case <-time.After(killGrace):
		// A process that left the group (setsid) still holds the pipe.
	}
	r.Close()
	<-copied

	switch {
	case stopped && parent.Err() == nil:
		return fmt.Errorf("notify command: killed after the %s timeout%s", timeout, out.quote())
	case stopped:
		return fmt.Errorf("notify command: stopped: %w%s", context.Cause(parent), out.quote())
	case waitErr != nil:
		return fmt.Errorf("notify command: %v%s", waitErr, out.quote())
	}
	return nil
}

// post sends e to n.Webhook.
func (n *Notifier) post(ctx context.Context, e Event) error {
	where := describeURL(n.Webhook)
	body, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("notify webhook %s: encode event: %w", where, err)
	}
	timeout := n.timeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.Webhook, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("notify webhook %s: %v", where, unwrapURLError(err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "cra-notify")
	if n.Token != "" {
		req.Header.Set("Authorization", "Bearer "+n.Token)
	}
	client := n.Client
	if client == nil {
		client = &http.Client{Timeout: timeout}
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("notify webhook %s: %v", where, unwrapURLError(err))
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyBytes))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := fmt.Sprintf("notify webhook %s: HTTP %s", where, resp.Status)
		if b := strings.TrimSpace(string(head)); b != "" {
			msg += ": " + strconv.Quote(b)
		}
		return errors.New(msg)
	}
	return nil
}

// describeURL names a webhook in errors by scheme and host only: a
// webhook's path often is its secret (Slack, Discord).
func describeURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(not a URL)"
	}
	s := u.Scheme + "://" + u.Host
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" {
		s += "/…"
	}
	return s
}

// unwrapURLError drops the *url.Error around err, which repeats the URL
// describeURL keeps out of messages.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return fmt.Errorf("%s: %w (timed out)", strings.ToLower(ue.Op), ue.Err)
		}
		return fmt.Errorf("%s: %w", strings.ToLower(ue.Op), ue.Err)
	}
	return err
}

// tail keeps the last limit bytes written to it.
type tail struct {
	mu    sync.Mutex
	limit int
	buf   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.limit; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// quote returns the last errorLines lines of the output for an error
// message, as ", output ends "…"", or ", no output".
func (t *tail) quote() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	text := strings.TrimRight(string(t.buf), "\r\n\t ")
	if text == "" {
		return ", no output"
	}
	lines := strings.Split(text, "\n")
	if len(lines) > errorLines {
		lines = lines[len(lines)-errorLines:]
	}
	text = strings.Join(lines, "\n")
	if len(text) > 2*errorBodyBytes*errorLines {
		text = "…" + text[len(text)-2*errorBodyBytes*errorLines:]
	}
	return ", output ends " + strconv.Quote(strings.ToValidUTF8(text, "�"))
}

// stopGroup ends the command's process group (SIGTERM, then SIGKILL after
// killGrace), and the shell itself where there are no process groups.
func stopGroup(cmd *exec.Cmd) {
	procgroup.Stop(cmd.Process.Pid, killGrace, killGrace)
	cmd.Process.Kill() // harmless once it has exited
}
