package cli

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/llm/llmtest"
)

func TestDoctorFlags(t *testing.T) {
	d, _, _ := testDeps()
	var got doctorOptions
	cmd := newDoctorCmd(d, func(_ context.Context, _ *deps, o *doctorOptions) error { got = *o; return nil })
	cmd.SetArgs([]string{"--repo", "r", "--json", "--timeout", "2s"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(doctorOptions{repo: "r", json: true, timeout: 2 * time.Second}, got, cmp.AllowUnexported(doctorOptions{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestDoctorRunJSON(t *testing.T) {
	s := llmtest.NewServer(t)
	s.SetModels("c:1b", "r:1b")
	repo := t.TempDir()
	gittest.Run(t, repo, "init", "-q")
	gittest.Run(t, repo, "commit", "-q", "--allow-empty", "-m", "first")
	window := 8192
	cfg := &config.Config{Models: &config.Models{Coding: "c:1b", Reasoning: "r:1b", BaseURL: s.OllamaURL(),
		CodingContextWindow: &window, ReasoningContextWindow: &window}}
	if err := cfg.Save(repo); err != nil {
		t.Fatal(err)
	}
	d, out, _ := testDeps()
	err := doctorRun(context.Background(), d, &doctorOptions{repo: repo, json: true, timeout: time.Second})
	var se silentError
	if !errors.As(err, &se) || se.code != exitFailure {
		t.Fatalf("got %v, want exit 1: the repository is not indexed", err)
	}
	var report doctorReport
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatal(err)
	}
	status := map[string]string{}
	for _, c := range report.Checks {
		status[c.Name] = c.Status
	}
	want := map[string]string{"git": "ok", "repository": "ok", "config": "ok", "index": "FAIL", "raw database": "skip",
		"endpoint " + s.OllamaURL() + " (ollama)": "ok", "coding model c:1b": "ok", "reasoning model r:1b": "ok"}
	if diff := cmp.Diff(want, status); diff != "" || report.OK {
		t.Errorf("ok=%v, checks (-want +got):\n%s", report.OK, diff)
	}
	if err := doctorRun(context.Background(), d, &doctorOptions{repo: repo, timeout: 0}); err == nil {
		t.Error("--timeout 0: got no error")
	}
}
