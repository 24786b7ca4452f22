package agentcli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/config"
)

const secret = "sk-test-0123456789abcdef0123"

func testRun() Run {
	return Run{PromptFile: "/r/runs/t1/prompt-1.md", Worktree: "/r/wt/t1", TaskID: "t1", Branch: "cra/t1", StateDir: "/r/.clean_room/agents/x",
		Environ: []string{"PATH=/usr/bin", "HOME=/home/u", "OPENROUTER_API_KEY=" + secret, "AWS_SECRET_ACCESS_KEY=aws", "GOPATH=/go"}}
}

// TestExpand pins the command each preset expands to: the README's table.
func TestExpand(t *testing.T) {
	base := Profile{Model: "qwen3-coder", BaseURL: "https://openrouter.ai/api/v1", APIKeyEnv: "OPENROUTER_API_KEY"}
	with := func(preset string, f func(p *Profile)) Profile {
		p := base
		p.Name, p.Preset = preset, preset
		if f != nil {
			f(&p)
		}
		return p
	}
	tests := []struct {
		name string
		p    Profile
		want string
		key  string // the variable the agent reads the key from
	}{
		{"claude-code", with(ClaudeCode, func(p *Profile) { p.Model, p.BaseURL, p.APIKeyEnv = "claude-sonnet-4-5", "", "" }),
			"claude -p --output-format stream-json --verbose --permission-mode acceptEdits --model claude-sonnet-4-5 < /r/runs/t1/prompt-1.md", ""},
		{"claude-code endpoint", with(ClaudeCode, func(p *Profile) { p.Model, p.BaseURL = "claude-sonnet-4-5", "https://gateway.example/anthropic" }),
			"ANTHROPIC_API_KEY=**** ANTHROPIC_BASE_URL=https://gateway.example/anthropic claude -p --output-format stream-json --verbose --permission-mode acceptEdits --model claude-sonnet-4-5 < /r/runs/t1/prompt-1.md", "ANTHROPIC_API_KEY"},
		{"codex", with(Codex, nil),
			`OPENROUTER_API_KEY=**** codex exec --json --color never --skip-git-repo-check --sandbox workspace-write --model qwen3-coder -c 'model_provider="cra"' -c 'model_providers.cra={name="cra",base_url="https://openrouter.ai/api/v1",wire_api="responses",supports_websockets=false,env_key="OPENROUTER_API_KEY"}' - < /r/runs/t1/prompt-1.md`, "OPENROUTER_API_KEY"},
		{"codex full isolated", with(Codex, func(p *Profile) { p.Approval, p.Isolated, p.BaseURL = config.ApprovalFull, true, "" }),
			"CODEX_API_KEY=**** CODEX_HOME=/r/.clean_room/agents/x OPENAI_API_KEY=**** codex exec --json --color never --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox --model qwen3-coder - < /r/runs/t1/prompt-1.md", "CODEX_API_KEY"},
		{"gemini-cli", with(GeminiCLI, func(p *Profile) { p.Model, p.BaseURL = "gemini-2.5-pro", "" }),
			"GEMINI_API_KEY=**** gemini --output-format stream-json --approval-mode auto_edit --model gemini-2.5-pro < /r/runs/t1/prompt-1.md", "GEMINI_API_KEY"},
		{"qwen-code", with(QwenCode, nil),
			"OPENAI_API_KEY=**** OPENAI_BASE_URL=https://openrouter.ai/api/v1 OPENAI_MODEL=qwen3-coder qwen --output-format stream-json --approval-mode auto-edit --auth-type openai --model qwen3-coder \"$(cat /r/runs/t1/prompt-1.md)\"", "OPENAI_API_KEY"},
		{"qwen-code read-only isolated", with(QwenCode, func(p *Profile) { p.Approval, p.Isolated = config.ApprovalReadOnly, true }),
			"OPENAI_API_KEY=**** OPENAI_BASE_URL=https://openrouter.ai/api/v1 OPENAI_MODEL=qwen3-coder QWEN_HOME=/r/.clean_room/agents/x qwen --output-format stream-json --approval-mode plan --auth-type openai --model qwen3-coder \"$(cat /r/runs/t1/prompt-1.md)\"", "OPENAI_API_KEY"},
		{"opencode", with(OpenCode, nil),
			`OPENCODE_CONFIG_CONTENT='{"$schema":"https://opencode.ai/config.json","permission":{"bash":"ask","edit":"allow","webfetch":"ask"},"provider":{"cra":{"models":{"qwen3-coder":{}},"name":"cra","npm":"@ai-sdk/openai-compatible","options":{"apiKey":"{env:OPENROUTER_API_KEY}","baseURL":"https://openrouter.ai/api/v1"}}}}' OPENROUTER_API_KEY=**** opencode run --format json --model cra/qwen3-coder --file /r/runs/t1/prompt-1.md -- 'Do the task described in the attached file.'`, "OPENROUTER_API_KEY"},
		{"aider", with(Aider, func(p *Profile) {
			p.ExtraArgs = []string{"--map-tokens", "1024", "--read", "{worktree}/CONVENTIONS.md"}
		}),
			"OPENAI_API_KEY=**** aider --message-file /r/runs/t1/prompt-1.md --yes-always --no-pretty --no-stream --no-auto-commits --no-gitignore --no-check-update --no-show-release-notes --analytics-disable --chat-history-file /r/runs/t1/aider.chat.history.md --input-history-file /r/runs/t1/aider.input.history --no-suggest-shell-commands --openai-api-base https://openrouter.ai/api/v1 --model openai/qwen3-coder --map-tokens 1024 --read /r/wt/t1/CONVENTIONS.md", "OPENAI_API_KEY"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Expand(tc.p, testRun())
			if err != nil {
				t.Fatal(err)
			}
			if got := c.String(); got != tc.want {
				t.Errorf("command:\n got %s\nwant %s", got, tc.want)
			}
			for _, a := range c.Args {
				if strings.Contains(a, secret) {
					t.Errorf("the key is in argv: %q", a)
				}
			}
			env := envMap(c.Env)
			if tc.key != "" && env[tc.key] != secret {
				t.Errorf("%s: got %q, want the key", tc.key, env[tc.key])
			}
			if _, ok := env["AWS_SECRET_ACCESS_KEY"]; ok {
				t.Errorf("a variable outside the base set and env_from reached the agent")
			}
			if env["PATH"] != "/usr/bin" || c.Dir != "/r/wt/t1" {
				t.Errorf("PATH %q, dir %q: want cra's PATH and the worktree", env["PATH"], c.Dir)
			}
		})
	}
}

