package config

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseBoardAndAgents(t *testing.T) {
	c, err := Parse([]byte(`
[board]
default_agent = "aider"
max_parallel = 3

[agents.aider]
command = "aider --yes --message-file {prompt_file}"
timeout = "20m"
colour = "blue"

[agents.script]
command = "./agent.sh {task_id} {worktree} {branch}"
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Board.DefaultAgent != "aider" || *c.Board.MaxParallel != 3 {
		t.Errorf("board: %+v", c.Board)
	}
	if got := c.Agents["aider"].AgentTimeout(); got != 20*time.Minute {
		t.Errorf("aider timeout: got %v, want 20m", got)
	}
	if got := c.Agents["script"].AgentTimeout(); got != DefaultAgentTimeout {
		t.Errorf("script timeout: got %v, want the default", got)
	}
	if diff := cmp.Diff([]string{"agents.aider.colour"}, c.Unknown); diff != "" {
		t.Errorf("unknown keys (-want +got):\n%s", diff)
	}
	again, err := Parse(mustEncode(t, c))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c.Agents, again.Agents); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func mustEncode(t *testing.T, c *Config) []byte {
	t.Helper()
	b, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBoardAndAgentsRefused(t *testing.T) {
	tests := []struct {
		name, toml, want string
	}{
		{"builtin redefined", "[agents.cra]\ncommand = \"x\"\n", `"cra" is the built-in profile`},
		{"bad name", "[agents.Aider]\ncommand = \"x\"\n", "[agents.Aider]: a profile name is lowercase"},
		{"empty command", "[agents.a]\ntimeout = \"5m\"\n", "agents.a.command is empty"},
		{"unknown placeholder", "[agents.a]\ncommand = \"run {prompt}\"\n", "agents.a.command uses {prompt}: the placeholders are {prompt_file}, {task_id}, {worktree}, {branch}"},
		{"placeholder in single quotes", "[agents.a]\ncommand = \"run '{prompt_file}'\"\n", "agents.a.command puts {prompt_file} within single quotes"},
		{"bad timeout", "[agents.a]\ncommand = \"x\"\ntimeout = \"soon\"\n", `agents.a.timeout is "soon"`},
		{"no parallelism", "[board]\nmax_parallel = 0\n", "board.max_parallel must be >= 1"},
		{"undefined default", "[board]\ndefault_agent = \"aider\"\n", `board.default_agent is "aider", which no [agents.aider] defines`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.toml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := Parse([]byte("[board]\ndefault_agent = \"cra\"\n")); err != nil {
		t.Errorf("the built-in default: %v", err)
	}
}

func TestExpandCommand(t *testing.T) {
	a := Agent{Command: "agent --in {prompt_file} --id {task_id} -C {worktree} {branch} {}"}
	got := a.ExpandCommand(map[string]string{"prompt_file": "/tmp/it's here/p.md", "task_id": "t-1", "worktree": "/w t", "branch": "cra/t-1"})
	want := `agent --in '/tmp/it'\''s here/p.md' --id 't-1' -C '/w t' 'cra/t-1' {}`
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestExpandCommandInTheShell runs expanded commands through sh: every
// placeholder is one word with its value, in or out of double quotes, and
// the shell's own braces are left to it.
func TestExpandCommandInTheShell(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	prompt := filepath.Join(t.TempDir(), "it's \"here\" $HOME `x` p.md")
	if err := os.WriteFile(prompt, []byte("the prompt"), 0o644); err != nil {
		t.Fatal(err)
	}
	values := map[string]string{"prompt_file": prompt, "task_id": "t-1", "worktree": "/w t", "branch": "cra/t-1"}
	for _, tc := range []struct{ cmd, want string }{
		{`printf '%s|' {prompt_file} {task_id}`, prompt + "|t-1|"},
		{`printf '%s|' "{prompt_file}" "--at={worktree}"`, prompt + "|--at=/w t|"},
		{`printf '%s|' "${CRA_TASK_ID}" {branch} '{}'`, "from-env|cra/t-1|{}|"},
		{`echo a b | awk '{print $2}'`, "b\n"},
		{`printf '%s|' "$(cat {prompt_file})" "$(echo "{task_id}")"`, "the prompt|t-1|"},
	} {
		if _, err := Parse([]byte(fmt.Sprintf("[agents.a]\ncommand = %q\n", tc.cmd))); err != nil {
			t.Errorf("%s: refused: %v", tc.cmd, err)
			continue
		}
		cmd := exec.Command("sh", "-c", Agent{Command: tc.cmd}.ExpandCommand(values))
		cmd.Env = append(os.Environ(), "CRA_TASK_ID=from-env")
		out, err := cmd.Output()
		if err != nil || string(out) != tc.want {
			t.Errorf("%s: got %q, %v; want %q", tc.cmd, out, err, tc.want)
		}
	}
}

func TestMaxReplyBytes(t *testing.T) {
	if c, err := Parse([]byte("[models]\nmax_reply_bytes = 65536\n")); err != nil || *c.Models.MaxReplyBytes != 65536 {
		t.Errorf("65536: %v", err)
	}
	for _, v := range []string{"100", "9000000"} {
		if _, err := Parse([]byte("[models]\nmax_reply_bytes = " + v + "\n")); err == nil || !strings.Contains(err.Error(), "use 1024 to 8000000") {
			t.Errorf("%s: got %v, want it refused naming the range", v, err)
		}
	}
}

func TestAgentPresets(t *testing.T) {
	c, err := Parse([]byte(`
[agents.qwen]
preset = "qwen-code"
model = "qwen3-coder"
base_url = "https://openrouter.ai/api/v1"
api_key_env = "OPENROUTER_API_KEY"
approval = "full"
extra_args = ["--max-session-turns", "40"]
env = { QWEN_CODE_MAX_OUTPUT_TOKENS = "4096", NOTE = "{model}" }
env_from = ["GOPATH"]
state = "isolated"

[agents.script]
command = "./agent.sh {task_id}"
env = { MODE = "ci" }
`))
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(mustEncode(t, c))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c.Agents, again.Agents); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	tests := []struct{ name, toml, want string }{
		{"both", "[agents.a]\ncommand = \"x\"\npreset = \"codex\"\n", "agents.a sets both command and preset"},
		{"unknown preset", "[agents.a]\npreset = \"cursor\"\n", `agents.a.preset is "cursor": use one of claude-code, codex, gemini-cli, qwen-code, opencode, aider`},
		{"approval", "[agents.a]\npreset = \"codex\"\napproval = \"yolo\"\n", `agents.a.approval is "yolo": use read-only, edit (the default) or full`},
		{"state", "[agents.a]\npreset = \"codex\"\nstate = \"tmp\"\n", `agents.a.state is "tmp": use home (the default) or isolated`},
		{"key in env", "[agents.a]\npreset = \"codex\"\nenv = { OPENAI_API_KEY = \"sk-abc\" }\n", "agents.a.env.OPENAI_API_KEY holds a value in config.toml: a key never goes in the file"},
		{"key in args", "[agents.a]\npreset = \"qwen-code\"\nextra_args = [\"--openai-api-key=sk-abcdefghijklmnopqrstuv\"]\n", "agents.a.extra_args[0] looks like a key"},
		{"bare key in args", "[agents.a]\npreset = \"qwen-code\"\nextra_args = [\"--openai-api-key\", \"sk-abcdefghijklmnopqrstuv\"]\n", "agents.a.extra_args[1] looks like a key"},
		{"key env name", "[agents.a]\npreset = \"codex\"\napi_key_env = \"sk-abc\"\n", "agents.a.api_key_env is not an environment variable name"},
		{"base url", "[agents.a]\npreset = \"codex\"\nbase_url = \"ftp://x\"\n", `agents.a.base_url "ftp://x" is not an http(s) URL`},
		{"placeholder", "[agents.a]\npreset = \"codex\"\nextra_args = [\"{prompt}\"]\n", "agents.a.extra_args[0] uses {prompt}: the placeholders are {model}, {base_url}, {prompt_file}"},
		{"env_from name", "[agents.a]\npreset = \"codex\"\nenv_from = [\"A-B\"]\n", `agents.a.env_from has "A-B"`},
		{"preset key on command", "[agents.a]\ncommand = \"x\"\nmodel = \"m\"\n", "agents.a.model applies to a preset only"},
		{"agent role", "[models]\ncoding = \"c\"\n[models.agent]\nbase_url = \"http://x\"\nprovider = \"openai\"\n", "[models.agent] has no model: set models.agent.model or remove the table (preset agents then use the coding model)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.toml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "sk-abc") {
				t.Errorf("the error repeats the key: %v", err)
			}
		})
	}
}

