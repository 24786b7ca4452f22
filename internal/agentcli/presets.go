package agentcli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/cra-dev/cra/internal/config"
)

// noKey is the key an OpenAI-protocol agent is given when the profile
// names none: a local endpoint (Ollama, llama.cpp) needs no key, but
// qwen-code and aider refuse to start without one.
const noKey = "cra-no-key"

// presets are the agent CLIs: each one's flags and environment, from its
// own documentation and source (see Versions).
func presets() map[string]preset {
	return map[string]preset{
		// Claude Code: `claude -p` reads the prompt from stdin; stream-json
		// needs --verbose. ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY point
		// it at an Anthropic-protocol endpoint; CLAUDE_CONFIG_DIR holds
		// its state.
		ClaudeCode: {
			home: []string{".claude"},
			help: []string{"--help"}, headless: []string{"--print", "--output-format", "--verbose", "--permission-mode", "--model"},
			binary: "claude", stdin: true, keyEnv: "ANTHROPIC_API_KEY", reader: newStreamJSON,
			expand: func(p Profile, r Run, key string, c *Command, env map[string]string) []string {
				args := []string{"-p", "--output-format", "stream-json", "--verbose",
					"--permission-mode", map[string]string{config.ApprovalReadOnly: "plan", config.ApprovalEdit: "acceptEdits", config.ApprovalFull: "bypassPermissions"}[p.Approval]}
				if p.Model != "" {
					args = append(args, "--model", p.Model)
				}
				if p.BaseURL != "" {
					env["ANTHROPIC_BASE_URL"] = p.BaseURL
				}
				if key != "" {
					env["ANTHROPIC_API_KEY"] = key
				}
				if p.Isolated {
					env["CLAUDE_CONFIG_DIR"] = r.StateDir
				}
				return args
			},
			allow: func(tool string) string {
				return fmt.Sprintf(`approval = "full" (claude --permission-mode bypassPermissions), or that tool alone: extra_args = ["--allowedTools", %q]`, tool)
			},
		},
		// Codex: `codex exec --json -` reads the prompt from stdin and
		// prints its JSONL events (codex-rs exec/src/exec_events.rs). A
		// base_url becomes a model provider of its own that speaks the
		// Responses API, its key read from env_key; CODEX_HOME holds the
		// state. Approval maps to codex's sandbox: exec never asks.
		Codex: {
			home: []string{".codex"},
			help: []string{"exec", "--help"}, headless: []string{"--json", "--color", "--skip-git-repo-check", "--sandbox", "--dangerously-bypass-approvals-and-sandbox", "--config", "--model"},
			binary: "codex", stdin: true, keyEnv: "", reader: newCodex,
			expand: func(p Profile, r Run, key string, c *Command, env map[string]string) []string {
				args := []string{"exec", "--json", "--color", "never", "--skip-git-repo-check"}
				switch {
				case p.Approval == config.ApprovalReadOnly:
					args = append(args, "--sandbox", "read-only")
				case p.Approval == config.ApprovalFull:
					args = append(args, "--dangerously-bypass-approvals-and-sandbox")
				case r.Confined:
					// cra's sandbox allows what workspace-write would, and
					// codex's own cannot nest in it: every write fails.
					args = append(args, "--sandbox", "danger-full-access")
				default:
					args = append(args, "--sandbox", "workspace-write")
				}
				if p.Model != "" {
					args = append(args, "--model", p.Model)
				}
				if p.BaseURL != "" {
					provider := "{name=" + strconv.Quote("cra") + ",base_url=" + strconv.Quote(p.BaseURL) + `,wire_api="responses",supports_websockets=false`
					if p.APIKeyEnv != "" {
						provider += ",env_key=" + strconv.Quote(p.APIKeyEnv)
						env[p.APIKeyEnv] = key
					}
					args = append(args, "-c", `model_provider="cra"`, "-c", "model_providers.cra="+provider+"}")
				} else if p.APIKeyEnv != "" {
					// codex exec reads CODEX_API_KEY (docs/exec.md); the
					// OpenAI provider OPENAI_API_KEY.
					env["CODEX_API_KEY"], env["OPENAI_API_KEY"] = key, key
				}
				if p.Isolated {
					env["CODEX_HOME"] = r.StateDir
				}
				return args
			},
			last: func(Run) []string { return []string{"-"} },
			allow: func(tool string) string {
				return `approval = "full" (codex --dangerously-bypass-approvals-and-sandbox), or the directory it needs: extra_args = ["--add-dir", "DIR"]`
			},
		},
		// Gemini CLI: headless when stdin is not a terminal; its
		// stream-json events are packages/core/src/output/types.ts.
		// GOOGLE_GEMINI_BASE_URL and GEMINI_API_KEY point it at a
		// Gemini-protocol endpoint; GEMINI_CLI_HOME holds its state.
		GeminiCLI: {
			home: []string{".gemini"},
			help: []string{"--help"}, headless: []string{"--output-format", "--approval-mode", "--model"},
			binary: "gemini", stdin: true, keyEnv: "GEMINI_API_KEY", reader: newGemini,
			expand: func(p Profile, r Run, key string, c *Command, env map[string]string) []string {
				args := []string{"--output-format", "stream-json",
					"--approval-mode", map[string]string{config.ApprovalReadOnly: "plan", config.ApprovalEdit: "auto_edit", config.ApprovalFull: "yolo"}[p.Approval]}
				if p.Model != "" {
					args = append(args, "--model", p.Model)
				}
				if p.BaseURL != "" {
					env["GOOGLE_GEMINI_BASE_URL"] = p.BaseURL
				}
				if key != "" {
					env["GEMINI_API_KEY"] = key
				}
				if p.Isolated {
					env["GEMINI_CLI_HOME"] = r.StateDir
				}
				return args
			},
			allow: func(tool string) string {
				return fmt.Sprintf(`approval = "full" (gemini --approval-mode yolo), or that tool alone: extra_args = ["--allowed-tools", %q]`, tool)
			},
		},
		// qwen-code: takes the prompt as its positional argument (it gives
		// up on a standard input that has said nothing for 500 ms, which a
		// loaded machine misses); its stream-json is Claude Code's message
		// format. OPENAI_BASE_URL, OPENAI_API_KEY and
		// OPENAI_MODEL with --auth-type openai point it at an
		// OpenAI-compatible endpoint (docs/configuration/auth.md); QWEN_HOME
		// holds its state, where cra writes the settings a headless run
		// wants when the state is isolated.
		QwenCode: {
			home: []string{".qwen"},
			help: []string{"--help"}, headless: []string{"--output-format", "--approval-mode", "--auth-type", "--model"},
			binary: "qwen", promptArg: true, keyEnv: "OPENAI_API_KEY", reader: newStreamJSON,
			expand: func(p Profile, r Run, key string, c *Command, env map[string]string) []string {
				args := []string{"--output-format", "stream-json",
					"--approval-mode", map[string]string{config.ApprovalReadOnly: "plan", config.ApprovalEdit: "auto-edit", config.ApprovalFull: "yolo"}[p.Approval]}
				if p.BaseURL != "" {
					args = append(args, "--auth-type", "openai")
					env["OPENAI_BASE_URL"] = p.BaseURL
					env["OPENAI_API_KEY"] = keyOr(key)
				}
				if p.Model != "" {
					args = append(args, "--model", p.Model)
					env["OPENAI_MODEL"] = p.Model
				}
				if p.Isolated {
					env["QWEN_HOME"] = r.StateDir
					c.Files[filepath.Join(r.StateDir, "settings.json")] = qwenSettings
				}
				return args
			},
			allow: func(tool string) string {
				return fmt.Sprintf(`approval = "full" (qwen --approval-mode yolo), or that tool alone: extra_args = ["--allowed-tools", %q]`, tool)
			},
		},
		// opencode: `opencode run --format json` prints its events as
		// JSONL; the prompt is attached as a file. A base_url becomes an
		// OpenAI-compatible provider "cra" in OPENCODE_CONFIG_CONTENT, its
		// key read by opencode's {env:NAME} substitution, with the
		// permissions of the approval; the XDG directories hold its state.
		OpenCode: {
			home: []string{".local/share/opencode", ".local/state/opencode", ".cache/opencode", ".config/opencode"},
			help: []string{"run", "--help"}, headless: []string{"--format", "--file", "--model"},
			binary: "opencode", stdin: false, keyEnv: "", reader: newOpenCode,
			expand: func(p Profile, r Run, key string, c *Command, env map[string]string) []string {
				args := []string{"run", "--format", "json"}
				cfg := map[string]any{"$schema": "https://opencode.ai/config.json", "permission": map[string]map[string]string{
					config.ApprovalReadOnly: {"edit": "deny", "bash": "deny", "webfetch": "deny"},
					config.ApprovalEdit:     {"edit": "allow", "bash": "ask", "webfetch": "ask"},
					config.ApprovalFull:     {"edit": "allow", "bash": "allow", "webfetch": "allow"},
				}[p.Approval]}
				model := p.Model
				if p.BaseURL != "" {
					options := map[string]string{"baseURL": p.BaseURL}
					if p.APIKeyEnv != "" {
						options["apiKey"] = "{env:" + p.APIKeyEnv + "}"
						env[p.APIKeyEnv] = key
					}
					models := map[string]any{}
					if p.Model != "" {
						models[p.Model] = map[string]any{}
						model = "cra/" + p.Model
					}
					cfg["provider"] = map[string]any{"cra": map[string]any{"npm": "@ai-sdk/openai-compatible", "name": "cra", "options": options, "models": models}}
				}
				text, _ := json.Marshal(cfg)
				env["OPENCODE_CONFIG_CONTENT"] = string(text)
				if model != "" {
					args = append(args, "--model", model)
				}
				if p.Isolated {
					for _, d := range []string{"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"} {
						env[d] = filepath.Join(r.StateDir, d[len("XDG_"):len(d)-len("_HOME")])
					}
				}
				return args
			},
			last: func(r Run) []string {
				return []string{"--file", r.PromptFile, "--", "Do the task described in the attached file."}
			},
			allow: func(tool string) string {
				return fmt.Sprintf(`approval = "full", or that tool alone: env = { OPENCODE_PERMISSION = '{"%s":"allow"}' }`, tool)
			},
		},
		// Aider: --message-file runs one message and exits; --yes-always
		// confirms edits (never a shell command: aider asks for an explicit
		// yes there); --no-pretty prints plain text. Its chat and input
		// histories go to the run's directory, not the working copy, which
		// cra commits; cra commits the edits itself.
		Aider: {
			home: []string{".aider"},
			help: []string{"--help"}, headless: []string{"--message-file", "--yes-always", "--no-pretty", "--no-stream", "--no-auto-commits", "--no-gitignore", "--chat-history-file", "--input-history-file", "--openai-api-base"},
			binary: "aider", stdin: false, keyEnv: "OPENAI_API_KEY", reader: newAider,
			expand: func(p Profile, r Run, key string, c *Command, env map[string]string) []string {
				args := []string{"--message-file", r.PromptFile, "--yes-always", "--no-pretty", "--no-stream",
					"--no-auto-commits", "--no-gitignore", "--no-check-update", "--no-show-release-notes", "--analytics-disable",
					"--chat-history-file", filepath.Join(r.RunDir, "aider.chat.history.md"),
					"--input-history-file", filepath.Join(r.RunDir, "aider.input.history")}
				if p.Approval == config.ApprovalReadOnly {
					args = append(args, "--dry-run")
				}
				if p.Approval != config.ApprovalFull {
					args = append(args, "--no-suggest-shell-commands")
				}
				switch {
				case p.BaseURL != "":
					args = append(args, "--openai-api-base", p.BaseURL)
					env["OPENAI_API_KEY"] = keyOr(key)
					if p.Model != "" {
						args = append(args, "--model", "openai/"+p.Model)
					}
				case p.Model != "":
					args = append(args, "--model", p.Model)
				}
				if p.BaseURL == "" && key != "" {
					env["OPENAI_API_KEY"] = key
				}
				if p.Isolated {
					env["HOME"] = r.StateDir
				}
				return args
			},
			allow: func(tool string) string {
				return "aider runs no shell command without a person's explicit yes: run the command in [validation] instead, or use a preset that runs tools headless"
			},
		},
	}
}

func keyOr(key string) string {
	if key == "" {
		return noKey
	}
	return key
}

// qwenSettings are the settings an isolated qwen-code state starts with:
// no usage statistics, update checks or background memory and skill
// passes, which each cost a headless run time and model calls
// (docs/configuration/settings.md).
const qwenSettings = `{
  "privacy": {"usageStatisticsEnabled": false},
  "general": {"enableAutoUpdate": false},
  "memory": {"enableManagedAutoMemory": false, "enableManagedAutoDream": false, "enableAutoSkill": false}
}
`
