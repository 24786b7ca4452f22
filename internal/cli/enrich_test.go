package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/enrich"
	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/llm/llmtest"
	"github.com/cra-dev/cra/internal/workspace"
)

func TestEnrichFlags(t *testing.T) {
	d, _, _ := testDeps()
	tests := []struct {
		args []string
		want enrichOptions
	}{
		// Not nil: cobra reads a nil command line from os.Args, the test
		// binary's own (a run with '-test.skip X' parsed X as the repo).
		{[]string{}, enrichOptions{repo: ".", concurrency: 1}},
		{[]string{"src", "--promote", "--concurrency", "4", "--json", "-v"}, enrichOptions{repo: "src", promote: true, concurrency: 4, json: true, verbose: true}},
	}
	for _, tc := range tests {
		var got enrichOptions
		cmd := newEnrichCmd(d, func(_ context.Context, _ *deps, o *enrichOptions) error { got = *o; return nil })
		cmd.SetArgs(tc.args)
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		if diff := deepDiff(tc.want, got); diff != "" {
			t.Errorf("%v (-want +got):\n%s", tc.args, diff)
		}
	}
}

func TestEnrichSummary(t *testing.T) {
	tests := []struct {
		r    enrich.Result
		want string
	}{
		{enrich.Result{Model: "m", Files: 5, Enriched: 3, Malformed: 1, Empty: 1, Calls: 5, MalformedReplies: 2, PromptTokens: 900, CompletionTokens: 120, Duration: 1500 * time.Millisecond},
			"enriched 3 of 5 files with m in 1.5s: 0 already enriched, 1 malformed, 1 empty; 5 calls (2 malformed replies), 900 prompt + 120 completion tokens"},
		{enrich.Result{Model: "m", Files: 2, Skipped: 1, Changed: 1},
			"enriched 0 of 2 files with m in 0s: 1 already enriched, 0 malformed, 0 empty, 1 changed since the last index; 0 calls"},
		{enrich.Result{Model: "m", Files: 1, Malformed: 1, Calls: 1, MalformedReplies: 1, CompletionTokens: 3},
			"enriched 0 of 1 files with m in 0s: 0 already enriched, 1 malformed, 0 empty; 1 call (1 malformed reply), 0 prompt + 3 completion tokens"},
	}
	for _, tc := range tests {
		if got := enrichSummary(&tc.r); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
	if got := promoteSummary(&enrich.PromoteResult{Promoted: 1}); got != "promoted 1 file to the index (file_metadata)" {
		t.Errorf("got %s", got)
	}
}

// TestEnrichRun runs the command in-process against the fake server.
func TestEnrichRun(t *testing.T) {
	ctx := context.Background()
	s := llmtest.NewServer(t)
	s.SetDefault(llmtest.Text(`{"purpose": "p", "module": "m", "domain": "d", "concepts": ["c"], "public_api_surface": [], "complexity_notes": ""}`))
	repo := t.TempDir()
	os.WriteFile(filepath.Join(repo, "a.py"), []byte("def a():\n    pass\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "b.py"), []byte("def b():\n    pass\n"), 0o644)
	gittest.Run(t, repo, "init", "-q")
	window := 4096
	cfg := &config.Config{Models: &config.Models{Coding: "c:1b", Reasoning: "r:1b", BaseURL: s.OllamaURL(), ReasoningContextWindow: &window}}
	if _, err := workspace.SaveConfig(repo, cfg, nil); err != nil {
		t.Fatal(err)
	}
	d, out, errOut := testDeps()
	if err := indexRun(ctx, d, &indexOptions{repo: repo}); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := enrichRun(ctx, d, &enrichOptions{repo: repo, concurrency: 2, promote: true, json: true}); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	var report enrichReport
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if report.Enrich.Enriched != 2 || report.Enrich.Calls != 2 || report.Promote == nil || report.Promote.Promoted != 2 {
		t.Errorf("got %+v, %+v", report.Enrich, report.Promote)
	}
	if err := enrichRun(ctx, d, &enrichOptions{repo: repo, concurrency: 0}); err == nil || !strings.Contains(err.Error(), "--concurrency") {
		t.Errorf("concurrency 0: got %v", err)
	}
}