func TestExpandEnvironment(t *testing.T) {
	p := Profile{Name: "q", Preset: QwenCode, Model: "m", BaseURL: "http://127.0.0.1:8080/v1",
		Env: map[string]string{"QWEN_CODE_MAX_OUTPUT_TOKENS": "4096", "NOTE": "{model} at {base_url} in {worktree}"}, EnvFrom: []string{"GOPATH"}}
	c, err := Expand(p, testRun())
	if err != nil {
		t.Fatal(err)
	}
	env := envMap(c.Env)
	if env["GOPATH"] != "/go" || env["QWEN_CODE_MAX_OUTPUT_TOKENS"] != "4096" || env["NOTE"] != "m at http://127.0.0.1:8080/v1 in /r/wt/t1" {
		t.Errorf("env: got %v", c.Env)
	}
	if env["OPENAI_API_KEY"] != noKey {
		t.Errorf("a profile with no key gives qwen %q, want the placeholder %q", env["OPENAI_API_KEY"], noKey)
	}

	for _, tc := range []struct {
		name string
		p    Profile
		want string
		is   error
	}{
		{"key unset", Profile{Name: "q", Preset: QwenCode, APIKeyEnv: "NOT_SET_ANYWHERE"}, "api_key_env names NOT_SET_ANYWHERE, which is unset or empty: export it", ErrNoKey},
		{"env_from unset", Profile{Name: "q", Preset: QwenCode, EnvFrom: []string{"NOPE"}}, "env_from names NOPE, which cra's environment does not set", nil},
		{"unknown preset", Profile{Name: "q", Preset: "cursor"}, `preset "cursor" is not one of aider, claude-code, codex`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Expand(tc.p, testRun())
			if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Errorf("the error shows the key")
			}
		})
	}
	r := testRun()
	r.StateDir = ""
	if _, err := Expand(Profile{Name: "q", Preset: QwenCode, Isolated: true}, r); err == nil {
		t.Errorf("an isolated profile expanded without a state directory")
	}
}

