package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cra-dev/cra/internal/corpus"
)

// Kind says which raw table a call is recorded in.
type Kind string

// The kinds of recorded calls. Enrichment calls are recorded with
// RecordEnrichment, because their row carries the parsed result.
const (
	KindGeneral   Kind = ""          // llm_calls: plan, solve, reviewer, supervisors, cleanup, training
	KindRetrieval Kind = "retrieval" // retrieval_llm_calls (seed 001 §4.6): task analysis and stage judgments
)

// Call types cra records. Retrieval stages use "<stage>_judgment".
const (
	CallTaskAnalysis = "task_analysis"
	CallEnrichment   = "enrichment"
)

// CallInfo says what a call is for; it is recorded with the call.
type CallInfo struct {
	Kind   Kind
	TaskID string // the task run; required for retrieval calls
	Type   string // call_type: "task_analysis", "scope_judgment", "plan", "review", ...
	Role   Role
	Stage  string // the pipeline stage the call serves, if any
}

// Call is one finished call: what was asked, of which model, and what came
// back or went wrong.
type Call struct {
	CallInfo
	Model    ModelConfig
	Request  Request
	Response Response
	Err      error // nil when the call succeeded
}

// ErrNotRecorded is returned, with the response, when a call succeeded
// but could not be written to the raw database: the caller must not use a
// reply the training corpus lacks (DESIGN.md principle 4).
var ErrNotRecorded = errors.New("LLM call not recorded in the raw database")

// Recorder writes calls to the raw database (seed 001 §4.6 and migration
// raw/0002) through its corpus. It is safe for concurrent use.
type Recorder struct {
	corpus *corpus.Corpus
}

// NewRecorder returns a recorder writing to the raw database of c.
func NewRecorder(c *corpus.Corpus) *Recorder { return &Recorder{corpus: c} }

// Record writes a retrieval or general call and returns its row id, also
// when ctx has been cancelled: the corpus outlives it for a while, so a
// call cancelled by the user is recorded with its error.
func (r *Recorder) Record(ctx context.Context, c Call) (int64, error) {
	if c.Type == "" || c.Role == "" {
		return 0, fmt.Errorf("record LLM call: call type and role are required")
	}
	row := corpus.Call{
		TaskID: c.TaskID, Type: c.Type, Role: string(c.Role), Stage: c.Stage,
		Provider: string(c.Model.Provider), Model: c.Model.Model, System: c.Request.System,
		Prompt: PromptText(c.Request), Response: c.Response.Text,
		PromptTokens: c.Response.PromptTokens, CompletionTokens: c.Response.CompletionTokens,
		Latency: c.Response.Latency, Err: c.Err,
	}
	switch c.Kind {
	case KindRetrieval:
		return r.corpus.AddRetrievalCall(ctx, row)
	case KindGeneral:
		return r.corpus.AddCall(ctx, row)
	}
	return 0, fmt.Errorf("record LLM call: unknown kind %q", c.Kind)
}

// EnrichmentOutput is what an enrichment call produced for one file
// (seed 001 §4.6 enrichment_outputs): the file, the content described, and
// the parsed fields, or why the reply is not a valid output.
type EnrichmentOutput struct {
	FileID           int64
	Path             string
	ContentHash      string
	Purpose          string
	Module           string
	Domain           string
	Concepts         []string
	PublicAPISurface []string
	ComplexityNotes  string
	// Err is why the reply is not a valid output: malformed JSON or a
	// failed validation. The call's own failure is Call.Err.
	Err error
}

// RecordEnrichment writes an enrichment call and its output to
// enrichment_outputs and its details, and returns the output's id. The
// output is valid when neither the call nor the output has an error; only
// then are the parsed fields stored. Like Record, it outlives ctx.
func (r *Recorder) RecordEnrichment(ctx context.Context, c Call, out EnrichmentOutput) (int64, error) {
	return r.corpus.AddEnrichment(ctx, corpus.Enrichment{
		FileID: out.FileID, Path: out.Path, ContentHash: out.ContentHash,
		Provider: string(c.Model.Provider), Model: c.Model.Model, System: c.Request.System,
		Prompt: PromptText(c.Request), Response: c.Response.Text,
		PromptTokens: c.Response.PromptTokens, CompletionTokens: c.Response.CompletionTokens, Latency: c.Response.Latency,
		Purpose: out.Purpose, Module: out.Module, Domain: out.Domain, Concepts: out.Concepts,
		PublicAPISurface: out.PublicAPISurface, ComplexityNotes: out.ComplexityNotes,
		CallErr: c.Err, Err: out.Err,
	})
}

