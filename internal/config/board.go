package config

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Board is the [board] section: how the daemon's processor runs the task
// board (seed 004).
type Board struct {
	// DefaultAgent is the profile a task without its own agent runs with:
	// BuiltinAgent or a name under [agents]. Unset means BuiltinAgent.
	DefaultAgent string `toml:"default_agent,omitempty"`
	// MaxParallel bounds the runs at once; unset means 1.
	MaxParallel *int `toml:"max_parallel,omitempty"`
	// Sandbox is whether agents and validation commands run confined
	// (package sandbox): "required" (unset: refused where they cannot
	// be) or "off" (unconfined, with a warning on every run).
	Sandbox string `toml:"sandbox,omitempty"`
}

// SandboxOff says [board] sandbox = "off": runs go unconfined.
func (c *Config) SandboxOff() bool { return c != nil && c.Board != nil && c.Board.Sandbox == "off" }

// Agent is one [agents.NAME] profile: any command-line coding agent the
// processor can run in a task's worktree (aider, claude -p, codex exec, a
// script). A profile gives either Command, a shell command of its own, or
// Preset, an agent CLI cra knows how to run headless (see agents.go and
// internal/agentcli).
type Agent struct {
	// Command is a template run by sh -c in the task's worktree. Its
	// placeholders are AgentPlaceholders; the environment also carries
	// CRA_TASK_ID and CRA_RUN_ID, and CRA_MCP_CONFIG ({mcp_config}: the
	// file that gives the agent cra's MCP server, issue 31).
	Command string `toml:"command,omitempty"`
	// Timeout bounds one run, as a Go duration ("30m"); unset means
	// DefaultAgentTimeout.
	Timeout string `toml:"timeout,omitempty"`
	// Caches are the directories outside its working copy the agent may
	// write in its sandbox (its build and package caches, its own state
	// directory): absolute, under ~/, or starting with an environment
	// variable ($GOCACHE), expanded when the run starts.
	Caches []string `toml:"caches,omitempty"`
	// ContextTokens sizes the Context section of the agent's prompt: cra's
	// deterministic context package for the task, in tokens; unset means
	// DefaultContextTokens, 0 leaves the section out.
	ContextTokens *int `toml:"context_tokens,omitempty"`

	// Preset names the agent CLI cra writes the command for: one of
	// AgentPresets.
	Preset string `toml:"preset,omitempty"`
	// Model, BaseURL and APIKeyEnv are the model the agent uses, the
	// endpoint it talks to and the environment variable holding that
	// endpoint's key. Unset, an OpenAI-protocol preset takes them from
	// [models.agent], else from [models] (its coding model).
	Model     string `toml:"model,omitempty"`
	BaseURL   string `toml:"base_url,omitempty"`
	APIKeyEnv string `toml:"api_key_env,omitempty"`
	// Approval is what the agent may do without a person: "edit" (files
	// in its working copy, the default: the least permissive mode that
	// needs no terminal), "read-only" or "full" (every tool, no sandbox).
	Approval string `toml:"approval,omitempty"`
	// ExtraArgs are appended to the preset's command line; they may use
	// the placeholders of AgentPresetPlaceholders.
	ExtraArgs []string `toml:"extra_args,omitempty"`
	// Env sets variables for the agent (values may use the placeholders);
	// EnvFrom passes variables from cra's own environment by name.
	Env     map[string]string `toml:"env,omitempty"`
	EnvFrom []string          `toml:"env_from,omitempty"`
	// State says where a preset's agent keeps its state (settings,
	// sessions, logs): "home" (its own directory in the user's home, the
	// default) or "isolated" (a directory of the profile's under
	// .clean_room/agents/, so a run neither reads nor writes the user's).
	State string `toml:"state,omitempty"`
}

// DefaultContextTokens sizes a prompt's Context section when the profile
// does not.
const DefaultContextTokens = 8000

// ContextBudget is the profile's context_tokens, or DefaultContextTokens.
func (a Agent) ContextBudget() int {
	if a.ContextTokens == nil {
		return DefaultContextTokens
	}
	return *a.ContextTokens
}

// BuiltinAgent is the profile that runs cra's own solve on branch
// cra/<task_id>; it needs no [agents] entry and cannot be redefined.
const BuiltinAgent = "cra"

// DefaultAgentTimeout bounds a run whose profile sets no timeout.
const DefaultAgentTimeout = 30 * time.Minute

// AgentPlaceholders are the names an agent command may use in braces.
var AgentPlaceholders = []string{"prompt_file", "task_id", "worktree", "branch", "mcp_config"}

// agentName says whether name is a profile's name: a lowercase letter,
// then up to 31 lowercase letters, digits, '_' or '-'.
func agentName(name string) bool {
	if len(name) == 0 || len(name) > 32 || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for _, c := range []byte(name[1:]) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// placeholder is a {name} of an agent command, with the shell quote it
// stands in: 0 outside quotes, else the quote byte (single or double).
type placeholder struct {
	start, end int // the braces' bytes
	name       string
	quote      byte
}

// placeholders finds the {name} of cmd as sh reads it: a name of letters,
// digits and '_'; not ${VAR}, find's {}, or an awk program's braces.
func placeholders(cmd string) []placeholder {
	var out []placeholder
	var quote byte
	var outer []byte // the quotes around each $( … ) open, which starts afresh
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			}
		case c == '\\':
			i++ // the next byte is literal (but within single quotes)
			continue
		case c == '$' && i+1 < len(cmd) && cmd[i+1] == '(':
			outer = append(outer, quote)
			quote = 0
			i++
			continue
		case c == ')' && quote == 0 && len(outer) > 0:
			quote, outer = outer[len(outer)-1], outer[:len(outer)-1]
			continue
		case quote == '"' && c == '"', quote == 0 && (c == '\'' || c == '"'):
			if quote == 0 {
				quote = c
			} else {
				quote = 0
			}
			continue
		}
		if c != '{' || i > 0 && cmd[i-1] == '$' {
			continue
		}
		j := i + 1
		for j < len(cmd) && (cmd[j] == '_' || cmd[j] >= 'a' && cmd[j] <= 'z' || cmd[j] >= 'A' && cmd[j] <= 'Z' || cmd[j] >= '0' && cmd[j] <= '9') {
			j++
		}
		if j > i+1 && j < len(cmd) && cmd[j] == '}' {
			out = append(out, placeholder{start: i, end: j + 1, name: cmd[i+1 : j], quote: quote})
			i = j
		}
	}
	return out
}