// TestCommandProfile: a profile with command runs as before, through sh
// with the whole environment, and gets env and env_from too.
func TestCommandProfile(t *testing.T) {
	c, err := Expand(Profile{Name: "s", Command: "./agent.sh {task_id} {worktree}", Env: map[string]string{"MODE": "ci"}}, testRun())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"sh", "-c", "./agent.sh 't1' '/r/wt/t1'"}; !slices.Equal(c.Args, want) {
		t.Errorf("argv: got %q, want %q", c.Args, want)
	}
	env := envMap(c.Env)
	if env["AWS_SECRET_ACCESS_KEY"] != "aws" || env["MODE"] != "ci" || c.Stdin != "" {
		t.Errorf("env %v, stdin %q: want the whole environment plus MODE, no stdin", c.Env, c.Stdin)
	}
}

// TestPrepare writes an isolated qwen state's settings once: a person's
// later edit stays.
func TestPrepare(t *testing.T) {
	r := testRun()
	r.StateDir = filepath.Join(t.TempDir(), "agents", "q")
	c, err := Expand(Profile{Name: "q", Preset: QwenCode, Isolated: true}, r)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Prepare(); err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(r.StateDir, "settings.json")
	if b, err := os.ReadFile(settings); err != nil || !strings.Contains(string(b), `"usageStatisticsEnabled": false`) {
		t.Fatalf("settings: %s, %v", b, err)
	}
	os.WriteFile(settings, []byte(`{"mine": true}`), 0o600)
	if err := c.Prepare(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(settings); string(b) != `{"mine": true}` {
		t.Errorf("Prepare overwrote a person's settings: %s", b)
	}
	if _, err := c.LookPath(); err == nil || !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "npm install -g @qwen-code/qwen-code") {
		t.Errorf("LookPath on a PATH without qwen: got %v, want the install command", err)
	}
}

