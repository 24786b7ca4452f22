package corpus

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Call is one LLM call as recorded: what was asked, of which model, and
// what came back or went wrong (seed 001 §4.6 retrieval_llm_calls, and
// llm_calls for every other call: DESIGN.md principle 4).
type Call struct {
	// TaskID is the task run the call served; "" (NULL) for a call
	// outside one. A retrieval call requires it.
	TaskID string
	Type   string // call_type: "task_analysis", "scope_judgment", "plan", "review", ...
	Role   string // coding, reasoning, supervisor, summarizer
	Stage  string // the pipeline stage the call serves; "" is NULL
	// Provider and Model say which server and model answered.
	Provider string
	Model    string
	System   string // the system prompt; "" is NULL
	Prompt   string
	Response string
	// PromptTokens and CompletionTokens are recorded only for a call that
	// succeeded; a failed call's are NULL.
	PromptTokens     int
	CompletionTokens int
	Latency          time.Duration
	// Err is why the call failed; nil when it succeeded.
	Err error
}

// tokens returns the token columns of c: NULL for a failed call.
func (c *Call) tokens() (prompt, completion any) {
	if c.Err != nil {
		return nil, nil
	}
	return c.PromptTokens, c.CompletionTokens
}

// AddCall appends a call outside retrieval and enrichment to llm_calls
// and returns its row id. It writes even when ctx has been cancelled (see
// outliving), so a cancelled call is recorded with its error.
func (c *Corpus) AddCall(ctx context.Context, call Call) (int64, error) {
	ctx, cancel := outliving(ctx)
	defer cancel()
	pt, ct := call.tokens()
	res, err := c.db.ExecContext(ctx, `INSERT INTO llm_calls
		(task_id, call_type, role, stage, provider, model, system, prompt, response, prompt_tokens, completion_tokens, latency_ms, error, timestamp)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		nullString(call.TaskID), call.Type, call.Role, nullString(call.Stage), call.Provider, call.Model,
		nullString(call.System), call.Prompt, call.Response, pt, ct, call.Latency.Milliseconds(), errString(call.Err), c.timestamp())
	if err != nil {
		return 0, fmt.Errorf("record LLM call: %w", err)
	}
	return res.LastInsertId()
}

// AddRetrievalCall appends a retrieval call (task analysis, a stage's
// judgment) to retrieval_llm_calls, exactly as seed 001 §4.6 has it, and
// what that table has no column for to retrieval_llm_call_details, in one
// transaction; it returns the call's row id. The call must name its task
// run. Like AddCall it outlives ctx.
func (c *Corpus) AddRetrievalCall(ctx context.Context, call Call) (int64, error) {
	ctx, cancel := outliving(ctx)
	defer cancel()
	if call.TaskID == "" {
		return 0, fmt.Errorf("record retrieval LLM call %s: no task id", call.Type)
	}
	pt, ct := call.tokens()
	var id int64
	err := c.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO retrieval_llm_calls
			(task_id, call_type, stage_name, model, prompt, response, prompt_tokens, completion_tokens, latency_ms, timestamp)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			call.TaskID, call.Type, nullString(call.Stage), call.Model, call.Prompt, call.Response, pt, ct,
			call.Latency.Milliseconds(), c.timestamp())
		if err != nil {
			return err
		}
		if id, err = res.LastInsertId(); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO retrieval_llm_call_details (call_id, role, provider, system, error)
			VALUES (?, ?, ?, ?, ?)`, id, call.Role, call.Provider, nullString(call.System), errString(call.Err))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("record retrieval LLM call: %w", err)
	}
	return id, nil
}

// MarkMalformed marks a recorded call, by its row id in the table its
// kind uses (retrieval: retrieval_llm_call_details, else llm_calls), as
// one whose reply could not be used (the caller asked again or fell
// back): its error becomes MalformedPrefix and the problem, so that cra
// doctor and the stage statistics count it as a call that got no usable
// reply. A call that failed already keeps its error. Like AddCall it
// outlives ctx.
func (c *Corpus) MarkMalformed(ctx context.Context, retrieval bool, id int64, problem string) error {
	ctx, cancel := outliving(ctx)
	defer cancel()
	q := `UPDATE llm_calls SET error = ? WHERE id = ? AND error IS NULL`
	if retrieval {
		q = `UPDATE retrieval_llm_call_details SET error = ? WHERE call_id = ? AND error IS NULL`
	}
	if _, err := c.db.ExecContext(ctx, q, MalformedPrefix+problem, id); err != nil {
		return fmt.Errorf("mark LLM call %d malformed: %w", id, err)
	}
	return nil
}

// MalformedPrefix begins the error recorded for a call whose reply was
// malformed, as against one that failed.
const MalformedPrefix = "malformed reply: "

// CallStats counts the LLM calls recorded, of every kind.
type CallStats struct {
	Calls int
	// Failed calls are those with an error: the call failed, or its
	// reply was malformed (MarkMalformed; for enrichment, an invalid
	// output).
	Failed int
}

// CallStats counts the LLM calls in retrieval_llm_calls,
// enrichment_outputs and llm_calls. A raw database from before migration
// 0002 (opened read-only since) lacks the tables and gets the database's
// error.
func (c *Corpus) CallStats(ctx context.Context) (CallStats, error) {
	var s CallStats
	err := c.db.QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM retrieval_llm_calls) + (SELECT COUNT(*) FROM enrichment_outputs) + (SELECT COUNT(*) FROM llm_calls),
		(SELECT COUNT(*) FROM retrieval_llm_call_details WHERE error IS NOT NULL) +
		(SELECT COUNT(*) FROM enrichment_output_details WHERE error IS NOT NULL) + (SELECT COUNT(*) FROM llm_calls WHERE error IS NOT NULL)`).
		Scan(&s.Calls, &s.Failed)
	return s, err
}
