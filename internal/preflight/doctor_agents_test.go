package preflight

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/llm/llmtest"
)

// TestDoctorAgents checks preset profiles with the real codex that .ci/run
// installs in tools/agents: binary, version, headless flags and endpoint;
// and names the fix of a profile whose key is unset or whose agent is not
// installed.
func TestDoctorAgents(t *testing.T) {
	bin, err := filepath.Abs(filepath.Join("..", "..", "tools", "agents", "node_modules", ".bin"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(bin, "codex")); err != nil {
		t.Fatalf("codex is not installed in %s: run 'npm install --prefix tools/agents' from the repository root (what .ci/run does)", bin)
	}
	s := llmtest.NewServer(t)
	s.SetModels("test-model")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("CRA_DOCTOR_KEY", "sk-doctor-secret-value")
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".clean_room"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := `
[agents.codex]
preset = "codex"
model = "test-model"
base_url = "` + s.OpenAIURL() + `"
api_key_env = "CRA_DOCTOR_KEY"

[agents.nokey]
preset = "qwen-code"
base_url = "` + s.OpenAIURL() + `"
api_key_env = "CRA_DOCTOR_UNSET"

[agents.aider]
preset = "aider"

[agents.script]
command = "./agent.sh"
`
	if err := os.WriteFile(filepath.Join(root, ".clean_room", "config.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	got := map[string]Check{}
	for _, c := range Doctor(context.Background(), root, 20*time.Second) {
		got[c.Name] = c
		if strings.Contains(c.Detail+c.Fix, "sk-doctor-secret-value") {
			t.Errorf("check %q shows the key: %+v", c.Name, c)
		}
	}
	for _, tc := range []struct {
		name, status, detail, fix string
	}{
		{"agent codex (codex)", StatusOK, "codex-cli 0.171.0, headless flags present; runs: CRA_DOCTOR_KEY=**** codex exec --json", ""},
		{"endpoint " + s.OpenAIURL() + " (openai)", StatusOK, "answers, 1 model", ""},
		{"agent codex test-model", StatusOK, "present", ""},
		{"agent nokey (qwen-code)", StatusWarn, "api_key_env names CRA_DOCTOR_UNSET, which is unset or empty", "set what it names"},
		{"agent aider (aider)", StatusWarn, "aider is not on PATH", "install aider"},
	} {
		c, ok := got[tc.name]
		if !ok {
			t.Errorf("no check %q; got %v", tc.name, got)
			continue
		}
		if c.Status != tc.status || !strings.Contains(c.Detail, tc.detail) || !strings.Contains(c.Fix, tc.fix) {
			t.Errorf("%s: got %+v, want status %s, detail with %q, fix with %q", tc.name, c, tc.status, tc.detail, tc.fix)
		}
	}
	if _, ok := got["agent script ()"]; ok {
		t.Errorf("a command profile was checked")
	}
}
