package runner

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/cra-dev/cra/internal/atomicfile"
	"github.com/cra-dev/cra/internal/supervise"
)

// EnvMCPConfig names the file of a run's MCP configuration (issue 31), as
// the {mcp_config} placeholder does: cra's MCP server for the run's
// working copy, in the "mcpServers" shape agents read (Claude Code's
// --mcp-config, Cursor, Gemini CLI and qwen-code settings).
const EnvMCPConfig = "CRA_MCP_CONFIG"

// mcpTools is the TOOLS section of an agent's prompt: which of cra's MCP
// tools exist and when to use them.
const mcpTools = `cra's MCP server ("cra", configured in $CRA_MCP_CONFIG) knows this repository from its index; no tool calls a model.
- localize: which files a task needs, ranked, with reasons. Call it first.
- context: the code a task needs, within a token budget, as one Markdown document.
- symbols: definitions by name or pattern. file_context: a file's symbols, imports both ways, co-change neighbours, recent commits.
- knowledge: the project's conventions and lessons for a task.
- report: tell cra you started (active), finished (finish), or an event; ask_person: stop and ask a person when you cannot go on without one.
The index is the repository's: files you changed show as stale, with their names.`

// usesMCP reports whether an agent command hands the run's MCP
// configuration to its agent: only then does the prompt say the tools
// exist.
func usesMCP(command string) bool {
	return strings.Contains(command, "{mcp_config}") || strings.Contains(command, EnvMCPConfig)
}

// writeMCPConfig writes run n's MCP configuration to path, outside the
// working copy: cra (exe) serving the repository's index at root with the
// files of the working copy work. The run's token is not in it: the
// server inherits it from the agent's environment, and the file is
// readable by other runs.
func writeMCPConfig(path, exe, root, work, id string, n int, reportURL string) error {
	if exe == "" {
		exe = "cra"
	}
	type server struct {
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
	}
	cfg := struct {
		Servers map[string]server `json:"mcpServers"`
	}{map[string]server{"cra": {Command: exe, Args: []string{"mcp", "--repo", root, "--files", work},
		Env: map[string]string{supervise.EnvTaskID: id, supervise.EnvRunID: strconv.Itoa(n), EnvReportURL: reportURL}}}}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(data, '\n'), 0o644)
}
