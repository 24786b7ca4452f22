package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWriteMCPConfig: the run's configuration names cra's server for the
// repository, reading the working copy, with the run's task, number and
// endpoint; the token stays out of the file (it reaches the server
// through the agent's environment).
func TestWriteMCPConfig(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mcp-2.json")
	if err := writeMCPConfig(path, "/usr/bin/cra", "/src/app", "/src/app/.clean_room/worktrees/t-1", "t-1", 2, "http://127.0.0.1:4000/report"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Servers map[string]struct {
			Command string
			Args    []string
			Env     map[string]string
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("%v:\n%s", err, data)
	}
	cra := got.Servers["cra"]
	if cra.Command != "/usr/bin/cra" {
		t.Errorf("command: got %q", cra.Command)
	}
	if diff := cmp.Diff([]string{"mcp", "--repo", "/src/app", "--files", "/src/app/.clean_room/worktrees/t-1"}, cra.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"CRA_TASK_ID": "t-1", "CRA_RUN_ID": "2", EnvReportURL: "http://127.0.0.1:4000/report"}, cra.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if strings.Contains(string(data), EnvRunToken) {
		t.Errorf("the file names the token:\n%s", data)
	}
}

func TestUsesMCP(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		command string
		want    bool
	}{
		{"claude -p --mcp-config {mcp_config} < {prompt_file}", true},
		{`GEMINI_CLI_SYSTEM_SETTINGS_PATH="$CRA_MCP_CONFIG" gemini -p "$(cat {prompt_file})"`, true},
		{"aider --message-file {prompt_file}", false},
		{"my-agent {mcp_configs}", false},
	} {
		if got := usesMCP(tc.command); got != tc.want {
			t.Errorf("usesMCP(%q): got %v, want %v", tc.command, got, tc.want)
		}
	}
}
