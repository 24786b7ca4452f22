// Package agentcli runs the agent CLIs people use (Claude Code, Codex,
// Gemini CLI, qwen-code, opencode, Aider) headless, and reads what they
// print (issue 29).
//
// Expand turns an [agents.NAME] profile with a preset into a Command: the
// argv (headless mode, the streaming structured output where the agent has
// one, the endpoint and model flags, the approval mode), the environment
// (a small base set, the variables the profile passes, the endpoint's key
// under the name the agent reads) and how the prompt is passed (stdin or a
// file). The key is only ever read from the variable api_key_env names
// and handed over in the environment; it is never on the command line,
// in a file cra writes, or in Command.String.
//
// A Reader, written to as the agent's output arrives, parses that output
// into a Summary: the final message, files edited, commands run with their
// exit codes, permission denials, errors, turns and token usage, and a
// compact transcript for a reviewer. It classifies what is not the agent's
// fault: a failing model endpoint (5xx, timeouts, reconnects, rate limits)
// and a permission refusal, naming the tool and the setting that allows it.
//
// The flags and formats come from each agent's own documentation and
// source, and the ones CI installs are run for real against
// internal/llm/llmtest (agentcli_cli_test.go): see Versions.
package agentcli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/statedir"
)

// The presets, as [agents.NAME] preset names them.
const (
	ClaudeCode = "claude-code"
	Codex      = "codex"
	GeminiCLI  = "gemini-cli"
	QwenCode   = "qwen-code"
	OpenCode   = "opencode"
	Aider      = "aider"
)

// Versions are the versions of each agent CLI the presets were written
// against; the ones marked tested run in this package's tests.
var Versions = map[string]string{
	ClaudeCode: "2.1.332 (npm @anthropic-ai/claude-code; flags from its docs, not run here)",
	Codex:      "0.171.0 (npm @openai/codex; tested)",
	GeminiCLI:  "0.61.0 (npm @google/gemini-cli; flags from its source, not run here)",
	QwenCode:   "0.24.4 (npm @qwen-code/qwen-code; tested)",
	OpenCode:   "1.18.33 (npm opencode-ai; flags from its docs, not run here)",
	Aider:      "0.86 (PyPI aider-chat; flags from its docs, not run here)",
}

// Profile is an [agents.NAME] entry made ready to expand: a preset's, or
// a command profile's (Command set), with the endpoint defaults filled in
// (FromConfig).
type Profile struct {
	Name    string
	Command string // a command profile's template; "" for a preset
	Preset  string
	// Model, BaseURL and APIKeyEnv: the model, the OpenAI-compatible (or
	// the vendor's) endpoint and the variable holding its key; each may be
	// empty, when the agent uses its own configuration.
	Model, BaseURL, APIKeyEnv string
	Approval                  string // config.ApprovalReadOnly, Edit (the default) or Full
	ExtraArgs                 []string
	Env                       map[string]string
	EnvFrom                   []string
	// Isolated keeps the agent's state (settings, sessions, logs) in
	// Run.StateDir instead of the user's home.
	Isolated bool
}

// FromConfig is the profile [agents.name] of cfg describes, with the
// endpoint defaults of cfg.AgentEndpoint.
func FromConfig(cfg *config.Config, name string) (Profile, error) {
	var a config.Agent
	ok := false
	if cfg != nil {
		a, ok = cfg.Agents[name]
	}
	if !ok {
		return Profile{}, fmt.Errorf("agent profile %q is not defined: add [agents.%s] to %s", name, name, statedir.ConfigFile)
	}
	p := Profile{Name: name, Command: a.Command, Preset: a.Preset, Approval: a.Approval,
		ExtraArgs: a.ExtraArgs, Env: a.Env, EnvFrom: a.EnvFrom, Isolated: a.State == config.AgentStateIsolated}
	if a.Preset != "" {
		p.Model, p.BaseURL, p.APIKeyEnv = cfg.AgentEndpoint(a)
	}
	return p, nil
}

