package corpus

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Enrichment is one enrichment call and the output it produced for one
// file (seed 001 §4.6 enrichment_outputs, with enrichment_output_details
// beside it): the file, the content described, the call, and the parsed
// fields, or why the reply is not a valid output.
type Enrichment struct {
	FileID int64
	// Path and ContentHash say which content was described, so that a
	// re-run skips files whose current content has a valid output.
	Path        string
	ContentHash string
	// Provider, Model, System, Prompt and Response are the call's, as in
	// Call; the tokens are recorded only when the call succeeded.
	Provider         string
	Model            string
	System           string
	Prompt           string
	Response         string
	PromptTokens     int
	CompletionTokens int
	Latency          time.Duration
	// The parsed fields, stored only for a valid output; the lists as
	// JSON arrays.
	Purpose          string
	Module           string
	Domain           string
	Concepts         []string
	PublicAPISurface []string
	ComplexityNotes  string
	// CallErr is why the call failed; Err is why its reply is not a valid
	// output (malformed JSON, a failed validation). An output is valid
	// when both are nil.
	CallErr error
	Err     error
}

// AddEnrichment appends an enrichment call and its output to
// enrichment_outputs and enrichment_output_details, in one transaction,
// and returns the output's id. Like AddCall it outlives ctx.
func (c *Corpus) AddEnrichment(ctx context.Context, e Enrichment) (int64, error) {
	ctx, cancel := outliving(ctx)
	defer cancel()
	errText := errString(errors.Join(e.CallErr, e.Err))
	var purpose, module, domain, concepts, api, notes, pt, ct any
	if errText == nil {
		purpose, module, domain, notes = e.Purpose, e.Module, e.Domain, e.ComplexityNotes
		concepts, api = jsonArray(e.Concepts), jsonArray(e.PublicAPISurface)
	}
	if e.CallErr == nil {
		pt, ct = e.PromptTokens, e.CompletionTokens
	}
	var id int64
	err := c.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO enrichment_outputs
			(file_id, model, purpose, module, domain, concepts, public_api_surface, complexity_notes, raw_prompt, raw_response, promoted, timestamp)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)`,
			e.FileID, e.Model, purpose, module, domain, concepts, api, notes, e.Prompt, e.Response, c.timestamp())
		if err != nil {
			return err
		}
		if id, err = res.LastInsertId(); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO enrichment_output_details
			(output_id, path, content_hash, provider, system, prompt_tokens, completion_tokens, latency_ms, error)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			id, e.Path, e.ContentHash, e.Provider, nullString(e.System), pt, ct, e.Latency.Milliseconds(), errText)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("record enrichment of %s: %w", e.Path, err)
	}
	return id, nil
}

// jsonArray encodes a list as a JSON array; no list is [].
func jsonArray(l []string) string {
	if l == nil {
		l = []string{}
	}
	data, _ := json.Marshal(l) // strings only: cannot fail
	return string(data)
}

// HasValidEnrichment reports whether the content hash of the file at path
// already has a valid output from model: 'cra enrich' skips such files,
// which makes a run resumable.
func (c *Corpus) HasValidEnrichment(ctx context.Context, path, contentHash, model string) (bool, error) {
	var ok bool
	err := c.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM enrichment_outputs o
		JOIN enrichment_output_details d ON d.output_id = o.id
		WHERE d.path = ? AND d.content_hash = ? AND o.model = ? AND d.error IS NULL)`,
		path, contentHash, model).Scan(&ok)
	return ok, err
}

// Description is the parsed fields of a valid enrichment output as
// stored: a NULL column is an invalid NullString, Concepts and
// PublicAPISurface are JSON arrays.
type Description struct {
	// OutputID is the enrichment_outputs row.
	OutputID         int64
	Purpose          sql.NullString
	Module           sql.NullString
	Domain           sql.NullString
	Concepts         sql.NullString
	PublicAPISurface sql.NullString
	ComplexityNotes  sql.NullString
}

// NewestEnrichment returns the newest valid output, of any model, of the
// content hash of the file at path, and false when it has none (never
// enriched, changed since, or only malformed replies). Promotion copies it
// into the curated file_metadata (seed 001 §4.4).
func (c *Corpus) NewestEnrichment(ctx context.Context, path, contentHash string) (Description, bool, error) {
	var d Description
	err := c.db.QueryRowContext(ctx, `SELECT o.id, o.purpose, o.module, o.domain, o.concepts, o.public_api_surface, o.complexity_notes
		FROM enrichment_outputs o JOIN enrichment_output_details d ON d.output_id = o.id
		WHERE d.path = ? AND d.content_hash = ? AND d.error IS NULL ORDER BY o.id DESC LIMIT 1`, path, contentHash).
		Scan(&d.OutputID, &d.Purpose, &d.Module, &d.Domain, &d.Concepts, &d.PublicAPISurface, &d.ComplexityNotes)
	if errors.Is(err, sql.ErrNoRows) {
		return Description{}, false, nil
	}
	if err != nil {
		return Description{}, false, err
	}
	return d, true, nil
}

// MarkPromoted flags the enrichment outputs ids as promoted, in one
// transaction.
func (c *Corpus) MarkPromoted(ctx context.Context, ids []int64) error {
	err := c.inTx(ctx, func(tx *sql.Tx) error {
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, `UPDATE enrichment_outputs SET promoted = 1 WHERE id = ?`, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("mark outputs: %w", err)
	}
	return nil
}