// AgentTimeout is the profile's timeout, or DefaultAgentTimeout.
func (a Agent) AgentTimeout() time.Duration {
	if d, err := time.ParseDuration(a.Timeout); err == nil && d > 0 {
		return d
	}
	return DefaultAgentTimeout
}

// ExpandCommand fills the placeholders of the profile's command. Values
// are quoted for the place they stand in: single-quoted outside quotes,
// escaped within double quotes, so that a worktree path with spaces stays
// one word either way. Other braces are the shell's and stay.
func (a Agent) ExpandCommand(values map[string]string) string {
	var b strings.Builder
	last := 0
	for _, p := range placeholders(a.Command) {
		if !knownPlaceholder(p.name) || p.quote == '\'' {
			continue
		}
		b.WriteString(a.Command[last:p.start])
		v := values[p.name]
		if p.quote == '"' {
			b.WriteString(doubleQuoted(v))
		} else {
			b.WriteString(shellQuote(v))
		}
		last = p.end
	}
	b.WriteString(a.Command[last:])
	return b.String()
}

// doubleQuoted escapes s for sh within double quotes.
func doubleQuoted(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == '\\' || r == '"' || r == '$' || r == '`' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// shellQuote quotes s for sh as one word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// validateBoard checks [board] and [agents] as far as they are present.
func (c *Config) validateBoard() []string {
	var problems []string
	names := make([]string, 0, len(c.Agents))
	for name := range c.Agents {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		a := c.Agents[name]
		key := "agents." + name
		switch {
		case name == BuiltinAgent:
			problems = append(problems, fmt.Sprintf("[%s]: %q is the built-in profile (cra's own solve) and cannot be redefined: pick another name", key, name))
			continue
		case !agentName(name):
			problems = append(problems, fmt.Sprintf("[%s]: a profile name is lowercase letters, digits, '-' or '_', starting with a letter", key))
		}
		switch {
		case a.Preset != "" && strings.TrimSpace(a.Command) != "":
			problems = append(problems, fmt.Sprintf("%s sets both command and preset: keep one (preset writes the command; command runs yours as written)", key))
		case a.Preset != "":
			problems = append(problems, a.validatePreset(key)...)
		case strings.TrimSpace(a.Command) == "":
			problems = append(problems, fmt.Sprintf("%s.command is empty: give the command that runs the agent, e.g. \"aider --yes --message-file {prompt_file}\", or a preset (%s)", key, strings.Join(AgentPresets, ", ")))
		default:
			problems = append(problems, a.validateCommandProfile(key)...)
		}
		for _, p := range placeholders(a.Command) {
			switch {
			case p.quote == '\'' && knownPlaceholder(p.name):
				problems = append(problems, fmt.Sprintf("%s.command puts {%s} within single quotes, where sh takes it as written: leave the quotes out (cra quotes the value)", key, p.name))
			case p.quote != '\'' && !knownPlaceholder(p.name):
				problems = append(problems, fmt.Sprintf("%s.command uses {%s}: the placeholders are {%s} (a shell variable is ${%s})", key, p.name, strings.Join(AgentPlaceholders, "}, {"), p.name))
			}
		}
		for _, dir := range a.Caches {
			if !filepath.IsAbs(dir) && !strings.HasPrefix(dir, "~/") && !strings.HasPrefix(dir, "$") {
				problems = append(problems, fmt.Sprintf("%s.caches has %q: give an absolute path, one under ~/, or one starting with an environment variable ($GOCACHE)", key, dir))
			}
		}
		if a.ContextTokens != nil && *a.ContextTokens < 0 {
			problems = append(problems, fmt.Sprintf("%s.context_tokens is %d: give a size in tokens (8000 by default), or 0 to leave the prompt's Context section out", key, *a.ContextTokens))
		}
		if a.Timeout != "" {
			if d, err := time.ParseDuration(a.Timeout); err != nil || d <= 0 {
				problems = append(problems, fmt.Sprintf("%s.timeout is %q: use a duration like \"30m\"", key, a.Timeout))
			}
		}
	}
	if b := c.Board; b != nil {
		if b.MaxParallel != nil && *b.MaxParallel < 1 {
			problems = append(problems, "board.max_parallel must be >= 1")
		}
		if s := b.Sandbox; s != "" && s != "required" && s != "off" {
			problems = append(problems, fmt.Sprintf("board.sandbox is %q: use \"required\" (the default: agents and validation run confined, or are refused where they cannot be) or \"off\" (unconfined, with a warning on every run)", s))
		}
		if d := b.DefaultAgent; d != "" && d != BuiltinAgent {
			if _, ok := c.Agents[d]; !ok {
				problems = append(problems, fmt.Sprintf("board.default_agent is %q, which no [agents.%s] defines: define it, or use %q", d, d, BuiltinAgent))
			}
		}
	}
	return problems
}

func knownPlaceholder(name string) bool {
	for _, p := range AgentPlaceholders {
		if p == name {
			return true
		}
	}
	return false
}
