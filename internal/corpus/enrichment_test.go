package corpus_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/corpus"
)

func TestAddEnrichment(t *testing.T) {
	ctx := context.Background()
	c, db := openRaw(t)
	valid := corpus.Enrichment{FileID: 2, Path: "app/db.py", ContentHash: "h1", Provider: "ollama", Model: "thinker:4b",
		System: "describe", Prompt: "app/db.py ...", Response: `{"purpose": "db"}`, PromptTokens: 100, CompletionTokens: 20,
		Latency: 1500 * time.Millisecond, Purpose: "db", Module: "app", Domain: "storage", Concepts: []string{"sql"}}
	malformed := valid
	malformed.Response, malformed.Err = "I think this file is about databases.", errors.New("no JSON object")
	failed := valid
	failed.FileID, failed.Path, failed.ContentHash, failed.Response, failed.CallErr = 3, "app/api.py", "h2", "", errDown
	failed.PromptTokens, failed.CompletionTokens, failed.Latency = 0, 0, time.Second
	both := failed
	both.Err = errors.New("empty reply")
	for i, e := range []corpus.Enrichment{valid, malformed, failed, both} {
		if id, err := c.AddEnrichment(ctx, e); err != nil || id != int64(i+1) {
			t.Fatalf("output %d: got id %d, %v", i, id, err)
		}
	}
	got := queryRows(t, db, `SELECT o.file_id, o.model, o.purpose, o.module, o.domain, o.concepts, o.public_api_surface, o.complexity_notes,
		o.raw_prompt, o.raw_response, o.promoted, o.timestamp, d.path, d.content_hash, d.provider, d.system, d.prompt_tokens,
		d.completion_tokens, d.latency_ms, d.error
		FROM enrichment_outputs o JOIN enrichment_output_details d ON d.output_id = o.id ORDER BY o.id`)
	invalid := func(fileID int64, path, hash, response string, pt, ct, ms int64, errText string) row {
		r := row{"file_id": fileID, "model": "thinker:4b", "purpose": nil, "module": nil, "domain": nil, "concepts": nil,
			"public_api_surface": nil, "complexity_notes": nil, "raw_prompt": "app/db.py ...", "raw_response": response,
			"promoted": int64(0), "timestamp": stamp, "path": path, "content_hash": hash, "provider": "ollama",
			"system": "describe", "prompt_tokens": pt, "completion_tokens": ct, "latency_ms": ms, "error": errText}
		if pt == 0 {
			r["prompt_tokens"], r["completion_tokens"] = nil, nil
		}
		return r
	}
	want := []row{
		{"file_id": int64(2), "model": "thinker:4b", "purpose": "db", "module": "app", "domain": "storage", "concepts": `["sql"]`,
			"public_api_surface": "[]", "complexity_notes": "", "raw_prompt": "app/db.py ...", "raw_response": `{"purpose": "db"}`,
			"promoted": int64(0), "timestamp": stamp, "path": "app/db.py", "content_hash": "h1", "provider": "ollama",
			"system": "describe", "prompt_tokens": int64(100), "completion_tokens": int64(20), "latency_ms": int64(1500), "error": nil},
		invalid(2, "app/db.py", "h1", "I think this file is about databases.", 100, 20, 1500, "no JSON object"),
		invalid(3, "app/api.py", "h2", "", 0, 0, 1000, "connection refused"),
		invalid(3, "app/api.py", "h2", "", 0, 0, 1000, "connection refused\nempty reply"),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("enrichment_outputs (-want +got):\n%s", diff)
	}
}

func TestEnrichmentReads(t *testing.T) {
	ctx := context.Background()
	c, db := openRaw(t)
	add := func(path, hash, model, purpose string, err error) int64 {
		t.Helper()
		id, aerr := c.AddEnrichment(ctx, corpus.Enrichment{Path: path, ContentHash: hash, Model: model, Purpose: purpose,
			Concepts: []string{"users"}, Err: err})
		if aerr != nil {
			t.Fatal(aerr)
		}
		return id
	}
	add("a.py", "h1", "old:1b", "Old.", nil)
	newest := add("a.py", "h1", "new:4b", "New.", nil)
	add("a.py", "h1", "new:4b", "", errors.New("no JSON object")) // newer, but not valid
	add("a.py", "h0", "new:4b", "Before the change.", nil)
	add("b.py", "h2", "new:4b", "", errDown)

	for _, tc := range []struct {
		path, hash, model string
		want              bool
	}{
		{"a.py", "h1", "new:4b", true},
		{"a.py", "h1", "old:1b", true},
		{"a.py", "h1", "other:7b", false}, // another model's output does not count
		{"a.py", "h9", "new:4b", false},   // changed since
		{"b.py", "h2", "new:4b", false},   // only a failed call
	} {
		if got, err := c.HasValidEnrichment(ctx, tc.path, tc.hash, tc.model); err != nil || got != tc.want {
			t.Errorf("HasValidEnrichment(%s, %s, %s): got %v, %v, want %v", tc.path, tc.hash, tc.model, got, err, tc.want)
		}
	}

	// The newest valid output of the content, from any model.
	got, ok, err := c.NewestEnrichment(ctx, "a.py", "h1")
	want := corpus.Description{OutputID: newest, Purpose: valid("New."), Module: valid(""), Domain: valid(""),
		Concepts: valid(`["users"]`), PublicAPISurface: valid("[]"), ComplexityNotes: valid("")}
	if err != nil || !ok || got != want {
		t.Errorf("NewestEnrichment(a.py, h1): got %+v, %v, %v, want %+v", got, ok, err, want)
	}
	for _, c2 := range [][2]string{{"b.py", "h2"}, {"c.py", "h3"}} {
		if got, ok, err := c.NewestEnrichment(ctx, c2[0], c2[1]); err != nil || ok || got != (corpus.Description{}) {
			t.Errorf("NewestEnrichment(%s): got %+v, %v, %v, want none", c2[0], got, ok, err)
		}
	}

	if err := c.MarkPromoted(ctx, []int64{newest}); err != nil {
		t.Fatal(err)
	}
	var promoted []int64
	for _, r := range queryRows(t, db, `SELECT id FROM enrichment_outputs WHERE promoted = 1 ORDER BY id`) {
		promoted = append(promoted, r["id"].(int64))
	}
	if !cmp.Equal(promoted, []int64{newest}) {
		t.Errorf("promoted outputs: got %v, want [%d]", promoted, newest)
	}
}

func valid(s string) sql.NullString { return sql.NullString{String: s, Valid: true} }
