package llm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/llm/llmtest"
	"github.com/ollama/ollama/api"
)

// TestCreateAdapterModel deploys an adapter on the fake Ollama: HEAD
// misses, POST uploads, create names the base and the blob; a second
// deployment of the same file uploads nothing.
func TestCreateAdapterModel(t *testing.T) {
	s := llmtest.NewServer(t)
	s.SetModels("thinker:4b")
	m := testModel(ProviderOllama, s)
	m.Model = "thinker:4b"
	path := filepath.Join(t.TempDir(), "adapter.gguf")
	if err := os.WriteFile(path, []byte("GGUF\x03\x00\x00\x00 lora"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var progress []string
	dep, err := CreateAdapterModel(ctx, m, "thinker:4b-scope-v1", path, func(s string) { progress = append(progress, s) })
	if err != nil {
		t.Fatal(err)
	}
	want := llmtest.Digest([]byte("GGUF\x03\x00\x00\x00 lora"))
	if dep.Digest != want || !dep.Uploaded || !slices.Equal(dep.Statuses, progress) || progress[len(progress)-1] != "success" {
		t.Errorf("deployment: got %+v (progress %q), want digest %s uploaded", dep, progress, want)
	}
	var lines []string
	for _, r := range s.Requests() {
		lines = append(lines, r.Method+" "+r.Path)
	}
	wantLines := []string{"HEAD /api/blobs/" + want, "POST /api/blobs/" + want, "POST /api/create"}
	if !slices.Equal(lines, wantLines) {
		t.Errorf("requests: got %q, want %q", lines, wantLines)
	}
	cr := s.Created()
	if len(cr) != 1 || cr[0].Model != "thinker:4b-scope-v1" || cr[0].From != "thinker:4b" || cr[0].Adapters["adapter.gguf"] != want {
		t.Errorf("create request: got %+v", cr)
	}

	dep, err = CreateAdapterModel(ctx, m, "thinker:4b-scope-v2", path, nil)
	if err != nil || dep.Uploaded {
		t.Errorf("second deployment: got %+v, %v; want no upload", dep, err)
	}
	if n := len(s.Requests()); n != 5 {
		t.Errorf("second deployment: got %d requests in all, want 5 (HEAD and create)", n)
	}
}

func TestCreateAdapterModelErrors(t *testing.T) {
	s := llmtest.NewServer(t)
	s.SetModels("thinker:4b")
	path := filepath.Join(t.TempDir(), "adapter.gguf")
	if err := os.WriteFile(path, []byte("GGUF lora"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	m := testModel(ProviderOpenAI, s)
	if _, err := CreateAdapterModel(ctx, m, "x", path, nil); !errors.Is(err, ErrNeedsOllama) || !strings.Contains(err.Error(), "models.provider") {
		t.Errorf("openai provider: got %v, want ErrNeedsOllama naming the fix", err)
	}
	if len(s.Requests()) != 0 {
		t.Errorf("openai provider: the server was called")
	}

	m = testModel(ProviderOllama, s)
	m.Model = "absent:1b"
	_, err := CreateAdapterModel(ctx, m, "absent:1b-scope-v1", path, nil)
	var ce *CallError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "pull model manifest") || !strings.Contains(err.Error(), "absent:1b") {
		t.Errorf("unknown base: got %v, want a call error quoting the server", err)
	}

	if _, err := CreateAdapterModel(ctx, m, "x", filepath.Join(t.TempDir(), "none.gguf"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: got %v", err)
	}
}

// TestCreateAdapterModelPull: a create that pulls its base streams the
// download's progress, each status once, and may take longer than
// models.timeout; one that streams nothing for models.timeout has
// stalled and gives up, saying so.
func TestCreateAdapterModelPull(t *testing.T) {
	s := llmtest.NewServer(t)
	s.SetPullable(time.Second, "thinker:4b")
	m := testModel(ProviderOllama, s)
	m.Model = "thinker:4b"
	m.Timeout = 300 * time.Millisecond
	path := filepath.Join(t.TempDir(), "adapter.gguf")
	if err := os.WriteFile(path, []byte("GGUF\x03\x00\x00\x00 lora"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var progress []string
	dep, err := CreateAdapterModel(ctx, m, "thinker:4b-scope-v1", path, func(s string) { progress = append(progress, s) })
	if err != nil {
		t.Fatalf("a pull three times models.timeout, streaming its progress: %v", err)
	}
	if slices.Index(dep.Statuses, "pulling thinker:4b") < 0 || dep.Statuses[len(dep.Statuses)-1] != "success" {
		t.Errorf("statuses: got %q", dep.Statuses)
	}
	for i := 1; i < len(progress); i++ {
		if progress[i] == progress[i-1] {
			t.Errorf("status %q repeated: %q", progress[i], progress)
		}
	}
	// A download says how far it is, every tenth: a person watching a
	// multi-gigabyte pull sees it move, not one line for minutes.
	var pcts []int
	for _, p := range progress {
		var pct int
		var done, total string
		if n, _ := fmt.Sscanf(p, "pulling thinker:4b %d%% (%s of %s)", &pct, &done, &total); n == 3 {
			pcts = append(pcts, pct)
		}
	}
	if len(pcts) < 5 || !slices.IsSorted(pcts) || pcts[0] != 0 || pcts[len(pcts)-1] < 80 {
		t.Errorf("the download's progress: got %q, want a line at every tenth from 0%%", progress)
	}
	for _, pct := range pcts {
		if pct%10 != 0 {
			t.Errorf("progress at %d%%, want tenths only: %q", pct, progress)
		}
	}

	// A stalled pull streams the same line many times a second, as
	// Ollama's does: a line is no sign of life, new bytes are.
	s.SetPullable(time.Hour, "coder:3b")
	s.SetPullStalls(true)
	m.Model = "coder:3b"
	bounded, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = CreateAdapterModel(bounded, m, "coder:3b-execute_code-v1", path, nil)
	if err == nil || !strings.Contains(err.Error(), "stalled") || !strings.Contains(err.Error(), "ollama pull coder:3b") {
		t.Errorf("a pull that streams no new bytes: got %v, want a stall naming 'ollama pull coder:3b'", err)
	}
	if len(s.Created()) != 1 {
		t.Errorf("creates: got %+v, want the first only", s.Created())
	}
}

func TestProgressWatch(t *testing.T) {
	var w progressWatch
	steps := []struct {
		p    api.ProgressResponse
		want int
	}{
		{api.ProgressResponse{Status: "pulling manifest"}, progressAdvanced},
		{api.ProgressResponse{Status: "pulling abc", Digest: "sha256:abc", Total: 100, Completed: 10}, progressAdvanced},
		{api.ProgressResponse{Status: "pulling abc", Digest: "sha256:abc", Total: 100, Completed: 10}, progressSame},
		{api.ProgressResponse{Status: "pulling abc", Digest: "sha256:abc", Total: 100, Completed: 40}, progressAdvanced},
		{api.ProgressResponse{Status: "pulling abc", Digest: "sha256:abc", Total: 100, Completed: 30}, progressSame}, // a part retried
		{api.ProgressResponse{Status: "pulling def", Digest: "sha256:def", Total: 50}, progressAdvanced},
		{api.ProgressResponse{Status: "pulling def", Digest: "sha256:def", Total: 50, Completed: 5}, progressAdvanced},
		{api.ProgressResponse{Status: "verifying sha256 digest"}, progressLocal},
		{api.ProgressResponse{Status: "verifying sha256 digest"}, progressSame},
		{api.ProgressResponse{Status: "writing manifest"}, progressAdvanced},
		{api.ProgressResponse{Status: "success"}, progressAdvanced},
	}
	for i, st := range steps {
		if got := w.see(st.p); got != st.want {
			t.Errorf("step %d (%+v): got %d, want %d", i, st.p, got, st.want)
		}
	}
}
