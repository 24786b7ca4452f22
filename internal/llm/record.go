package llm

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"
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

// timestampFormat is the format of every timestamp column (as store.Now).
const timestampFormat = "2006-01-02T15:04:05.000Z07:00"

// Recorder writes calls to the raw database (seed 001 §4.6 and migration
// raw/0002). It is safe for concurrent use.
type Recorder struct {
	db *sql.DB
	// Now stamps the rows; tests replace it.
	Now func() time.Time
}

// NewRecorder returns a recorder writing to the raw database db.
func NewRecorder(db *sql.DB) *Recorder { return &Recorder{db: db, Now: time.Now} }

func (r *Recorder) timestamp() string { return r.Now().UTC().Format(timestampFormat) }

// Record writes a retrieval or general call and returns its row id, also
// when ctx has been cancelled (see outliving).
func (r *Recorder) Record(ctx context.Context, c Call) (int64, error) {
	ctx, cancel := outliving(ctx)
	defer cancel()
	if c.Type == "" || c.Role == "" {
		return 0, fmt.Errorf("record LLM call: call type and role are required")
	}
	errText := errString(c.Err)
	var pt, ct any
	if c.Err == nil {
		pt, ct = c.Response.PromptTokens, c.Response.CompletionTokens
	}
	switch c.Kind {
	case KindRetrieval:
		if c.TaskID == "" {
			return 0, fmt.Errorf("record retrieval LLM call %s: no task id", c.Type)
		}
		var id int64
		err := r.inTx(ctx, func(tx *sql.Tx) error {
			res, err := tx.ExecContext(ctx, `INSERT INTO retrieval_llm_calls
				(task_id, call_type, stage_name, model, prompt, response, prompt_tokens, completion_tokens, latency_ms, timestamp)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				c.TaskID, c.Type, nullString(c.Stage), c.Model.Model, PromptText(c.Request), c.Response.Text, pt, ct,
				c.Response.Latency.Milliseconds(), r.timestamp())
			if err != nil {
				return err
			}
			if id, err = res.LastInsertId(); err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `INSERT INTO retrieval_llm_call_details (call_id, role, provider, system, error)
				VALUES (?, ?, ?, ?, ?)`, id, string(c.Role), string(c.Model.Provider), nullString(c.Request.System), errText)
			return err
		})
		if err != nil {
			return 0, fmt.Errorf("record retrieval LLM call: %w", err)
		}
		return id, nil
	case KindGeneral:
		res, err := r.db.ExecContext(ctx, `INSERT INTO llm_calls
			(task_id, call_type, role, stage, provider, model, system, prompt, response, prompt_tokens, completion_tokens, latency_ms, error, timestamp)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			nullString(c.TaskID), c.Type, string(c.Role), nullString(c.Stage), string(c.Model.Provider), c.Model.Model,
			nullString(c.Request.System), PromptText(c.Request), c.Response.Text, pt, ct, c.Response.Latency.Milliseconds(), errText, r.timestamp())
		if err != nil {
			return 0, fmt.Errorf("record LLM call: %w", err)
		}
		return res.LastInsertId()
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
// then are the parsed fields stored.
func (r *Recorder) RecordEnrichment(ctx context.Context, c Call, out EnrichmentOutput) (int64, error) {
	ctx, cancel := outliving(ctx)
	defer cancel()
	errText := errString(errors.Join(c.Err, out.Err))
	var purpose, module, domain, concepts, api, notes, pt, ct any
	if errText == nil {
		purpose, module, domain, notes = out.Purpose, out.Module, out.Domain, out.ComplexityNotes
		concepts, api = jsonArray(out.Concepts), jsonArray(out.PublicAPISurface)
	}
	if c.Err == nil {
		pt, ct = c.Response.PromptTokens, c.Response.CompletionTokens
	}
	var id int64
	err := r.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO enrichment_outputs
			(file_id, model, purpose, module, domain, concepts, public_api_surface, complexity_notes, raw_prompt, raw_response, promoted, timestamp)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)`,
			out.FileID, c.Model.Model, purpose, module, domain, concepts, api, notes, PromptText(c.Request), c.Response.Text, r.timestamp())
		if err != nil {
			return err
		}
		if id, err = res.LastInsertId(); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO enrichment_output_details
			(output_id, path, content_hash, provider, system, prompt_tokens, completion_tokens, latency_ms, error)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			id, out.Path, out.ContentHash, string(c.Model.Provider), nullString(c.Request.System), pt, ct,
			c.Response.Latency.Milliseconds(), errText)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("record enrichment of %s: %w", out.Path, err)
	}
	return id, nil
}

func (r *Recorder) inTx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := f(tx); err != nil {
		return err
	}
	return tx.Commit()
}

func errString(err error) any {
	if err == nil {
		return nil
	}
	return err.Error()
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// jsonArray encodes a list as a JSON array; no list is [].
func jsonArray(l []string) string {
	if l == nil {
		l = []string{}
	}
	data, _ := json.Marshal(l) // strings only: cannot fail
	return string(data)
}

// recordTimeout bounds the write of a call whose context has ended.
const recordTimeout = 10 * time.Second

// outliving returns a context for recording: it survives ctx's
// cancellation, for up to recordTimeout, so a call is recorded even when
// the command is being cancelled, a failed call included.
func outliving(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
}

// recorded is a Client whose calls are all recorded.
type recorded struct {
	client Client
	rec    *Recorder
	model  ModelConfig
	info   CallInfo
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
	// Recorded even when ctx has ended (see inTx): a failed call too.
	if _, rerr := w.rec.Record(ctx, Call{CallInfo: w.info, Model: w.model, Request: req, Response: resp, Err: err}); rerr != nil {
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
