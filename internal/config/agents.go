package config

import (
	"fmt"
	"sort"
	"strings"
)

// AgentPresets are the agent CLIs an [agents.NAME] preset may name;
// internal/agentcli writes each one's command.
var AgentPresets = []string{"claude-code", "codex", "gemini-cli", "qwen-code", "opencode", "aider"}

// The values of [agents.NAME] approval.
const (
	ApprovalReadOnly = "read-only"
	ApprovalEdit     = "edit"
	ApprovalFull     = "full"
)

// The values of [agents.NAME] state.
const (
	AgentStateHome     = "home"
	AgentStateIsolated = "isolated"
)

// AgentPresetPlaceholders are the names a preset's extra_args and env
// values may use in braces.
var AgentPresetPlaceholders = append([]string{"model", "base_url"}, AgentPlaceholders...)

// secretWords mark an env name whose value is a credential (a word of
// it between underscores): config names the variable that holds it, never
// the value (issue 29 item 2).
var secretWords = []string{"KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "CREDENTIALS"}

// validatePreset checks a preset profile.
func (a Agent) validatePreset(key string) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	known := false
	for _, p := range AgentPresets {
		known = known || p == a.Preset
	}
	if !known {
		add("%s.preset is %q: use one of %s, or give a command instead", key, a.Preset, strings.Join(AgentPresets, ", "))
	}
	switch a.Approval {
	case "", ApprovalReadOnly, ApprovalEdit, ApprovalFull:
	default:
		add("%s.approval is %q: use read-only, edit (the default) or full", key, a.Approval)
	}
	switch a.State {
	case "", AgentStateHome, AgentStateIsolated:
	default:
		add("%s.state is %q: use home (the default) or isolated", key, a.State)
	}
	if a.BaseURL != "" && !httpURL(a.BaseURL) {
		add("%s.base_url %q is not an http(s) URL", key, redactURL(a.BaseURL))
	} else if hasUserInfo(a.BaseURL) {
		add("%s.base_url carries a user or password: keep secrets out of the file, put the key in an environment variable and name it in %s.api_key_env", key, key)
	}
	if a.APIKeyEnv != "" && !envNamePattern().MatchString(a.APIKeyEnv) {
		add("%s.api_key_env is not an environment variable name (name the variable, e.g. OPENROUTER_API_KEY, not the key, which this message leaves out)", key)
	}
	for i, arg := range a.ExtraArgs {
		problems = append(problems, presetPlaceholders(fmt.Sprintf("%s.extra_args[%d]", key, i), arg)...)
		if looksLikeKey(arg) {
			add("%s.extra_args[%d] looks like a key: keys never go on the command line (ps shows it); name the variable in %s.api_key_env", key, i, key)
		}
	}
	problems = append(problems, a.validateEnv(key)...)
	return problems
}

// validateCommandProfile checks the keys a command profile may have
// besides its command: env and env_from; the preset keys do not apply.
func (a Agent) validateCommandProfile(key string) []string {
	var problems []string
	for _, k := range []struct {
		name string
		set  bool
	}{
		{"model", a.Model != ""}, {"base_url", a.BaseURL != ""}, {"api_key_env", a.APIKeyEnv != ""},
		{"approval", a.Approval != ""}, {"extra_args", len(a.ExtraArgs) > 0}, {"state", a.State != ""},
	} {
		if k.set {
			problems = append(problems, fmt.Sprintf("%s.%s applies to a preset only: a command profile passes its own flags in its command (or use preset = \"…\" instead of command)", key, k.name))
		}
	}
	return append(problems, a.validateEnv(key)...)
}

// validateEnv checks env and env_from.
func (a Agent) validateEnv(key string) []string {
	var problems []string
	names := make([]string, 0, len(a.Env))
	for n := range a.Env {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		switch {
		case !envNamePattern().MatchString(n):
			problems = append(problems, fmt.Sprintf("%s.env has %q, which is not an environment variable name", key, n))
		case isSecretName(n) && !strings.Contains(a.Env[n], "{"):
			problems = append(problems, fmt.Sprintf("%s.env.%s holds a value in config.toml: a key never goes in the file; export it and name it in %s.env_from (or %s.api_key_env for the endpoint's key)", key, n, key, key))
		}
		problems = append(problems, presetPlaceholders(key+".env."+n, a.Env[n])...)
	}
	for _, n := range a.EnvFrom {
		if !envNamePattern().MatchString(n) {
			problems = append(problems, fmt.Sprintf("%s.env_from has %q: name environment variables, e.g. [\"GOPATH\"]", key, n))
		}
		if _, ok := a.Env[n]; ok {
			problems = append(problems, fmt.Sprintf("%s sets %s in both env and env_from: keep one", key, n))
		}
	}
	return problems
}