// Run is what one run of a profile gives its expansion.
type Run struct {
	// PromptFile holds the prompt (the processor writes it); Worktree is
	// the working copy the agent runs in.
	PromptFile, Worktree string
	TaskID, Branch       string
	// MCPConfig is the run's MCP configuration for its agent, the
	// {mcp_config} placeholder (issue 31).
	MCPConfig string
	// StateDir is where an isolated profile's agent keeps its state; it
	// is required then, and made by Command.Prepare.
	StateDir string
	// RunDir holds this run's own files (aider's chat history); empty
	// means the directory of PromptFile.
	RunDir string
	// Environ is cra's environment (os.Environ()): the source of the base
	// variables, env_from and the key.
	Environ []string
	// Confined says cra's sandbox confines the agent's writes to its
	// working copy, its temp directory and its state: an agent whose own
	// sandbox cannot run inside it (codex's needs mount namespaces, which
	// Landlock forbids to a confined process) runs without its own.
	Confined bool
}

// Command is an expanded profile: what to start and how.
type Command struct {
	Preset string // "" for a command profile
	Model  string // the model the agent was told to use, "" for its own default
	// Args is the argv, Args[0] the program looked up in PATH.
	Args []string
	// Env is the child's whole environment.
	Env []string
	// Stdin is the file whose content goes to the agent's standard input;
	// "" gives it none.
	Stdin string
	// PromptArg is the file whose text Argv puts in place of the last
	// argument, "" for none.
	PromptArg string
	Dir       string
	// Files are written and Dirs made by Prepare, before the start: the
	// isolated state directory and the settings a headless run needs.
	Files map[string]string
	Dirs  []string
	// Writes are the directories outside its working copy the agent keeps
	// its state in (the isolated state directory, or its own directories
	// in the home): a confined run must be allowed to write them. Prepare
	// makes them.
	Writes []string
	// Secrets are the values String and Mask hide: the key.
	Secrets []string
	// Help is the argv whose output lists Headless, the flags the preset's
	// headless mode relies on: 'cra doctor' checks the installed version
	// has them.
	Help, Headless []string
}

// Preset describes one agent CLI.
type preset struct {
	binary string
	// stdin: the prompt goes on standard input; else it is a file argument.
	stdin bool
	// promptArg: the prompt's text is the last argument (Command.Argv),
	// for an agent that reads its standard input with a deadline.
	promptArg bool
	// expand fills the preset's argv (after the binary) and environment.
	expand func(p Profile, r Run, key string, c *Command, env map[string]string) []string
	// keyEnv is the variable the agent reads the endpoint's key from.
	keyEnv string
	// help is the argv (after the binary) that prints the help listing
	// the headless flags, which are headless.
	help, headless []string
	// last are the arguments after extra_args: the prompt's.
	last func(r Run) []string
	// reader parses the agent's output.
	reader func() parser
	// allow names the setting that lets the agent run a refused tool.
	allow func(tool string) string
	// home are the directories under HOME the agent writes its state to
	// when it is not isolated.
	home []string
}

// presets maps each preset name to its definition (presets.go).
func presetOf(name string) (preset, bool) {
	p, ok := presets()[name]
	return p, ok
}

