// Package enrich describes each indexed file with the reasoning model
// (seed 001 §4.4, §4.6): its purpose, module, domain, concepts, public API
// surface and complexity notes, as a validated JSON object stored with the
// raw prompt and response in the raw database's enrichment_outputs.
// Promote copies the newest valid output of each file into the curated
// file_metadata, which retrieval's Scope Tier 4 reads; retrieval works
// without it.
//
// A run is resumable: a file whose current content already has a valid
// output from the same model is skipped. A malformed reply is recorded
// with its error and counted, not fatal; a failed call (the server down,
// the model missing) stops the run, because every other file would fail
// the same way.
package enrich

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/llm"
)

// Stage is the stage name enrichment calls resolve their model with, so
// that [models.overrides] enrichment = "…" routes them (seed 001 §3.1:
// enrichment is a reasoning stage).
const Stage = "enrichment"

// Defaults of the Enricher's bounds.
const (
	DefaultConcurrency    = 1 // a local Ollama serves one request at a time unless OLLAMA_NUM_PARALLEL says otherwise
	DefaultFormatRetries  = 1
	DefaultHeadLines      = 200
	DefaultMaxReplyTokens = 1024
)

// Statuses of a file in a run.
const (
	StatusEnriched  = "enriched"
	StatusSkipped   = "skipped"   // a valid output of its current content exists
	StatusMalformed = "malformed" // no valid reply within the format retries
	StatusEmpty     = "empty"     // nothing to describe
	StatusChanged   = "changed"   // the file on disk is not what was indexed
	StatusFailed    = "failed"    // the call failed; the run stops
)

// ErrNoWindow is returned when the reasoning model's context window is
// unknown: prompts are bounded by it (seed 001 §3.3).
var ErrNoWindow = errors.New("no context window for the reasoning model: set models.reasoning_context_window or budget.context_window in .clean_room/config.toml (cra init --reasoning-context-window N)")

// Enricher enriches the files of indexed repositories.
type Enricher struct {
	kb     *kb.KnowledgeBase
	raw    *corpus.Corpus
	client llm.Client
	model  llm.ModelConfig
	rec    *llm.Recorder

	// Concurrency is how many files are enriched at once.
	Concurrency int
	// FormatRetries is how many times a malformed reply is answered with
	// the error and a request for the JSON object alone.
	FormatRetries int
	// HeadLines is how many lines of the file's start the prompt shows at
	// most; the context window may allow fewer.
	HeadLines int
	// MaxReplyTokens caps each reply and is kept free in the window.
	MaxReplyTokens int
	// Progress, when set, is called after each file.
	Progress func(Progress)
}

// New returns an Enricher reading the index through k, calling client
// (which completes against model) and recording into the raw database
// through raw.
func New(k *kb.KnowledgeBase, raw *corpus.Corpus, client llm.Client, model llm.ModelConfig) *Enricher {
	return &Enricher{
		kb: k, raw: raw, client: client, model: model, rec: llm.NewRecorder(raw),
		Concurrency: DefaultConcurrency, FormatRetries: DefaultFormatRetries,
		HeadLines: DefaultHeadLines, MaxReplyTokens: DefaultMaxReplyTokens,
	}
}

// Progress reports one finished file.
type Progress struct {
	Done, Total int
	Path        string
	Status      string
}