// presetPlaceholders checks the {name}s of a preset's argument or env value.
func presetPlaceholders(key, s string) []string {
	var problems []string
	for rest := s; ; {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			break
		}
		name := rest[i+1 : i+j]
		known := false
		for _, p := range AgentPresetPlaceholders {
			known = known || p == name
		}
		if !known && validPlaceholderName(name) {
			problems = append(problems, fmt.Sprintf("%s uses {%s}: the placeholders are {%s}", key, name, strings.Join(AgentPresetPlaceholders, "}, {")))
		}
		rest = rest[i+j+1:]
	}
	return problems
}

func validPlaceholderName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func isSecretName(name string) bool {
	for _, part := range strings.Split(strings.ToUpper(name), "_") {
		for _, w := range secretWords {
			if part == w {
				return true
			}
		}
	}
	return false
}

// looksLikeKey reports whether an argument carries a credential: a value
// of a flag named like one (--api-key=…) or a string shaped like the keys
// providers issue (sk-…, sk-ant-…, AIza…).
func looksLikeKey(arg string) bool {
	if name, val, ok := strings.Cut(arg, "="); ok && strings.HasPrefix(name, "-") && isSecretName(strings.ReplaceAll(name, "-", "_")) && val != "" && !strings.HasPrefix(val, "{") {
		return true
	}
	for _, p := range []string{"sk-", "sk_", "AIza", "ghp_", "xox"} {
		if strings.HasPrefix(arg, p) && len(arg) >= 20 && !strings.ContainsAny(arg, " /") {
			return true
		}
	}
	return false
}

// AgentEndpoint is the model, endpoint and key variable a preset profile
// runs with: the profile's own values, else [models.agent]'s, else those
// of [models] (its coding model), for the presets that speak OpenAI's
// protocol. Claude Code and Gemini CLI speak their vendors' protocols, so
// they inherit nothing: unset, they use their own login and defaults.
// An Ollama base_url is given with /v1 appended, where Ollama serves its
// OpenAI-compatible API.
func (c *Config) AgentEndpoint(a Agent) (model, baseURL, apiKeyEnv string) {
	model, baseURL, apiKeyEnv = a.Model, a.BaseURL, a.APIKeyEnv
	if a.Preset == "claude-code" || a.Preset == "gemini-cli" || c == nil || c.Models == nil {
		return model, baseURL, apiKeyEnv
	}
	m := c.Models
	if ep := m.Agent; ep != nil {
		if model == "" {
			model = ep.Model
		}
		if ep.BaseURL != "" {
			if baseURL == "" {
				baseURL = openAIBase(ep.Provider, ep.BaseURL)
			}
			if apiKeyEnv == "" && baseURL == openAIBase(ep.Provider, ep.BaseURL) {
				apiKeyEnv = ep.APIKeyEnv
			}
			return model, baseURL, apiKeyEnv
		}
	}
	if model == "" {
		model = m.Coding
	}
	if baseURL == "" && m.BaseURL != "" {
		baseURL = openAIBase(m.Provider, m.BaseURL)
	}
	if apiKeyEnv == "" && m.BaseURL != "" && baseURL == openAIBase(m.Provider, m.BaseURL) {
		apiKeyEnv = m.APIKeyEnv
	}
	return model, baseURL, apiKeyEnv
}

// openAIBase is the OpenAI-compatible base URL of a [models] server.
func openAIBase(provider, base string) string {
	if provider == ProviderOpenAI {
		return base
	}
	return strings.TrimRight(base, "/") + "/v1"
}

// AgentNames are the profiles a task can name: BuiltinAgent first, then
// the [agents.NAME] entries, sorted.
func (c *Config) AgentNames() []string {
	names := []string{}
	if c != nil {
		for n := range c.Agents {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return append([]string{BuiltinAgent}, names...)
}

// AgentDefined checks that name is a profile a task can run with: the
// built-in one or an [agents.NAME] entry; "" is the board's default. c may
// be nil (no config file).
func (c *Config) AgentDefined(name string) error {
	if name == "" || name == BuiltinAgent {
		return nil
	}
	if c != nil {
		if _, ok := c.Agents[name]; ok {
			return nil
		}
	}
	return fmt.Errorf("agent profile %q is not defined: the defined ones are %s; define [agents.%s] in config.toml", name, strings.Join(c.AgentNames(), ", "), name)
}