// Presets are the preset names, sorted.
func Presets() []string {
	var out []string
	for n := range presets() {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Binary is the program a preset runs ("qwen", "codex", …), "" for an
// unknown preset.
func Binary(name string) string {
	p, _ := presetOf(name)
	return p.binary
}

// ErrNoKey is returned when api_key_env names a variable cra's
// environment does not set.
var ErrNoKey = errors.New("the endpoint's key is not in cra's environment")

// baseEnv are the variables every preset's agent gets from cra's
// environment: what a program needs to run, find its tools and reach the
// network, nothing that carries a credential. Others come only by
// env_from.
var baseEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "TMPDIR",
	"TERM", "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
	"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"}

// Expand writes the command that runs profile p for run r.
func Expand(p Profile, r Run) (*Command, error) {
	lookup := envMap(r.Environ)
	values := map[string]string{"model": p.Model, "base_url": p.BaseURL, "prompt_file": r.PromptFile,
		"worktree": r.Worktree, "task_id": r.TaskID, "branch": r.Branch, "mcp_config": r.MCPConfig}
	c := &Command{Preset: p.Preset, Model: p.Model, Dir: r.Worktree, Files: map[string]string{}}
	if p.Command != "" {
		// A command profile runs as it always has: sh -c, the whole
		// environment, plus the profile's own variables.
		a := config.Agent{Command: p.Command}
		c.Args = []string{"sh", "-c", a.ExpandCommand(values)}
		env := lookup
		if err := addProfileEnv(p, values, lookup, env); err != nil {
			return nil, err
		}
		c.Env = envList(env)
		return c, nil
	}
	pr, ok := presetOf(p.Preset)
	if !ok {
		return nil, fmt.Errorf("agent profile %q: preset %q is not one of %s", p.Name, p.Preset, strings.Join(Presets(), ", "))
	}
	if p.Approval == "" {
		p.Approval = config.ApprovalEdit
	}
	if p.Isolated && r.StateDir == "" {
		return nil, fmt.Errorf("agent profile %q keeps its state isolated, but the run has no state directory", p.Name)
	}
	if r.RunDir == "" {
		r.RunDir = filepath.Dir(r.PromptFile)
	}
	key := ""
	if p.APIKeyEnv != "" {
		key = lookup[p.APIKeyEnv]
		if key == "" {
			return nil, fmt.Errorf("agent profile %q: %w: api_key_env names %s, which is unset or empty: export it before starting cra", p.Name, ErrNoKey, p.APIKeyEnv)
		}
		c.Secrets = append(c.Secrets, key)
	}
	env := map[string]string{}
	for _, n := range baseEnv {
		if v, ok := lookup[n]; ok {
			env[n] = v
		}
	}
	if p.Isolated {
		c.Dirs = append(c.Dirs, r.StateDir)
		c.Writes = append(c.Writes, r.StateDir)
	} else if home := env["HOME"]; home != "" {
		for _, d := range pr.home {
			c.Writes = append(c.Writes, filepath.Join(home, d))
		}
	}
	args := pr.expand(p, r, key, c, env)
	for _, a := range p.ExtraArgs {
		args = append(args, expandPlaceholders(a, values))
	}
	if pr.last != nil {
		args = append(args, pr.last(r)...)
	}
	c.Args = append([]string{pr.binary}, args...)
	c.Help = append([]string{pr.binary}, pr.help...)
	c.Headless = pr.headless
	switch {
	case pr.promptArg:
		c.PromptArg = r.PromptFile
		c.Args = append(c.Args, promptMarker)
	case pr.stdin:
		c.Stdin = r.PromptFile
	}
	if err := addProfileEnv(p, values, lookup, env); err != nil {
		return nil, err
	}
	c.Env = envList(env)
	return c, nil
}

// addProfileEnv adds env_from and env to env.
func addProfileEnv(p Profile, values, lookup, env map[string]string) error {
	var missing []string
	for _, n := range p.EnvFrom {
		v, ok := lookup[n]
		if !ok {
			missing = append(missing, n)
			continue
		}
		env[n] = v
	}
	if len(missing) > 0 {
		return fmt.Errorf("agent profile %q: env_from names %s, which cra's environment does not set: export them before starting cra, or remove them from env_from", p.Name, strings.Join(missing, ", "))
	}
	for n, v := range p.Env {
		env[n] = expandPlaceholders(v, values)
	}
	return nil
}

// expandPlaceholders fills {name}s of values in s; others stay.
func expandPlaceholders(s string, values map[string]string) string {
	if !strings.Contains(s, "{") {
		return s
	}
	var pairs []string
	for k, v := range values {
		pairs = append(pairs, "{"+k+"}", v)
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

func envMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			m[k] = v
		}
	}
	return m
}

