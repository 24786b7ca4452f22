package llm

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/llm/llmtest"
)

// testModel is a resolved model on the fake server.
func testModel(p Provider, s *llmtest.Server) ModelConfig {
	url := s.OllamaURL()
	if p == ProviderOpenAI {
		url = s.OpenAIURL()
	}
	return ModelConfig{Role: RoleReasoning, Provider: p, Model: "qwen3:4b", BaseURL: url, MaxTokens: 512,
		ContextWindow: 8192, Timeout: 5 * time.Second, MaxRetries: 3, Source: "role"}
}

// newTestClient returns a provider client with retry delays short enough
// for tests.
func newTestClient(t *testing.T, m ModelConfig) Client {
	t.Helper()
	c, err := New(m)
	if err != nil {
		t.Fatal(err)
	}
	fast := func(p *RetryPolicy) {
		p.BaseDelay, p.MaxDelay = time.Millisecond, 5*time.Millisecond
	}
	switch c := c.(type) {
	case *Ollama:
		fast(&c.Retry)
	case *OpenAI:
		fast(&c.Retry)
	}
	return c
}

var providers = []Provider{ProviderOllama, ProviderOpenAI}

func jsonRequest() Request {
	req := UserPrompt("You describe files.", "Describe app/db.py")
	req.JSON = true
	req.Stop = []string{"\n\n\n"}
	return req
}