// TestFromConfig fills a preset profile's endpoint from [models.agent],
// else [models], and the two presets of other protocols from nothing.
func TestFromConfig(t *testing.T) {
	cfg, err := config.Parse([]byte(`
[models]
coding = "qwen3-coder:30b"
reasoning = "qwen3:8b"
base_url = "http://localhost:11434"

[agents.q]
preset = "qwen-code"
state = "isolated"

[agents.c]
preset = "claude-code"

[agents.x]
preset = "codex"
model = "gpt-5-codex"
base_url = "https://api.example/v1"
api_key_env = "EXAMPLE_KEY"
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                  string
		model, base, key      string
		isolated, wantCommand bool
	}{
		{name: "q", model: "qwen3-coder:30b", base: "http://localhost:11434/v1", isolated: true},
		{name: "c"},
		{name: "x", model: "gpt-5-codex", base: "https://api.example/v1", key: "EXAMPLE_KEY"},
	} {
		p, err := FromConfig(cfg, tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if p.Model != tc.model || p.BaseURL != tc.base || p.APIKeyEnv != tc.key || p.Isolated != tc.isolated {
			t.Errorf("%s: got %+v", tc.name, p)
		}
	}
	if _, err := FromConfig(cfg, "nosuch"); err == nil || !strings.Contains(err.Error(), "add [agents.nosuch]") {
		t.Errorf("undefined profile: got %v", err)
	}
	var names []string
	names = append(names, config.AgentPresets...)
	slices.Sort(names)
	if !slices.Equal(names, Presets()) {
		t.Errorf("config knows presets %v, agentcli %v: keep them one list", names, Presets())
	}
}

// TestArgv reads qwen-code's prompt in as its last argument, and gives a
// prompt too long for one argument on standard input instead.
func TestArgv(t *testing.T) {
	r := testRun()
	r.PromptFile = filepath.Join(t.TempDir(), "prompt.md")
	os.WriteFile(r.PromptFile, []byte("Fix the parser.\n"), 0o644)
	c, err := Expand(Profile{Name: "q", Preset: QwenCode, Model: "m", ExtraArgs: []string{"--max-session-turns", "9"}}, r)
	if err != nil {
		t.Fatal(err)
	}
	argv, stdin, err := c.Argv()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"qwen", "--output-format", "stream-json", "--approval-mode", "auto-edit", "--model", "m", "--max-session-turns", "9", "Fix the parser.\n"}; !slices.Equal(argv, want) || stdin != "" {
		t.Errorf("argv %q stdin %q, want %q and none", argv, stdin, want)
	}
	os.WriteFile(r.PromptFile, []byte(strings.Repeat("x", MaxPromptArg+1)), 0o644)
	if argv, stdin, err = c.Argv(); err != nil || stdin != r.PromptFile || argv[len(argv)-1] != "9" {
		t.Errorf("a long prompt: argv ends %q, stdin %q, %v; want it on standard input", argv[len(argv)-1], stdin, err)
	}
	os.Remove(r.PromptFile)
	if _, _, err := c.Argv(); err == nil {
		t.Errorf("no error for a missing prompt file")
	}
}

// Under cra's sandbox, the directories a preset keeps its state in are
// what the sandbox must let it write (its isolated state, or its own
// directories in the home), and codex, whose own sandbox cannot nest in
// Landlock, runs without it.
func TestExpandConfined(t *testing.T) {
	home := t.TempDir()
	r := testRun()
	r.Confined = true
	r.Environ = append(r.Environ, "HOME="+home)
	r.StateDir = filepath.Join(t.TempDir(), "state")
	tests := []struct {
		preset   string
		isolated bool
		writes   []string
	}{
		{Codex, false, []string{filepath.Join(home, ".codex")}},
		{Codex, true, []string{r.StateDir}},
		{QwenCode, false, []string{filepath.Join(home, ".qwen")}},
		{ClaudeCode, false, []string{filepath.Join(home, ".claude")}},
		{GeminiCLI, false, []string{filepath.Join(home, ".gemini")}},
		{Aider, false, []string{filepath.Join(home, ".aider")}},
		{OpenCode, false, []string{filepath.Join(home, ".local/share/opencode"), filepath.Join(home, ".local/state/opencode"), filepath.Join(home, ".cache/opencode"), filepath.Join(home, ".config/opencode")}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s isolated=%v", tc.preset, tc.isolated), func(t *testing.T) {
			c, err := Expand(Profile{Name: "x", Preset: tc.preset, Model: "m", BaseURL: "http://127.0.0.1:9/v1", Isolated: tc.isolated}, r)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.writes, c.Writes); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
			if err := c.Prepare(); err != nil {
				t.Fatal(err)
			}
			for _, d := range c.Writes {
				if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
					t.Errorf("Prepare did not make %s: %v", d, err)
				}
			}
			if tc.preset == Codex && !strings.Contains(c.String(), "--sandbox danger-full-access") {
				t.Errorf("codex under cra's sandbox: %s", c.String())
			}
		})
	}
}
