package llm

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/llm/llmtest"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
	"github.com/cra-dev/cra/internal/store/storetest"
)

func openRaw(t *testing.T) *sql.DB {
	t.Helper()
	db, err := store.NewFactory(statedir.At(t.TempDir())).Open(context.Background(), store.Raw, "", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

var fixedNow = func() time.Time { return time.Date(2024, 3, 5, 12, 0, 0, 0, time.UTC) }

// row is a recorded call as stored, NULLs as "<nil>".
type row = storetest.Row

func queryRows(t *testing.T, db *sql.DB, q string) []row { return storetest.Rows(t, db, q) }

// gatewayFor returns a gateway over the fake server with the given config
// text, recording into db, with fast retries.
func gatewayFor(t *testing.T, s *llmtest.Server, db *sql.DB, maxRetries int) *Gateway {
	t.Helper()
	cfg := parseConfig(t, `[models]
coding = "coder:3b"
reasoning = "thinker:4b"
base_url = "`+s.OllamaURL()+`"
reasoning_context_window = 8192
coding_context_window = 4096
max_retries = `+strconv.Itoa(maxRetries)+`

[models.supervisor]
provider = "openai"
model = "cloud/big"
base_url = "`+s.OpenAIURL()+`"
`)
	c := corpus.New(db)
	c.Now = fixedNow
	rec := NewRecorder(c)
	g := NewGateway(NewRouter(cfg, nil), rec)
	g.NewClient = func(m ModelConfig) (Client, error) {
		c, err := New(m)
		switch c := c.(type) {
		case *Ollama:
			c.Retry.BaseDelay, c.Retry.MaxDelay = time.Millisecond, time.Millisecond
		case *OpenAI:
			c.Retry.BaseDelay, c.Retry.MaxDelay = time.Millisecond, time.Millisecond
		}
		return c, err
	}
	return g
}

// TestGatewayRecordsEveryCall makes calls of each kind through the
// gateway, successful and failed, and reads every field back.
func TestGatewayRecordsEveryCall(t *testing.T) {
	ctx := context.Background()
	s := llmtest.NewServer(t)
	db := openRaw(t)
	g := gatewayFor(t, s, db, 0)

	// A plan call that succeeds.
	s.Enqueue(llmtest.Reply{Text: "1. do it", PromptTokens: 11, CompletionTokens: 3})
	c, m, err := g.Client(ctx, CallInfo{TaskID: "task-1", Type: "plan", Role: RoleReasoning, Stage: "execute_plan"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Model != "thinker:4b" {
		t.Fatalf("resolved %s, want thinker:4b", m.Model)
	}
	if _, err := c.Complete(ctx, UserPrompt("You plan.", "Add a flag")); err != nil {
		t.Fatal(err)
	}
	// A solve call that fails: a 500 with no retries left.
	s.Enqueue(llmtest.Status(500, "out of memory"))
	c, _, err = g.Client(ctx, CallInfo{TaskID: "task-1", Type: "solve", Role: RoleCoding, Stage: "execute_code"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(ctx, Request{Messages: []Message{{Role: "user", Content: "a"}, {Role: "assistant", Content: "b"}, {Role: "user", Content: "c"}}}); err == nil {
		t.Fatal("got no error from a 500")
	}
	// A supervisor call without a task, on the OpenAI-compatible endpoint.
	s.Enqueue(llmtest.Reply{Text: "looks fine", PromptTokens: 5, CompletionTokens: 2})
	c, _, err = g.Client(ctx, CallInfo{Type: "review", Role: RoleSupervisor})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(ctx, UserPrompt("", "Review this")); err != nil {
		t.Fatal(err)
	}

	got := queryRows(t, db, `SELECT task_id, call_type, role, stage, provider, model, system, prompt, response,
		prompt_tokens, completion_tokens, latency_ms >= 0 AS latency_ok, error, timestamp FROM llm_calls ORDER BY id`)
	want := []row{
		{"task_id": "task-1", "call_type": "plan", "role": "reasoning", "stage": "execute_plan", "provider": "ollama", "model": "thinker:4b",
			"system": "You plan.", "prompt": "Add a flag", "response": "1. do it", "prompt_tokens": int64(11), "completion_tokens": int64(3),
			"latency_ok": int64(1), "error": nil, "timestamp": "2024-03-05T12:00:00.000Z"},
		{"task_id": "task-1", "call_type": "solve", "role": "coding", "stage": "execute_code", "provider": "ollama", "model": "coder:3b",
			"system": nil, "prompt": `[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]`,
			"response": "", "prompt_tokens": nil, "completion_tokens": nil, "latency_ok": int64(1),
			"error": "coding model coder:3b at " + s.OllamaURL() + " (ollama): HTTP 500: out of memory (run 'cra doctor')", "timestamp": "2024-03-05T12:00:00.000Z"},
		{"task_id": nil, "call_type": "review", "role": "supervisor", "stage": nil, "provider": "openai", "model": "cloud/big",
			"system": nil, "prompt": "Review this", "response": "looks fine", "prompt_tokens": int64(5), "completion_tokens": int64(2),
			"latency_ok": int64(1), "error": nil, "timestamp": "2024-03-05T12:00:00.000Z"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("llm_calls (-want +got):\n%s", diff)
	}
	if n := len(s.ChatRequests()); n != len(want) {
		t.Errorf("server saw %d calls, %d recorded", n, len(want))
	}
}

func TestRecordRetrievalCalls(t *testing.T) {
	ctx := context.Background()
	s := llmtest.NewServer(t)
	db := openRaw(t)
	g := gatewayFor(t, s, db, 1)
	s.Enqueue(llmtest.Reply{Text: `{"keywords": ["flag"]}`, PromptTokens: 20, CompletionTokens: 6})
	s.Enqueue(llmtest.Drop(), llmtest.Drop())
	for i, info := range []CallInfo{
		{Kind: KindRetrieval, TaskID: "t-9", Type: CallTaskAnalysis, Role: RoleReasoning},
		{Kind: KindRetrieval, TaskID: "t-9", Type: "scope_judgment", Role: RoleReasoning, Stage: "scope"},
	} {
		c, _, err := g.Client(ctx, info)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Complete(ctx, UserPrompt("sys", "prompt"))
		if (err != nil) != (i == 1) {
			t.Fatalf("call %d: got error %v", i, err)
		}
	}
	got := queryRows(t, db, `SELECT c.task_id, c.call_type, c.stage_name, c.model, c.prompt, c.response, c.prompt_tokens, c.completion_tokens,
		c.timestamp, d.role, d.provider, d.system, d.error IS NOT NULL AS failed
		FROM retrieval_llm_calls c JOIN retrieval_llm_call_details d ON d.call_id = c.id ORDER BY c.id`)
	want := []row{
		{"task_id": "t-9", "call_type": "task_analysis", "stage_name": nil, "model": "thinker:4b", "prompt": "prompt", "response": `{"keywords": ["flag"]}`,
			"prompt_tokens": int64(20), "completion_tokens": int64(6), "timestamp": "2024-03-05T12:00:00.000Z", "role": "reasoning", "provider": "ollama",
			"system": "sys", "failed": int64(0)},
		{"task_id": "t-9", "call_type": "scope_judgment", "stage_name": "scope", "model": "thinker:4b", "prompt": "prompt", "response": "",
			"prompt_tokens": nil, "completion_tokens": nil, "timestamp": "2024-03-05T12:00:00.000Z", "role": "reasoning", "provider": "ollama",
			"system": "sys", "failed": int64(1)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("retrieval_llm_calls (-want +got):\n%s", diff)
	}
	if n, _ := countRows(db, "llm_calls"); n != 0 {
		t.Errorf("llm_calls has %d rows, want retrieval calls only in their own table", n)
	}
	if _, err := NewRecorder(corpus.New(db)).Record(ctx, Call{CallInfo: CallInfo{Kind: KindRetrieval, Type: "scope_judgment", Role: RoleReasoning}}); err == nil {
		t.Error("retrieval call without a task id: got no error")
	}
}

func countRows(db *sql.DB, table string) (int, error) {
	var n int
	err := db.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n)
	return n, err
}

// TestRecordCancelledCall: a call cancelled by the user is still written.
func TestRecordCancelledCall(t *testing.T) {
	s := llmtest.NewServer(t)
	db := openRaw(t)
	g := gatewayFor(t, s, db, 0)
	s.Enqueue(llmtest.Slow(10*time.Second, "late"))
	ctx, cancel := context.WithCancel(context.Background())
	c, _, err := g.Client(ctx, CallInfo{Type: "plan", Role: RoleReasoning})
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := c.Complete(ctx, UserPrompt("", "x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	var errText string
	if err := db.QueryRow("SELECT error FROM llm_calls").Scan(&errText); err != nil || !strings.Contains(errText, "context canceled") {
		t.Errorf("got %q, %v, want the cancelled call recorded with its error", errText, err)
	}
}

// TestRecordWriteFailure: a reply that cannot be recorded is an error,
// never a silent drop.
func TestRecordWriteFailure(t *testing.T) {
	ctx := context.Background()
	s := llmtest.NewServer(t)
	db := openRaw(t)
	g := gatewayFor(t, s, db, 0)
	s.SetDefault(llmtest.Text("the reply"))
	c, _, err := g.Client(ctx, CallInfo{Type: "plan", Role: RoleReasoning})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("DROP TABLE llm_calls"); err != nil {
		t.Fatal(err)
	}
	resp, err := c.Complete(ctx, UserPrompt("", "x"))
	if !errors.Is(err, ErrNotRecorded) {
		t.Errorf("got %v, want ErrNotRecorded", err)
	}
	if resp.Text != "the reply" {
		t.Errorf("got %q, want the reply returned with the error", resp.Text)
	}
	// A failed call that cannot be recorded reports both errors.
	s.SetDefault(llmtest.Status(400, "bad"))
	_, err = c.Complete(ctx, UserPrompt("", "x"))
	var se *StatusError
	if !errors.Is(err, ErrNotRecorded) || !errors.As(err, &se) {
		t.Errorf("got %v, want the call's error and ErrNotRecorded", err)
	}
}

func TestRecordEnrichment(t *testing.T) {
	ctx := context.Background()
	db := openRaw(t)
	c := corpus.New(db)
	c.Now = fixedNow
	rec := NewRecorder(c)
	m := ModelConfig{Role: RoleReasoning, Provider: ProviderOllama, Model: "thinker:4b"}
	req := UserPrompt("describe", "app/db.py ...")
	valid := Call{CallInfo: CallInfo{Type: CallEnrichment, Role: RoleReasoning}, Model: m, Request: req,
		Response: Response{Text: `{"purpose": "db"}`, PromptTokens: 100, CompletionTokens: 20, Latency: 1500 * time.Millisecond}}
	if _, err := rec.RecordEnrichment(ctx, valid, EnrichmentOutput{FileID: 2, Path: "app/db.py", ContentHash: "h1",
		Purpose: "db", Module: "app", Domain: "storage", Concepts: []string{"sql"}, ComplexityNotes: ""}); err != nil {
		t.Fatal(err)
	}
	malformed := valid
	malformed.Response.Text = "I think this file is about databases."
	if _, err := rec.RecordEnrichment(ctx, malformed, EnrichmentOutput{FileID: 2, Path: "app/db.py", ContentHash: "h1", Err: ErrNoJSON}); err != nil {
		t.Fatal(err)
	}
	failed := valid
	failed.Response, failed.Err = Response{Latency: time.Second}, errors.New("connection refused")
	if _, err := rec.RecordEnrichment(ctx, failed, EnrichmentOutput{FileID: 3, Path: "app/api.py", ContentHash: "h2"}); err != nil {
		t.Fatal(err)
	}
	got := queryRows(t, db, `SELECT o.file_id, o.model, o.purpose, o.module, o.domain, o.concepts, o.public_api_surface, o.complexity_notes,
		o.raw_prompt, o.raw_response, o.promoted, o.timestamp, d.path, d.content_hash, d.provider, d.system, d.prompt_tokens,
		d.completion_tokens, d.latency_ms, d.error
		FROM enrichment_outputs o JOIN enrichment_output_details d ON d.output_id = o.id ORDER BY o.id`)
	want := []row{
		{"file_id": int64(2), "model": "thinker:4b", "purpose": "db", "module": "app", "domain": "storage", "concepts": `["sql"]`,
			"public_api_surface": "[]", "complexity_notes": "", "raw_prompt": "app/db.py ...", "raw_response": `{"purpose": "db"}`,
			"promoted": int64(0), "timestamp": "2024-03-05T12:00:00.000Z", "path": "app/db.py", "content_hash": "h1", "provider": "ollama",
			"system": "describe", "prompt_tokens": int64(100), "completion_tokens": int64(20), "latency_ms": int64(1500), "error": nil},
		{"file_id": int64(2), "model": "thinker:4b", "purpose": nil, "module": nil, "domain": nil, "concepts": nil,
			"public_api_surface": nil, "complexity_notes": nil, "raw_prompt": "app/db.py ...", "raw_response": "I think this file is about databases.",
			"promoted": int64(0), "timestamp": "2024-03-05T12:00:00.000Z", "path": "app/db.py", "content_hash": "h1", "provider": "ollama",
			"system": "describe", "prompt_tokens": int64(100), "completion_tokens": int64(20), "latency_ms": int64(1500), "error": ErrNoJSON.Error()},
		{"file_id": int64(3), "model": "thinker:4b", "purpose": nil, "module": nil, "domain": nil, "concepts": nil,
			"public_api_surface": nil, "complexity_notes": nil, "raw_prompt": "app/db.py ...", "raw_response": "",
			"promoted": int64(0), "timestamp": "2024-03-05T12:00:00.000Z", "path": "app/api.py", "content_hash": "h2", "provider": "ollama",
			"system": "describe", "prompt_tokens": nil, "completion_tokens": nil, "latency_ms": int64(1000), "error": "connection refused"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("enrichment_outputs (-want +got):\n%s", diff)
	}
}

func TestPromptText(t *testing.T) {
	if got := PromptText(UserPrompt("sys", "just this")); got != "just this" {
		t.Errorf("one user message: got %q", got)
	}
	if got := PromptText(Request{}); got != "[]" {
		t.Errorf("no messages: got %q, want []", got)
	}
	if got := PromptText(Request{Messages: []Message{{Role: "assistant", Content: "x\"y"}}}); got != `[{"role":"assistant","content":"x\"y"}]` {
		t.Errorf("an assistant message: got %q", got)
	}
}

// TestRecorderOutlivesCancellation: the recorder writes with a context
// that was cancelled before the write, for both kinds of record (enrich
// relies on it and passes its run's context as is).
func TestRecorderOutlivesCancellation(t *testing.T) {
	db := openRaw(t)
	rec := NewRecorder(corpus.New(db))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m := ModelConfig{Model: "coder:3b", Role: RoleCoding}
	if _, err := rec.Record(ctx, Call{CallInfo: CallInfo{Type: "plan", Role: RoleReasoning}, Model: m, Request: UserPrompt("", "x")}); err != nil {
		t.Fatalf("Record with a cancelled context: %v", err)
	}
	call := Call{CallInfo: CallInfo{Type: CallEnrichment, Role: RoleReasoning}, Model: m, Request: UserPrompt("", "y")}
	if _, err := rec.RecordEnrichment(ctx, call, EnrichmentOutput{FileID: 1, Path: "a.py", ContentHash: "h"}); err != nil {
		t.Fatalf("RecordEnrichment with a cancelled context: %v", err)
	}
	for _, table := range []string{"llm_calls", "enrichment_outputs"} {
		if n, err := countRows(db, table); err != nil || n != 1 {
			t.Errorf("%s: got %d rows, %v; want 1", table, n, err)
		}
	}
}

// fixedLatency is a client that reports the latency it is given.
type fixedLatency time.Duration

func (f fixedLatency) Complete(ctx context.Context, req Request) (Response, error) {
	if f == 0 {
		time.Sleep(2 * time.Millisecond)
	}
	return Response{Text: "ok", Latency: time.Duration(f)}, nil
}

// TestRecordedLatency: a client's own latency is recorded as is; a client
// that reports none gets the wall time of the call.
func TestRecordedLatency(t *testing.T) {
	db := openRaw(t)
	rec := NewRecorder(corpus.New(db))
	m := ModelConfig{Model: "coder:3b", Role: RoleCoding}
	for _, c := range []Client{fixedLatency(1500 * time.Millisecond), fixedLatency(0)} {
		if _, err := rec.Wrap(c, m, CallInfo{Type: "solve"}).Complete(context.Background(), UserPrompt("", "x")); err != nil {
			t.Fatal(err)
		}
	}
	got := queryRows(t, db, `SELECT latency_ms FROM llm_calls ORDER BY id`)
	if len(got) != 2 || got[0]["latency_ms"] != int64(1500) || got[1]["latency_ms"].(int64) < 2 {
		t.Errorf("got %v, want 1500 then the measured >= 2 ms", got)
	}
}

// TestMarkMalformed: a reply the caller could not use marks the client's
// latest call, in its own table, and only that call; a client the gateway
// did not wrap is left alone.
func TestMarkMalformed(t *testing.T) {
	ctx := context.Background()
	s := llmtest.NewServer(t)
	db := openRaw(t)
	g := gatewayFor(t, s, db, 0)
	problem := errors.New("no JSON object")
	for _, info := range []CallInfo{
		{Kind: KindRetrieval, TaskID: "t-1", Type: "scope_judgment", Role: RoleReasoning, Stage: "scope"},
		{Type: "review", Role: RoleSummarizer},
	} {
		c, _, err := g.Client(ctx, info)
		if err != nil {
			t.Fatal(err)
		}
		if err := MarkMalformed(ctx, c, problem); err != nil {
			t.Fatalf("%s before any call: %v", info.Type, err)
		}
		s.Enqueue(llmtest.Reply{Text: "fine"}, llmtest.Reply{Text: "prose"})
		for range 2 {
			if _, err := c.Complete(ctx, UserPrompt("", "judge")); err != nil {
				t.Fatal(err)
			}
		}
		if err := MarkMalformed(ctx, c, problem); err != nil {
			t.Fatal(err)
		}
	}
	got := queryRows(t, db, `SELECT c.response, d.error FROM retrieval_llm_calls c JOIN retrieval_llm_call_details d ON d.call_id = c.id
		UNION ALL SELECT response, error FROM llm_calls`)
	want := []row{
		{"response": "fine", "error": nil}, {"response": "prose", "error": "malformed reply: no JSON object"},
		{"response": "fine", "error": nil}, {"response": "prose", "error": "malformed reply: no JSON object"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if err := MarkMalformed(ctx, &Ollama{}, problem); err != nil {
		t.Errorf("an unrecorded client: %v", err)
	}
}
