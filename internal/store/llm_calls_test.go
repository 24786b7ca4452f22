package store

import (
	"context"
	"testing"

	"github.com/cra-dev/cra/internal/statedir"
	"github.com/google/go-cmp/cmp"
)

// TestLLMCallTables checks the raw tables migration 0002 adds beside the
// seed schema: llm_calls for every call outside retrieval and enrichment,
// and the detail tables of the seed's two LLM tables.
func TestLLMCallTables(t *testing.T) {
	ctx := context.Background()
	db, err := NewFactory(statedir.At(t.TempDir())).Open(ctx, Raw, "", false)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	want := map[string][]col{
		"llm_calls": {{"id", "INTEGER", false, "", 1}, {"task_id", "TEXT", false, "", 0}, {"call_type", "TEXT", true, "", 0},
			{"role", "TEXT", true, "", 0}, {"stage", "TEXT", false, "", 0}, {"provider", "TEXT", true, "", 0}, {"model", "TEXT", true, "", 0},
			{"system", "TEXT", false, "", 0}, {"prompt", "TEXT", true, "", 0}, {"response", "TEXT", true, "", 0},
			{"prompt_tokens", "INTEGER", false, "", 0}, {"completion_tokens", "INTEGER", false, "", 0}, {"latency_ms", "INTEGER", true, "", 0},
			{"error", "TEXT", false, "", 0}, {"timestamp", "TEXT", true, "", 0}},
		"retrieval_llm_call_details": {{"call_id", "INTEGER", false, "", 1}, {"role", "TEXT", true, "", 0}, {"provider", "TEXT", true, "", 0},
			{"system", "TEXT", false, "", 0}, {"error", "TEXT", false, "", 0}},
		"enrichment_output_details": {{"output_id", "INTEGER", false, "", 1}, {"path", "TEXT", true, "", 0}, {"content_hash", "TEXT", true, "", 0},
			{"provider", "TEXT", true, "", 0}, {"system", "TEXT", false, "", 0}, {"prompt_tokens", "INTEGER", false, "", 0},
			{"completion_tokens", "INTEGER", false, "", 0}, {"latency_ms", "INTEGER", true, "", 0}, {"error", "TEXT", false, "", 0}},
	}
	for table, cols := range want {
		if diff := cmp.Diff(cols, columns(t, db, table)); diff != "" {
			t.Errorf("table %s columns (-want +got):\n%s", table, diff)
		}
	}
	// The detail rows belong to a seed row.
	if _, err := db.Exec("INSERT INTO enrichment_output_details(output_id, path, content_hash, provider, latency_ms) VALUES (99, 'a.py', 'h', 'ollama', 1)"); err == nil {
		t.Error("enrichment_output_details without its output: got no error, want a foreign key violation")
	}
	if _, err := db.Exec("INSERT INTO retrieval_llm_call_details(call_id, role, provider) VALUES (99, 'reasoning', 'ollama')"); err == nil {
		t.Error("retrieval_llm_call_details without its call: got no error, want a foreign key violation")
	}
}