// MarkMalformed marks the recorded call id of kind as one whose reply
// could not be used (see corpus.MarkMalformed).
func (r *Recorder) MarkMalformed(ctx context.Context, kind Kind, id int64, problem error) error {
	return r.corpus.MarkMalformed(ctx, kind == KindRetrieval, id, problem.Error())
}

// recorded is a Client whose calls are all recorded.
type recorded struct {
	client Client
	rec    *Recorder
	model  ModelConfig
	info   CallInfo

	mu   sync.Mutex
	last int64 // the row id of the latest call recorded
}

// MarkMalformed records that the reply of c's latest call could not be
// used: the reply did not parse, and the caller asks again or falls back.
// The call's row then counts as malformed (cra doctor, the stage
// statistics). c must come from a Gateway or a Recorder's Wrap, and its
// calls must not overlap the one marked; on any other Client it does
// nothing.
func MarkMalformed(ctx context.Context, c Client, problem error) error {
	w, ok := c.(*recorded)
	if !ok {
		return nil
	}
	w.mu.Lock()
	id := w.last
	w.mu.Unlock()
	if id == 0 {
		return nil
	}
	return w.rec.MarkMalformed(ctx, w.info.Kind, id, problem)
}

// Wrap returns a Client that records every call of c, which completes
// against m, as info says. A call that fails is recorded with its error
// and its error is returned; a call that succeeds but cannot be recorded
// returns its response with an error matching ErrNotRecorded.
func (r *Recorder) Wrap(c Client, m ModelConfig, info CallInfo) Client {
	if info.Role == "" {
		info.Role = m.Role
	}
	if info.Stage == "" {
		info.Stage = m.Stage
	}
	return &recorded{client: c, rec: r, model: m, info: info}
}

func (w *recorded) Complete(ctx context.Context, req Request) (Response, error) {
	start := time.Now()
	resp, err := w.client.Complete(ctx, req)
	if resp.Latency == 0 {
		resp.Latency = time.Since(start)
	}
	// Recorded even when ctx has ended (see Record): a failed call too.
	id, rerr := w.rec.Record(ctx, Call{CallInfo: w.info, Model: w.model, Request: req, Response: resp, Err: err})
	w.mu.Lock()
	w.last = id
	w.mu.Unlock()
	if rerr != nil {
		if err != nil {
			return resp, errors.Join(err, fmt.Errorf("%w: %v", ErrNotRecorded, rerr))
		}
		return resp, fmt.Errorf("%w: %v", ErrNotRecorded, rerr)
	}
	return resp, err
}

// Gateway is the one entry point of pipeline code to the models: it
// resolves a call's model, builds the provider client and records every
// call.
type Gateway struct {
	Router   *Router
	Recorder *Recorder
	// NewClient builds the provider client of a resolved model; nil means
	// New. Tests substitute fakes.
	NewClient func(ModelConfig) (Client, error)
	// Logger gets a line per transport retry; nil discards.
	Logger *slog.Logger
}

// NewGateway returns a gateway resolving with router and recording with
// recorder.
func NewGateway(router *Router, recorder *Recorder) *Gateway {
	return &Gateway{Router: router, Recorder: recorder}
}

// Client returns a recorded client for the call info describes, and the
// model it resolved to.
func (g *Gateway) Client(ctx context.Context, info CallInfo) (Client, ModelConfig, error) {
	m, err := g.Router.Resolve(ctx, info.Role, info.Stage)
	if err != nil {
		return nil, ModelConfig{}, err
	}
	newClient := g.NewClient
	if newClient == nil {
		newClient = New
	}
	c, err := newClient(m)
	if err != nil {
		return nil, ModelConfig{}, err
	}
	SetLogger(c, g.Logger)
	return g.Recorder.Wrap(c, m, info), m, nil
}

// SetLogger gives a provider client its diagnostics logger; clients of
// other kinds (test fakes) are left as they are.
func SetLogger(c Client, l *slog.Logger) {
	switch p := c.(type) {
	case *Ollama:
		p.Logger = l
	case *OpenAI:
		p.Logger = l
	}
}
