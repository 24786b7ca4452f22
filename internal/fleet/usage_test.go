package fleet

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/cra-dev/cra/internal/agentcli"
	"github.com/cra-dev/cra/internal/fleet/runner"
	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
	"github.com/cra-dev/cra/internal/workspace"
)

// A preset run's token usage goes to raw.sqlite's llm_calls beside cra's
// own calls: a row for the run with its total, and one per call its
// output counted (issue 29 item 3).
func TestRecordUsage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := t.TempDir()
	gittest.Run(t, repo, "init", "-q")
	ws, err := workspace.Open(ctx, repo, workspace.Options{Exact: true})
	if err != nil {
		t.Fatal(err)
	}
	f, err := Open(ctx, ws, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := runner.RunUsage{RunTaskID: "t-1a2b3c4d.r2", Preset: "qwen-code", Final: "done",
		Total: agentcli.Usage{Model: "qwen3-coder", Input: 2300, Output: 30, Cached: 900},
		Calls: []agentcli.Usage{{Model: "qwen3-coder", Input: 1000, Output: 10, Cached: 400}, {Model: "qwen3-coder", Input: 1300, Output: 20, Cached: 500}}}
	if err := f.recordUsage(ctx, u); err != nil {
		t.Fatal(err)
	}
	raw, err := store.NewFactory(statedir.At(filepath.Join(repo, ".clean_room"))).Open(ctx, store.Raw, "", true)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	type row struct {
		typ, model, provider string
		in, out              int
	}
	rows, err := raw.QueryContext(ctx, `SELECT call_type, model, provider, prompt_tokens, completion_tokens FROM llm_calls WHERE task_id = 't-1a2b3c4d.r2' AND role = 'agent' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.typ, &r.model, &r.provider, &r.in, &r.out); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	want := []row{{"agent_run", "qwen3-coder", "qwen-code", 2300, 30}, {"agent_call", "qwen3-coder", "qwen-code", 1000, 10}, {"agent_call", "qwen3-coder", "qwen-code", 1300, 20}}
	if len(got) != len(want) {
		t.Fatalf("rows %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