// FileResult is what happened to one file.
type FileResult struct {
	Path   string `json:"path"`
	Status string `json:"status"`
	Calls  int    `json:"calls,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Result sums up a run.
type Result struct {
	Model     string `json:"model"`
	Files     int    `json:"files"`
	Enriched  int    `json:"enriched"`
	Skipped   int    `json:"skipped"`
	Malformed int    `json:"malformed"`
	Empty     int    `json:"empty"`
	Changed   int    `json:"changed"`
	// Calls counts the LLM calls made; MalformedReplies those whose reply
	// was not a valid object (a file may have several).
	Calls            int           `json:"calls"`
	MalformedReplies int           `json:"malformed_replies"`
	PromptTokens     int           `json:"prompt_tokens"`
	CompletionTokens int           `json:"completion_tokens"`
	Duration         time.Duration `json:"duration_ns"`
	// Problems lists the malformed, changed and failed files.
	Problems []FileResult `json:"problems"`
}

func (r *Result) add(f FileResult, call *callStats) {
	switch f.Status {
	case StatusEnriched:
		r.Enriched++
	case StatusSkipped:
		r.Skipped++
	case StatusMalformed:
		r.Malformed++
	case StatusEmpty:
		r.Empty++
	case StatusChanged:
		r.Changed++
	}
	if f.Status == StatusMalformed || f.Status == StatusChanged || f.Status == StatusFailed {
		r.Problems = append(r.Problems, f)
	}
	if call != nil {
		r.Calls += call.calls
		r.MalformedReplies += call.malformed
		r.PromptTokens += call.promptTokens
		r.CompletionTokens += call.completionTokens
	}
}

type callStats struct{ calls, malformed, promptTokens, completionTokens int }

// Run enriches the files of repo. It returns the result so far with the
// error of a call that failed, which stops the run.
func (e *Enricher) Run(ctx context.Context, repo kb.Repo) (*Result, error) {
	start := time.Now()
	res := &Result{Model: e.model.Model, Problems: []FileResult{}}
	if e.model.ContextWindow <= 0 {
		return res, ErrNoWindow
	}
	files, err := e.kb.Files(ctx, repo.ID, "")
	if err != nil {
		return res, err
	}
	res.Files = len(files)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		done     int
		firstErr error
	)
	finish := func(f FileResult, stats *callStats, err error) {
		mu.Lock()
		defer mu.Unlock()
		res.add(f, stats)
		done++
		if err != nil && firstErr == nil {
			firstErr = err
			cancel()
		}
		if e.Progress != nil {
			e.Progress(Progress{Done: done, Total: len(files), Path: f.Path, Status: f.Status})
		}
	}
	work := make(chan kb.File)
	var wg sync.WaitGroup
	for range max(e.Concurrency, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range work {
				fr, stats, err := e.file(ctx, repo, f)
				finish(fr, stats, err)
			}
		}()
	}
feed:
	for _, f := range files {
		select {
		case work <- f:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	res.Duration = time.Since(start)
	if firstErr != nil {
		return res, firstErr
	}
	return res, ctx.Err()
}

// file enriches one file.
func (e *Enricher) file(ctx context.Context, repo kb.Repo, f kb.File) (FileResult, *callStats, error) {
	fr := FileResult{Path: f.Path}
	if f.SizeBytes == 0 {
		fr.Status = StatusEmpty
		return fr, nil, nil
	}
	done, err := e.hasValidOutput(ctx, f)
	if err != nil {
		fr.Status, fr.Error = StatusFailed, err.Error()
		return fr, nil, err
	}
	if done {
		fr.Status = StatusSkipped
		return fr, nil, nil
	}
	data, err := os.ReadFile(filepath.Join(repo.Path, filepath.FromSlash(f.Path)))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		fr.Status, fr.Error = StatusFailed, err.Error()
		return fr, nil, fmt.Errorf("read %s: %w", f.Path, err)
	}
	sum := sha256.Sum256(data)
	if err != nil || hex.EncodeToString(sum[:]) != f.ContentHash {
		fr.Status, fr.Error = StatusChanged, "changed since the last index: run 'cra index' first"
		return fr, nil, nil
	}
	symbols, err := e.kb.SymbolsForFile(ctx, f.ID, "")
	if err != nil {
		fr.Status, fr.Error = StatusFailed, err.Error()
		return fr, nil, err
	}
	docs, err := e.kb.DocstringsForFile(ctx, f.ID)
	if err != nil {
		fr.Status, fr.Error = StatusFailed, err.Error()
		return fr, nil, err
	}
	req := llm.Request{
		System:    SystemPrompt,
		Messages:  []llm.Message{{Role: "user", Content: e.prompt(f, symbols, docs, data)}},
		MaxTokens: e.MaxReplyTokens,
		JSON:      true,
	}
	stats := &callStats{}
	out := llm.EnrichmentOutput{FileID: f.ID, Path: f.Path, ContentHash: f.ContentHash}
	for attempt := 0; ; attempt++ {
		resp, callErr := e.client.Complete(ctx, req)
		stats.calls++
		stats.promptTokens += resp.PromptTokens
		stats.completionTokens += resp.CompletionTokens
		var meta Metadata
		out.Err = nil
		if callErr == nil {
			meta, out.Err = ParseReply(resp.Text)
			if out.Err == nil {
				out.Purpose, out.Module, out.Domain = meta.Purpose, meta.Module, meta.Domain
				out.Concepts, out.PublicAPISurface, out.ComplexityNotes = meta.Concepts, meta.PublicAPISurface, meta.ComplexityNotes
			}
		}
		call := llm.Call{CallInfo: llm.CallInfo{Type: llm.CallEnrichment, Role: e.model.Role, Stage: Stage},
			Model: e.model, Request: req, Response: resp, Err: callErr}
		// Recorded even when the run is being cancelled (Recorder's rule).
		_, recErr := e.rec.RecordEnrichment(ctx, call, out)
		switch {
		case recErr != nil:
			fr.Status, fr.Error = StatusFailed, recErr.Error()
			return fr, stats, fmt.Errorf("%w: %v", llm.ErrNotRecorded, recErr)
		case callErr != nil:
			fr.Status, fr.Error = StatusFailed, callErr.Error()
			return fr, stats, fmt.Errorf("enrich %s: %w", f.Path, callErr)
		case out.Err == nil:
			fr.Status, fr.Calls = StatusEnriched, stats.calls
			return fr, stats, nil
		}
		stats.malformed++
		if attempt >= e.FormatRetries {
			fr.Status, fr.Calls, fr.Error = StatusMalformed, stats.calls, out.Err.Error()
			return fr, stats, nil
		}
		req.Messages = append(req.Messages,
			llm.Message{Role: "assistant", Content: resp.Text},
			llm.Message{Role: "user", Content: formatRetryPrompt(out.Err)})
	}
}

// hasValidOutput reports whether the file's current content already has
// a valid output from this model.
func (e *Enricher) hasValidOutput(ctx context.Context, f kb.File) (bool, error) {
	ok, err := e.raw.HasValidEnrichment(ctx, f.Path, f.ContentHash, e.model.Model)
	if err != nil {
		return false, fmt.Errorf("read enrichment outputs: %w", err)
	}
	return ok, nil
}
