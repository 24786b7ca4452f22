package mcp_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/cra-dev/cra/internal/config"
)

// TestReadmeProfiles: each agent profile the README shows for board runs
// hands the agent the run's MCP configuration and the prompt. The
// profiles run under sh as the processor runs them, against stand-ins of
// the agents that print what they were given.
func TestReadmeProfiles(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("jq"); err != nil {
		t.Fatal("the codex and opencode profiles read the configuration with jq: install it (apt-get install jq; .ci/run does)")
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "### Board runs get the server")
	_, block, ok2 := strings.Cut(rest, "```toml\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README.md has no toml block under \"### Board runs get the server\"")
	}
	var profiles struct{ Agents map[string]config.Agent }
	if _, err := toml.Decode(block, &profiles); err != nil {
		t.Fatalf("the README's profiles: %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// Each stand-in prints its arguments, one a line, then the
	// variables an agent reads its MCP servers from.
	stub := "#!/bin/sh\nfor a in \"$@\"; do printf 'arg %s\\n' \"$a\"; done\n" +
		"printf 'env OPENCODE_CONFIG_CONTENT=%s\\n' \"$OPENCODE_CONFIG_CONTENT\"\n" +
		"printf 'env GEMINI_CLI_SYSTEM_SETTINGS_PATH=%s\\n' \"$GEMINI_CLI_SYSTEM_SETTINGS_PATH\"\n" +
		"printf 'env QWEN_CODE_SYSTEM_SETTINGS_PATH=%s\\n' \"$QWEN_CODE_SYSTEM_SETTINGS_PATH\"\n" +
		"printf 'stdin %s\\n' \"$(cat)\"\n"
	for _, name := range []string{"claude", "codex", "opencode", "gemini", "qwen"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(stub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfgPath := filepath.Join(dir, "runs dir", "mcp-1.json") // a space, as a repository path may have
	if err := os.MkdirAll(filepath.Dir(cfgPath), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := `{"mcpServers": {"cra": {"command": "/opt/cra/bin/cra", "args": ["mcp", "--repo", "/src/my app", "--files", "/src/my app/.clean_room/worktrees/t-1"], "env": {"CRA_TASK_ID": "t-1", "CRA_RUN_ID": "1", "CRA_REPORT_URL": "http://127.0.0.1:4000/report"}}}}`
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	promptPath := filepath.Join(dir, "prompt-1.md")
	if err := os.WriteFile(promptPath, []byte("fix the pager"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"claude": {"arg --mcp-config\narg " + cfgPath + "\n", "stdin fix the pager\n"},
		"codex": {`arg mcp_servers.cra.command="/opt/cra/bin/cra"` + "\n",
			`arg mcp_servers.cra.args=["mcp","--repo","/src/my app","--files","/src/my app/.clean_room/worktrees/t-1"]` + "\n",
			`arg mcp_servers.cra.env_vars=["CRA_TASK_ID","CRA_RUN_ID","CRA_REPORT_URL","CRA_RUN_TOKEN"]` + "\n", "arg fix the pager\n"},
		"opencode": {"arg fix the pager\n"},
		"gemini":   {"env GEMINI_CLI_SYSTEM_SETTINGS_PATH=" + cfgPath + "\n", "arg fix the pager\n"},
		"qwen":     {"env QWEN_CODE_SYSTEM_SETTINGS_PATH=" + cfgPath + "\n", "arg fix the pager\n"},
	}
	for name, wants := range want {
		t.Run(name, func(t *testing.T) {
			a, ok := profiles.Agents[name]
			if !ok {
				t.Fatalf("the README shows no [agents.%s] profile", name)
			}
			if !strings.Contains(a.Command, "{mcp_config}") {
				t.Errorf("the %s profile does not use {mcp_config}: %s", name, a.Command)
			}
			command := a.ExpandCommand(map[string]string{"prompt_file": promptPath, "mcp_config": cfgPath, "task_id": "t-1", "worktree": dir, "branch": "cra/t-1"})
			cmd := exec.Command("sh", "-c", command)
			cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "CRA_MCP_CONFIG="+cfgPath)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", command, err, out)
			}
			for _, w := range wants {
				if !strings.Contains(string(out), w) {
					t.Errorf("%s got no %q:\n%s", name, w, out)
				}
			}
			if name == "opencode" {
				_, line, _ := strings.Cut(string(out), "env OPENCODE_CONFIG_CONTENT=")
				line, _, _ = strings.Cut(line, "\n")
				var oc struct {
					MCP map[string]struct {
						Type        string
						Command     []string
						Environment map[string]string
					}
				}
				if err := json.Unmarshal([]byte(line), &oc); err != nil {
					t.Fatalf("OPENCODE_CONFIG_CONTENT %q: %v", line, err)
				}
				c := oc.MCP["cra"]
				if c.Type != "local" || strings.Join(c.Command, "|") != "/opt/cra/bin/cra|mcp|--repo|/src/my app|--files|/src/my app/.clean_room/worktrees/t-1" || c.Environment["CRA_TASK_ID"] != "t-1" {
					t.Errorf("opencode's configuration: got %+v", c)
				}
			}
		})
	}
}