func envList(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// promptMarker stands in Args for the prompt's text (Command.PromptArg).
const promptMarker = "\x00cra-prompt\x00"

// MaxPromptArg bounds the prompt passed as an argument: Linux refuses a
// single argument over 128 KiB (MAX_ARG_STRLEN). A longer prompt goes on
// standard input.
const MaxPromptArg = 100 << 10

// Argv is the argv to start and the file for standard input ("" for
// none): Args with the prompt's text read in where the preset takes it
// as an argument. Run it just before the start: the prompt file must
// exist.
func (c *Command) Argv() (argv []string, stdin string, err error) {
	if c.PromptArg == "" {
		return append([]string(nil), c.Args...), c.Stdin, nil
	}
	text, err := os.ReadFile(c.PromptArg)
	if err != nil {
		return nil, "", fmt.Errorf("read the prompt: %w", err)
	}
	for _, a := range c.Args {
		switch {
		case a != promptMarker:
			argv = append(argv, a)
		case len(text) <= MaxPromptArg:
			argv = append(argv, string(text))
		default:
			stdin = c.PromptArg
		}
	}
	return argv, stdin, nil
}

// Prepare makes the directories and writes the files the command needs.
// A file that exists is left as it is: a person may have edited the
// settings of an isolated state directory.
func (c *Command) Prepare() error {
	for _, d := range append(append([]string(nil), c.Dirs...), c.Writes...) {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("make the agent's state directory: %w", err)
		}
	}
	names := make([]string, 0, len(c.Files))
	for n := range c.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, err := os.Stat(n); err == nil {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(n), 0o700); err != nil {
			return fmt.Errorf("make the agent's settings directory: %w", err)
		}
		if err := os.WriteFile(n, []byte(c.Files[n]), 0o600); err != nil {
			return fmt.Errorf("write the agent's settings: %w", err)
		}
	}
	return nil
}

// Mask hides the command's secrets in s.
func (c *Command) Mask(s string) string {
	for _, sec := range c.Secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "****")
		}
	}
	return s
}

// String is the command as a person would type it, for --dry-run and the
// run log: the variables it sets beyond the base set, then the quoted
// argv, then the prompt's redirection; secrets masked.
func (c *Command) String() string {
	var b strings.Builder
	base := map[string]bool{}
	for _, n := range baseEnv {
		base[n] = true
	}
	if c.Preset != "" {
		for _, kv := range c.Env {
			if k, v, _ := strings.Cut(kv, "="); !base[k] {
				b.WriteString(k + "=" + shellWord(v))
				b.WriteByte(' ')
			}
		}
	}
	for i, a := range c.Args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a == promptMarker {
			b.WriteString(`"$(cat ` + shellWord(c.PromptArg) + `)"`)
			continue
		}
		b.WriteString(shellWord(a))
	}
	if c.Stdin != "" {
		b.WriteString(" < " + shellWord(c.Stdin))
	}
	return c.Mask(b.String())
}

// shellWord quotes s for sh when it needs it.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// NewReader is the reader of the command's output.
func (c *Command) NewReader() *Reader { return NewReader(c.Preset, c.Model, c.Dir) }

// ErrNotInstalled is returned by LookPath for an agent CLI that is not
// on the agent's PATH.
var ErrNotInstalled = errors.New("the agent CLI is not installed")

// LookPath finds the program of Args[0] on the PATH of the command's own
// environment (the agent's, which may differ from cra's).
func (c *Command) LookPath() (string, error) {
	name := c.Args[0]
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := envMap(c.Env)["PATH"]
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	hint := ""
	if pkg := npmPackages[c.Preset]; pkg != "" {
		hint = fmt.Sprintf(": install it (npm install -g %s) or put its directory on PATH", pkg)
	} else if c.Preset == Aider {
		hint = ": install it (python -m pip install aider-chat) or put its directory on PATH"
	}
	return "", fmt.Errorf("%w: %s is not on PATH (%s)%s", ErrNotInstalled, name, path, hint)
}

// npmPackages are the npm packages of the presets that ship there.
var npmPackages = map[string]string{ClaudeCode: "@anthropic-ai/claude-code", Codex: "@openai/codex", GeminiCLI: "@google/gemini-cli",
	QwenCode: "@qwen-code/qwen-code", OpenCode: "opencode-ai"}