func TestAgentEndpoint(t *testing.T) {
	c, err := Parse([]byte(`
[models]
coding = "qwen3-coder:30b"
base_url = "http://localhost:11434"
api_key_env = "OLLAMA_KEY"

[models.agent]
model = "qwen3-coder-plus"
provider = "openai"
base_url = "https://dashscope.example/v1"
api_key_env = "DASHSCOPE_API_KEY"
`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		a                Agent
		model, base, key string
	}{
		{Agent{Preset: "qwen-code"}, "qwen3-coder-plus", "https://dashscope.example/v1", "DASHSCOPE_API_KEY"},
		{Agent{Preset: "codex", Model: "mine"}, "mine", "https://dashscope.example/v1", "DASHSCOPE_API_KEY"},
		{Agent{Preset: "codex", BaseURL: "http://other/v1"}, "qwen3-coder-plus", "http://other/v1", ""},
		{Agent{Preset: "claude-code"}, "", "", ""},
	}
	for _, tc := range tests {
		m, b, k := c.AgentEndpoint(tc.a)
		if m != tc.model || b != tc.base || k != tc.key {
			t.Errorf("%+v: got %q %q %q, want %q %q %q", tc.a, m, b, k, tc.model, tc.base, tc.key)
		}
	}
	c.Models.Agent = nil
	if m, b, k := c.AgentEndpoint(Agent{Preset: "aider"}); m != "qwen3-coder:30b" || b != "http://localhost:11434/v1" || k != "OLLAMA_KEY" {
		t.Errorf("without [models.agent]: got %q %q %q, want the coding model on Ollama's /v1", m, b, k)
	}
}
