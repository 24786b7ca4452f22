package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/llm/llmtest"
	"github.com/cra-dev/cra/internal/preflight"
	"github.com/cra-dev/cra/internal/workspace"
)

func TestDoctorFlags(t *testing.T) {
	d, _, _ := testDeps()
	var got doctorOptions
	cmd := newDoctorCmd(d, func(_ context.Context, _ *deps, o *doctorOptions) error { got = *o; return nil })
	cmd.SetArgs([]string{"--repo", "r", "--json", "--timeout", "2s"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if diff := deepDiff(doctorOptions{repo: "r", json: true, timeout: 2 * time.Second}, got); diff != "" {
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
	if _, err := workspace.SaveConfig(repo, cfg, nil); err != nil {
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
		"endpoint " + s.OllamaURL() + " (ollama)": "ok", "coding model c:1b": "ok", "reasoning model r:1b": "ok", "verification": "warn"}
	if diff := deepDiff(want, status); diff != "" || report.OK {
		t.Errorf("ok=%v, checks (-want +got):\n%s", report.OK, diff)
	}
	if err := doctorRun(context.Background(), d, &doctorOptions{repo: repo, timeout: 0}); err == nil {
		t.Error("--timeout 0: got no error")
	}
}

// damagedIndex indexes a repository of 40 files, writes garbage into
// every other page of curated.sqlite from the page at from on (its header
// intact, so it still opens) and returns the repository.
func damagedIndex(t *testing.T, d *deps, from func(size int64) int64) string {
	t.Helper()
	repo := t.TempDir()
	for i := range 40 {
		body := fmt.Sprintf("def f%d(x):\n    \"\"\"Return x plus %d.\"\"\"\n    return x + %d\n", i, i, i)
		if err := os.WriteFile(filepath.Join(repo, fmt.Sprintf("m%d.py", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gittest.Run(t, repo, "init", "-q")
	gittest.Run(t, repo, "add", "-A")
	gittest.Run(t, repo, "commit", "-qm", "files")
	if err := indexRun(context.Background(), d, &indexOptions{repo: repo}); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(repo, ".clean_room", "curated.sqlite"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	garbage := bytes.Repeat([]byte{0xA5, 0x17, 0x00, 0xFF}, 1024)
	for off := from(st.Size()); off+int64(len(garbage)) <= st.Size(); off += 2 * 4096 {
		if _, err := f.WriteAt(garbage, off); err != nil {
			t.Fatal(err)
		}
	}
	return repo
}

// TestDamagedIndexDoctor: garbage in the last pages of curated.sqlite,
// which doctor's other checks do not read, fails its index check by
// SQLite's quick_check, naming the fix; 'cra index --rebuild' is that fix.
// The last eighth: in this small index the schema's pages, which every
// statement reads, reach past the first three quarters.
func TestDamagedIndexDoctor(t *testing.T) {
	ctx := context.Background()
	d, out, errOut := testDeps()
	repo := damagedIndex(t, d, func(size int64) int64 { return size / 4096 * 7 / 8 * 4096 })
	check := func() preflight.Check {
		t.Helper()
		out.Reset()
		doctorRun(ctx, d, &doctorOptions{repo: repo, json: true, timeout: time.Second})
		var report doctorReport
		if err := json.Unmarshal(out.Bytes(), &report); err != nil {
			t.Fatal(err)
		}
		for _, c := range report.Checks {
			if c.Name == "index" {
				return c
			}
		}
		t.Fatalf("no index check in %s", out)
		return preflight.Check{}
	}
	if c := check(); c.Status != preflight.StatusFail || !strings.Contains(c.Detail, "is damaged: quick_check") || !strings.Contains(c.Fix, "cra index --rebuild") {
		t.Fatalf("damaged index: got %+v, want FAIL naming 'cra index --rebuild'", c)
	}
	errOut.Reset()
	if err := indexRun(ctx, d, &indexOptions{repo: repo, rebuild: true}); err != nil {
		t.Fatalf("rebuild: %v\n%s", err, errOut)
	}
	if !strings.Contains(errOut.String(), "set the old index aside as .clean_room/curated.sqlite.damaged") {
		t.Errorf("rebuild said %q", errOut.String())
	}
	if c := check(); c.Status != preflight.StatusOK {
		t.Errorf("after the rebuild: got %+v, want ok", c)
	}
}

// TestDamagedIndexQuery: a query that meets a damaged page fails saying
// what to do, not only SQLite's "malformed".
func TestDamagedIndexQuery(t *testing.T) {
	d, _, _ := testDeps()
	repo := damagedIndex(t, d, func(int64) int64 { return 8192 })
	var stderr bytes.Buffer
	code := Main(context.Background(), []string{"query", "files", "--repo", repo}, strings.NewReader(""), io.Discard, &stderr)
	if code != exitFailure || !strings.Contains(stderr.String(), "cra index --rebuild") {
		t.Errorf("query on a damaged index: exit %d, stderr %q; want 1 and the fix", code, stderr.String())
	}
}
