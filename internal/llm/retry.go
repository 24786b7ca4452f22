package llm

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RetryPolicy bounds the transport retries of a call (seed 001 §15):
// connection errors, timeouts, 429 and 5xx are retried with exponential
// backoff and jitter, honouring Retry-After; other 4xx, malformed replies
// and cancellation are not.
type RetryPolicy struct {
	// MaxRetries is how many times a failed attempt is repeated.
	MaxRetries int
	// Timeout bounds each attempt; 0 means none.
	Timeout time.Duration
	// BaseDelay is the wait before the first retry; each retry doubles it
	// up to MaxDelay. The wait is drawn from [d/2, d] so that clients do
	// not retry in lockstep.
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// MaxRetryAfter is the longest Retry-After honoured; a server asking
	// for a longer wait fails the call at once.
	MaxRetryAfter time.Duration
}

// Defaults of RetryPolicy's delays.
const (
	DefaultBaseDelay     = 500 * time.Millisecond
	DefaultMaxDelay      = 30 * time.Second
	DefaultMaxRetryAfter = 2 * time.Minute
)

// policyFor returns the retry policy of a resolved model.
func policyFor(m ModelConfig) RetryPolicy {
	return RetryPolicy{
		MaxRetries:    m.MaxRetries,
		Timeout:       m.Timeout,
		BaseDelay:     DefaultBaseDelay,
		MaxDelay:      DefaultMaxDelay,
		MaxRetryAfter: DefaultMaxRetryAfter,
	}
}

// backoff returns the wait before retry number n (1-based).
func (p RetryPolicy) backoff(n int) time.Duration {
	d := p.BaseDelay
	for i := 1; i < n && d < p.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, p.MaxDelay)
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1)
}

// StatusError is an error reply of a model server.
type StatusError struct {
	StatusCode int
	Message    string
	// RetryAfter is the wait the server asked for (Retry-After); 0 if none.
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	}
	return fmt.Sprintf("HTTP %d: %s", e.StatusCode, e.Message)
}

// retryable reports whether the status is worth another attempt.
func (e *StatusError) retryable() bool {
	return e.StatusCode == http.StatusTooManyRequests || e.StatusCode == http.StatusRequestTimeout || e.StatusCode >= 500
}

// CallError is the error of a call that failed: the model, how many
// attempts it took and the last attempt's error. It matches
// ErrUnavailable when the failure was in transport.
type CallError struct {
	Model    ModelConfig
	Attempts int
	// Unavailable is set when the server could not be reached, timed out
	// or kept failing with 429 or 5xx, or the API key was missing.
	Unavailable bool
	Err         error
}

func (e *CallError) Error() string {
	var b strings.Builder
	b.WriteString(e.Model.String())
	b.WriteString(": ")
	if e.Unavailable && e.Attempts > 1 {
		fmt.Fprintf(&b, "failed after %d attempts: ", e.Attempts)
	}
	b.WriteString(e.Err.Error())
	if hint := e.hint(); hint != "" {
		b.WriteString(" (" + hint + ")")
	}
	return b.String()
}

// hint is what the user can do about the error (STYLE.md: an error a user
// can meet says what to do next).
func (e *CallError) hint() string {
	var se *StatusError
	switch {
	case errors.Is(e.Err, context.Canceled), errors.Is(e.Err, ErrNoContextWindow):
		return ""
	case errors.Is(e.Err, errNoAPIKey):
		return "export " + e.Model.APIKeyEnv + "=<your key>"
	case errors.As(e.Err, &se) && se.StatusCode == http.StatusNotFound && e.Model.Provider == ProviderOllama:
		return fmt.Sprintf("is the model pulled? run 'ollama pull %s', or 'cra doctor'", e.Model.Model)
	case errors.As(e.Err, &se) && se.StatusCode == http.StatusNotFound:
		return "check the model name and that base_url ends in /v1; run 'cra doctor'"
	case errors.As(e.Err, &se) && (se.StatusCode == http.StatusUnauthorized || se.StatusCode == http.StatusForbidden):
		if e.Model.APIKeyEnv == "" {
			return "the server wants an API key: set api_key_env in .clean_room/config.toml"
		}
		return "check the API key in $" + e.Model.APIKeyEnv
	case e.Unavailable:
		return "run 'cra doctor'"
	}
	return ""
}

// Unwrap returns the last attempt's error.
func (e *CallError) Unwrap() error { return e.Err }

// Is makes a transport failure match ErrUnavailable.
func (e *CallError) Is(target error) bool { return target == ErrUnavailable && e.Unavailable }