func TestOllamaRequestBody(t *testing.T) {
	s := llmtest.NewServer(t)
	s.Enqueue(llmtest.Reply{Text: `{"purpose": "db"}`, PromptTokens: 42, CompletionTokens: 7})
	c := newTestClient(t, testModel(ProviderOllama, s))
	resp, err := c.Complete(context.Background(), jsonRequest())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != `{"purpose": "db"}` || resp.PromptTokens != 42 || resp.CompletionTokens != 7 || resp.Attempts != 1 || resp.Latency <= 0 {
		t.Errorf("response: got %+v, want the scripted text, 42+7 tokens, 1 attempt, a latency", resp)
	}
	reqs := s.ChatRequests()
	if len(reqs) != 1 {
		t.Fatalf("got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Path != "/api/chat" || r.Model != "qwen3:4b" || r.Stream || !r.JSON {
		t.Errorf("request: got %s model=%s stream=%v json=%v, want /api/chat qwen3:4b, not streamed, JSON", r.Path, r.Model, r.Stream, r.JSON)
	}
	wantOptions := map[string]any{"num_ctx": 8192.0, "num_predict": 512.0, "temperature": 0.0, "stop": []any{"\n\n\n"}}
	if diff := cmp.Diff(wantOptions, r.Options); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
	wantMsgs := []llmtest.Message{{Role: "system", Content: "You describe files."}, {Role: "user", Content: "Describe app/db.py"}}
	if diff := cmp.Diff(wantMsgs, r.Messages); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

func TestOllamaNumCtx(t *testing.T) {
	s := llmtest.NewServer(t)
	s.SetDefault(llmtest.Text("ok"))
	m := testModel(ProviderOllama, s)
	c := newTestClient(t, m)
	req := UserPrompt("", "hi")
	req.ContextWindow = 16384 // the caller's budgeted window wins
	temp := 0.7
	req.Temperature, req.MaxTokens = &temp, 64
	if _, err := c.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	r := s.ChatRequests()[0]
	if r.NumCtx() != 16384 || r.MaxTokens != 64 || r.Temperature == nil || *r.Temperature != 0.7 || len(r.Messages) != 1 {
		t.Errorf("got num_ctx=%d num_predict=%d temperature=%v messages=%d, want 16384, 64, 0.7, 1 (no system message)",
			r.NumCtx(), r.MaxTokens, r.Temperature, len(r.Messages))
	}

	// No window anywhere: a hard error before any request, since Ollama
	// would silently truncate.
	m.ContextWindow = 0
	c = newTestClient(t, m)
	_, err := c.Complete(context.Background(), UserPrompt("", "hi"))
	if !errors.Is(err, ErrNoContextWindow) || !strings.Contains(err.Error(), "models.reasoning_context_window") {
		t.Errorf("got %v, want ErrNoContextWindow naming the config key", err)
	}
	if n := len(s.ChatRequests()); n != 1 {
		t.Errorf("got %d requests, want no new one", n)
	}
}

func TestOpenAIRequestBody(t *testing.T) {
	s := llmtest.NewServer(t)
	s.Enqueue(llmtest.Reply{Text: "fine", PromptTokens: 30, CompletionTokens: 2})
	t.Setenv("CRA_TEST_KEY", "sk-test-secret")
	m := testModel(ProviderOpenAI, s)
	m.APIKeyEnv = "CRA_TEST_KEY"
	c := newTestClient(t, m)
	resp, err := c.Complete(context.Background(), jsonRequest())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "fine" || resp.PromptTokens != 30 || resp.CompletionTokens != 2 {
		t.Errorf("response: got %+v, want fine with 30+2 tokens", resp)
	}
	r := s.ChatRequests()[0]
	if r.Path != "/v1/chat/completions" || r.Model != "qwen3:4b" || r.Stream || !r.JSON || r.MaxTokens != 512 {
		t.Errorf("request: got %s model=%s stream=%v json=%v max_tokens=%d", r.Path, r.Model, r.Stream, r.JSON, r.MaxTokens)
	}
	// A zero temperature is sent (go-openai would omit it, and the
	// server's default is 1).
	if r.Temperature == nil || *r.Temperature > 1e-6 {
		t.Errorf("temperature: got %v, want present and 0 in effect", r.Temperature)
	}
	if diff := cmp.Diff([]string{"\n\n\n"}, r.Stop); diff != "" {
		t.Errorf("stop (-want +got):\n%s", diff)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer sk-test-secret" {
		t.Errorf("Authorization: got %q, want the key from $CRA_TEST_KEY", got)
	}
	wantMsgs := []llmtest.Message{{Role: "system", Content: "You describe files."}, {Role: "user", Content: "Describe app/db.py"}}
	if diff := cmp.Diff(wantMsgs, r.Messages); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

func TestOpenAIWithoutKey(t *testing.T) {
	s := llmtest.NewServer(t)
	s.SetDefault(llmtest.Text("ok"))
	c := newTestClient(t, testModel(ProviderOpenAI, s))
	temp := 0.5
	req := UserPrompt("", "hi")
	req.Temperature = &temp
	if _, err := c.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	r := s.ChatRequests()[0]
	if got := r.Header.Get("Authorization"); got != "" {
		t.Errorf("Authorization: got %q, want none (local servers need no key)", got)
	}
	if r.Temperature == nil || math.Abs(*r.Temperature-0.5) > 1e-6 || r.JSON {
		t.Errorf("got temperature %v json %v, want 0.5 and no JSON mode", r.Temperature, r.JSON)
	}

	// api_key_env names an unset variable: unavailable, no request, and
	// the error names the variable.
	m := testModel(ProviderOpenAI, s)
	m.APIKeyEnv = "CRA_TEST_UNSET_KEY"
	t.Setenv("CRA_TEST_UNSET_KEY", "")
	c = newTestClient(t, m)
	_, err := c.Complete(context.Background(), req)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "CRA_TEST_UNSET_KEY") {
		t.Errorf("got %v, want ErrUnavailable naming the variable", err)
	}
	if n := len(s.ChatRequests()); n != 1 {
		t.Errorf("got %d requests, want no new one", n)
	}
}

func TestOllamaAPIKey(t *testing.T) {
	s := llmtest.NewServer(t)
	s.SetDefault(llmtest.Text("ok"))
	t.Setenv("CRA_TEST_PROXY_KEY", "proxy-secret")
	m := testModel(ProviderOllama, s)
	m.APIKeyEnv = "CRA_TEST_PROXY_KEY"
	if _, err := newTestClient(t, m).Complete(context.Background(), UserPrompt("", "hi")); err != nil {
		t.Fatal(err)
	}
	if got := s.ChatRequests()[0].Header.Get("Authorization"); got != "Bearer proxy-secret" {
		t.Errorf("Authorization: got %q, want the key behind an authenticating proxy", got)
	}
}

// TestRetries runs the transport faults against both providers.
func TestRetries(t *testing.T) {
	tests := []struct {
		name         string
		replies      []llmtest.Reply
		maxRetries   int
		timeout      time.Duration
		wantRequests int
		wantText     string
		wantErr      string // "" for success
		unavailable  bool
		minElapsed   time.Duration
	}{
		{name: "500 then success", replies: []llmtest.Reply{llmtest.Status(500, "boom"), llmtest.Text("ok")}, maxRetries: 3, wantRequests: 2, wantText: "ok"},
		{name: "502 503 then success", replies: []llmtest.Reply{llmtest.Status(502, ""), llmtest.Status(503, "loading"), llmtest.Text("ok")}, maxRetries: 3, wantRequests: 3, wantText: "ok"},
		{name: "429 honours Retry-After", replies: []llmtest.Reply{llmtest.RateLimited("0.3"), llmtest.Text("ok")}, maxRetries: 3, wantRequests: 2, wantText: "ok", minElapsed: 300 * time.Millisecond},
		{name: "dropped connection", replies: []llmtest.Reply{llmtest.Drop(), llmtest.Text("ok")}, maxRetries: 3, wantRequests: 2, wantText: "ok"},
		{name: "no retry on 400", replies: []llmtest.Reply{llmtest.Status(400, "bad request: unknown field")}, maxRetries: 3, wantRequests: 1, wantErr: "HTTP 400: bad request: unknown field"},
		{name: "no retry on 401", replies: []llmtest.Reply{llmtest.Status(401, "no key")}, maxRetries: 3, wantRequests: 1, wantErr: "HTTP 401"},
		{name: "retries are bounded", replies: []llmtest.Reply{llmtest.Status(500, "down"), llmtest.Status(500, "down"), llmtest.Status(500, "down")}, maxRetries: 2, wantRequests: 3, wantErr: "failed after 3 attempts: HTTP 500: down", unavailable: true},
		{name: "timeout is retried", replies: []llmtest.Reply{llmtest.Slow(2*time.Second, "late"), llmtest.Text("ok")}, maxRetries: 1, timeout: 200 * time.Millisecond, wantRequests: 2, wantText: "ok"},
		{name: "timeouts are bounded", replies: []llmtest.Reply{llmtest.Slow(2*time.Second, "late"), llmtest.Slow(2*time.Second, "late")}, maxRetries: 1, timeout: 100 * time.Millisecond, wantRequests: 2, wantErr: "no reply within 100ms (models.timeout)", unavailable: true},
		{name: "two timeouts end the call", replies: []llmtest.Reply{llmtest.Slow(2*time.Second, "late"), llmtest.Slow(2*time.Second, "late"), llmtest.Text("ok")}, maxRetries: 3, timeout: 100 * time.Millisecond, wantRequests: 2, wantErr: "no reply within 100ms (models.timeout), 2 times: raise models.timeout", unavailable: true},
		{name: "malformed JSON is not retried", replies: []llmtest.Reply{llmtest.Malformed(), llmtest.Text("ok")}, maxRetries: 3, wantRequests: 1, wantErr: "malformed reply"},
		{name: "Retry-After beyond the limit", replies: []llmtest.Reply{llmtest.RateLimited("86400"), llmtest.Text("ok")}, maxRetries: 3, wantRequests: 1, wantErr: "retry after 24h0m0s", unavailable: true},
	}
	for _, p := range providers {
		for _, tc := range tests {
			t.Run(string(p)+"/"+tc.name, func(t *testing.T) {
				s := llmtest.NewServer(t)
				s.Enqueue(tc.replies...)
				m := testModel(p, s)
				m.MaxRetries = tc.maxRetries
				if tc.timeout > 0 {
					m.Timeout = tc.timeout
				}
				start := time.Now()
				resp, err := newTestClient(t, m).Complete(context.Background(), UserPrompt("", "hi"))
				elapsed := time.Since(start)
				if n := len(s.ChatRequests()); n != tc.wantRequests {
					t.Errorf("got %d requests, want %d", n, tc.wantRequests)
				}
				if resp.Attempts != tc.wantRequests {
					t.Errorf("attempts: got %d, want %d", resp.Attempts, tc.wantRequests)
				}
				if tc.wantErr == "" {
					if err != nil || resp.Text != tc.wantText {
						t.Fatalf("got %q, %v, want %q", resp.Text, err, tc.wantText)
					}
				} else if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				if err != nil && errors.Is(err, ErrUnavailable) != tc.unavailable {
					t.Errorf("errors.Is(err, ErrUnavailable): got %v, want %v (%v)", !tc.unavailable, tc.unavailable, err)
				}
				if elapsed < tc.minElapsed {
					t.Errorf("took %s, want at least %s", elapsed, tc.minElapsed)
				}
			})
		}
	}
}

func TestStatusErrorHints(t *testing.T) {
	for _, tc := range []struct {
		p    Provider
		want string
	}{
		{ProviderOllama, `HTTP 404: model "qwen3:4b" not found, try pulling it first (is the model pulled? run 'ollama pull qwen3:4b'`},
		{ProviderOpenAI, "ends in /v1"},
	} {
		t.Run(string(tc.p), func(t *testing.T) {
			s := llmtest.NewServer(t)
			s.Enqueue(llmtest.Status(http.StatusNotFound, `model "qwen3:4b" not found, try pulling it first`))
			_, err := newTestClient(t, testModel(tc.p, s)).Complete(context.Background(), UserPrompt("", "hi"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want it to contain %q", err, tc.want)
			}
			var ce *CallError
			if !errors.As(err, &ce) || ce.Model.Model != "qwen3:4b" {
				t.Errorf("got %T, want a *CallError naming the model", err)
			}
		})
	}
}

func TestCancellation(t *testing.T) {
	for _, p := range providers {
		t.Run(string(p)+"/during a slow reply", func(t *testing.T) {
			s := llmtest.NewServer(t)
			s.Enqueue(llmtest.Slow(10*time.Second, "late"))
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			start := time.Now()
			_, err := newTestClient(t, testModel(p, s)).Complete(ctx, UserPrompt("", "hi"))
			if !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnavailable) {
				t.Errorf("got %v, want context.Canceled and not unavailable", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %s, want an immediate stop", d)
			}
			if n := len(s.ChatRequests()); n != 1 {
				t.Errorf("got %d requests, want 1 (no retry after cancellation)", n)
			}
		})
		t.Run(string(p)+"/during backoff", func(t *testing.T) {
			s := llmtest.NewServer(t)
			s.SetDefault(llmtest.Status(503, "busy"))
			c := newTestClient(t, testModel(p, s))
			switch c := c.(type) {
			case *Ollama:
				c.Retry.BaseDelay, c.Retry.MaxDelay = time.Minute, time.Minute
			case *OpenAI:
				c.Retry.BaseDelay, c.Retry.MaxDelay = time.Minute, time.Minute
			}
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			start := time.Now()
			_, err := c.Complete(ctx, UserPrompt("", "hi"))
			if !errors.Is(err, context.Canceled) {
				t.Errorf("got %v, want context.Canceled", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %s, want an immediate stop", d)
			}
		})
	}
}

func TestUnreachable(t *testing.T) {
	for _, p := range providers {
		t.Run(string(p), func(t *testing.T) {
			s := llmtest.NewServer(t)
			m := testModel(p, s)
			s.Close()
			m.MaxRetries = 2
			resp, err := newTestClient(t, m).Complete(context.Background(), UserPrompt("", "hi"))
			if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "connection failed") || !strings.Contains(err.Error(), "cra doctor") {
				t.Errorf("got %v, want ErrUnavailable saying the connection failed and naming cra doctor", err)
			}
			if resp.Attempts != 3 {
				t.Errorf("attempts: got %d, want 3", resp.Attempts)
			}
			// A person reads it: no JSON fragments (issue 19).
			if strings.ContainsAny(err.Error(), "{}") {
				t.Errorf("the message holds JSON: %v", err)
			}
		})
	}
}

func TestListModels(t *testing.T) {
	for _, p := range providers {
		t.Run(string(p), func(t *testing.T) {
			s := llmtest.NewServer(t)
			s.SetModels("qwen3:4b", "llama3:latest")
			names, err := ListModels(context.Background(), testModel(p, s))
			if err != nil {
				t.Fatal(err)
			}
			if !HasModel(names, "qwen3:4b") || !HasModel(names, "llama3") || HasModel(names, "qwen2.5-coder:3b") {
				t.Errorf("got %v: want qwen3:4b and llama3 (as llama3:latest) present, qwen2.5-coder:3b absent", names)
			}
			want := "/api/tags"
			if p == ProviderOpenAI {
				want = "/v1/models"
			}
			if reqs := s.Requests(); len(reqs) != 1 || reqs[0].Path != want {
				t.Errorf("got requests %v, want one to %s", reqs, want)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		header http.Header
		want   time.Duration
	}{
		{http.Header{"Retry-After": {"3"}}, 3 * time.Second},
		{http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond},
		{http.Header{"Retry-After-Ms": {"250"}}, 250 * time.Millisecond},
		{http.Header{"Retry-After": {"-1"}}, 0},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{"Retry-After": {"1e300"}}, maxRetryAfterSeconds * time.Second},
		{http.Header{"Retry-After": {time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)}}, 0},
		{nil, 0},
	}
	for _, tc := range tests {
		if got := retryAfter(tc.header); got != tc.want {
			t.Errorf("retryAfter(%v): got %s, want %s", tc.header, got, tc.want)
		}
	}
	future := http.Header{"Retry-After": {time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)}}
	if got := retryAfter(future); got < 59*time.Minute || got > time.Hour {
		t.Errorf("retryAfter(an HTTP date an hour ahead): got %s", got)
	}
}

func TestBackoff(t *testing.T) {
	p := RetryPolicy{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	for n, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 400 * time.Millisecond, 5: time.Second, 60: time.Second} {
		for range 20 {
			if got := p.backoff(n); got < want/2 || got > want {
				t.Fatalf("backoff(%d): got %s, want within [%s, %s]", n, got, want/2, want)
			}
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, m := range []ModelConfig{
		{Provider: "anthropic", Model: "m", BaseURL: "http://h"},
		{Provider: ProviderOllama, BaseURL: "http://h"},
		{Provider: ProviderOpenAI, Model: "m", BaseURL: "localhost:8000"},
	} {
		if _, err := New(m); err == nil {
			t.Errorf("New(%+v): got no error", m)
		}
	}
}

// TestRetryIsWarned: a user on a terminal sees each retry, at the warning
// level the CLI shows, with the model, its server and the attempt count.
func TestRetryIsWarned(t *testing.T) {
	for _, p := range providers {
		t.Run(string(p), func(t *testing.T) {
			s := llmtest.NewServer(t)
			s.Enqueue(llmtest.Status(500, "boom"), llmtest.Text("ok"))
			m := testModel(p, s)
			c := newTestClient(t, m)
			var buf bytes.Buffer
			SetLogger(c, slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})))
			if _, err := c.Complete(context.Background(), UserPrompt("", "hi")); err != nil {
				t.Fatal(err)
			}
			got := buf.String()
			for _, want := range []string{"level=WARN", `msg="LLM call failed, retrying"`, "url=" + m.BaseURL, "attempt=1 of=4", "HTTP 500: boom"} {
				if !strings.Contains(got, want) {
					t.Errorf("log %q lacks %q", got, want)
				}
			}
		})
	}
}