// errNoAPIKey is wrapped when the variable named by api_key_env is unset.
var errNoAPIKey = errors.New("API key not set")

// apiKey reads the key of m from its environment variable. The key is
// returned, never logged or stored.
func apiKey(m ModelConfig) (string, error) {
	if m.APIKeyEnv == "" {
		return "", nil
	}
	key := strings.TrimSpace(os.Getenv(m.APIKeyEnv))
	if key == "" {
		return "", fmt.Errorf("%w: environment variable %s (api_key_env) is empty", errNoAPIKey, m.APIKeyEnv)
	}
	return key, nil
}

// protocolError is a reply that is not what the protocol says: broken
// JSON, no choices, a stream without its final message. Retrying does not
// fix a server that answers like this.
type protocolError struct{ err error }

func (e *protocolError) Error() string {
	msg := e.err.Error()
	if len(msg) > 300 {
		msg = excerpt(msg, 300)
	}
	return "malformed reply: " + msg
}
func (e *protocolError) Unwrap() error { return e.err }

// DefaultMaxReplyBytes bounds one reply when models.max_reply_bytes is
// unset: a small model's longest useful answer is a few tens of KiB, and a
// runaway one must not fill memory or the raw database.
const DefaultMaxReplyBytes = 1 << 20

// ErrReplyTooLarge matches (errors.Is) a call whose reply passed the
// reply bound: it was cut and is not used. Callers count it as a
// malformed reply, not as a failed server.
var ErrReplyTooLarge = errors.New("reply too large")

// exchange is what the server did with one attempt, seen from the HTTP
// transport: the client libraries do not expose status codes and headers
// uniformly, and never the Retry-After of an error reply.
type exchange struct {
	mu      sync.Mutex
	sent    bool // the request reached the transport
	status  int  // 0 when no response arrived
	header  http.Header
	bodyErr error // a read error other than EOF while reading the body
	// limit bounds the body's bytes (0: none); tooLarge says the body
	// passed it and was cut, head is its first bytes.
	limit    int64
	read     int64
	tooLarge bool
	head     []byte
}

func (x *exchange) snapshot() (sent bool, status int, header http.Header, bodyErr error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.sent, x.status, x.header, x.bodyErr
}

// recordingTransport fills an exchange and adds the API key.
type recordingTransport struct {
	base   http.RoundTripper
	ex     *exchange
	apiKey string // sent as a bearer token when set and the request has none
}

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.apiKey != "" && req.Header.Get("Authorization") == "" {
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+t.apiKey)
	}
	t.ex.mu.Lock()
	t.ex.sent = true
	t.ex.mu.Unlock()
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	t.ex.mu.Lock()
	t.ex.status, t.ex.header = resp.StatusCode, resp.Header
	t.ex.mu.Unlock()
	resp.Body = &watchedBody{ReadCloser: resp.Body, ex: t.ex}
	return resp, nil
}

// watchedBody records a body read that fails other than at its end: the
// connection broke in the middle of a reply.
type watchedBody struct {
	io.ReadCloser
	ex *exchange
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.ex.limit > 0 && n > 0 {
		b.ex.mu.Lock()
		if keep := min(int64(n), 512-int64(len(b.ex.head))); keep > 0 {
			b.ex.head = append(b.ex.head, p[:keep]...)
		}
		b.ex.read += int64(n)
		over := b.ex.read > b.ex.limit
		if over {
			b.ex.tooLarge = true
		}
		b.ex.mu.Unlock()
		if over {
			return 0, ErrReplyTooLarge // the rest is never read
		}
	}
	if err != nil && err != io.EOF {
		b.ex.mu.Lock()
		if b.ex.bodyErr == nil {
			b.ex.bodyErr = err
		}
		b.ex.mu.Unlock()
	}
	return n, err
}

// engine runs the attempts of calls to one model.
type engine struct {
	model     ModelConfig
	policy    RetryPolicy
	transport http.RoundTripper
	logger    *slog.Logger
	apiKey    string
	// message extracts the server's error message from a client library's
	// error for a status reply.
	message func(error) string
}

// attemptFunc makes one request with the given HTTP client.
type attemptFunc func(ctx context.Context, hc *http.Client) (Response, error)

// maxTimeouts is how many attempts may time out before a call gives up,
// whatever its retries: a stalled or too-slow server would otherwise hold
// the user for (retries+1) × timeout.
const maxTimeouts = 2

// run makes attempts until one succeeds, the error is not retryable, the
// retries are spent or ctx ends.
func (e *engine) run(ctx context.Context, attempt attemptFunc) (Response, error) {
	start := time.Now()
	base := e.transport
	if base == nil {
		base = http.DefaultTransport
	}
	timeouts := 0
	for n := 1; ; n++ {
		ex := &exchange{limit: e.model.MaxReplyBytes}
		if ex.limit <= 0 {
			ex.limit = DefaultMaxReplyBytes
		}
		hc := &http.Client{Transport: &recordingTransport{base: base, ex: ex, apiKey: e.apiKey}}
		actx, cancel := ctx, context.CancelFunc(func() {})
		if e.policy.Timeout > 0 {
			actx, cancel = context.WithTimeout(ctx, e.policy.Timeout)
		}
		resp, err := attempt(actx, hc)
		timedOut := errors.Is(actx.Err(), context.DeadlineExceeded)
		cancel()
		if err == nil {
			resp.Latency, resp.Attempts = time.Since(start), n
			return resp, nil
		}
		if ctx.Err() != nil {
			return Response{Latency: time.Since(start), Attempts: n}, &CallError{Model: e.model, Attempts: n, Err: ctx.Err()}
		}
		err, retry, wait := e.classify(err, ex, timedOut)
		fail := func(err error) (Response, error) {
			return Response{Latency: time.Since(start), Attempts: n}, &CallError{Model: e.model, Attempts: n, Unavailable: retry, Err: err}
		}
		if timedOut {
			timeouts++
		}
		if !retry || n > e.policy.MaxRetries {
			return fail(err)
		}
		if timeouts >= maxTimeouts {
			// A model too slow for the prompt stays too slow: more tries
			// of the same length only multiply the wait.
			return fail(fmt.Errorf("%w, %d times: raise models.timeout in .clean_room/config.toml for this machine, or use a smaller model or a smaller prompt", err, timeouts))
		}
		if wait > e.policy.MaxRetryAfter {
			return fail(fmt.Errorf("%w; the server asks to retry after %s, longer than cra waits", err, wait))
		}
		wait = max(wait, e.policy.backoff(n))
		if e.logger != nil {
			// Warn: a user waiting on a silent terminal needs to know.
			e.logger.Warn("LLM call failed, retrying", "model", e.model.Model, "url", e.model.BaseURL,
				"attempt", n, "of", e.policy.MaxRetries+1, "wait", wait, "err", err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return Response{Latency: time.Since(start), Attempts: n}, &CallError{Model: e.model, Attempts: n, Err: ctx.Err()}
		case <-t.C:
		}
	}
}

// classify turns an attempt's error into the error to report, whether to
// retry, and the wait the server asked for.
func (e *engine) classify(err error, ex *exchange, timedOut bool) (error, bool, time.Duration) {
	sent, status, header, bodyErr := ex.snapshot()
	ex.mu.Lock()
	tooLarge, limit, head := ex.tooLarge || errors.Is(err, bufio.ErrTooLong), ex.limit, string(ex.head)
	ex.mu.Unlock()
	if tooLarge && !timedOut && status < 400 {
		// Not retried: the same prompt makes the same runaway reply.
		return fmt.Errorf("%w: it passed %d bytes (models.max_reply_bytes) and was cut unread; it began %q", ErrReplyTooLarge, limit, head), false, 0
	}
	var pe *protocolError
	switch {
	case timedOut:
		return fmt.Errorf("no reply within %s (models.timeout)", e.policy.Timeout), true, 0
	case status >= 400:
		se := &StatusError{StatusCode: status, Message: e.message(err), RetryAfter: retryAfter(header)}
		return se, se.retryable(), se.RetryAfter
	case errors.As(err, &pe):
		return err, false, 0
	case !sent:
		// The request never left: a bad URL or a request the library
		// refused. Nothing a retry changes.
		return err, false, 0
	case status == 0 || bodyErr != nil:
		return fmt.Errorf("connection failed: %w", err), true, 0
	}
	// A 2xx reply the library could not decode.
	return &protocolError{err: err}, false, 0
}

// maxRetryAfterSeconds keeps an absurd Retry-After from overflowing a
// Duration; anything this long fails the call anyway.
const maxRetryAfterSeconds = 365 * 24 * 3600

// retryAfter parses Retry-After (seconds or an HTTP date) and the
// retry-after-ms header some OpenAI-compatible servers send.
func retryAfter(h http.Header) time.Duration {
	if h == nil {
		return 0
	}
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
		return time.Duration(min(ms/1000, maxRetryAfterSeconds) * float64(time.Second))
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if !(s > 0) {
			return 0
		}
		return time.Duration(min(s, maxRetryAfterSeconds) * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}
