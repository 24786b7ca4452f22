package preflight

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/agentcli"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/stage"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
)

// Check statuses.
const (
	StatusOK   = "ok"
	StatusFail = "FAIL" // a required check failed
	StatusWarn = "warn" // an optional check failed
	StatusSkip = "skip" // not checked: what it depends on failed
)

// Check is one line of 'cra doctor': what was checked, how it went, and
// for a failure how to fix it.
type Check struct {
	Name     string `json:"name"`
	Status   string `json:"status"`
	Required bool   `json:"required"`
	Detail   string `json:"detail"`
	Fix      string `json:"fix,omitempty"`
}

// doctor collects the checks.
type doctor struct {
	checks []Check
}

func (dr *doctor) ok(name, detail string) {
	dr.checks = append(dr.checks, Check{Name: name, Status: StatusOK, Detail: detail})
}

func (dr *doctor) fail(required bool, name, detail, fix string) {
	status := StatusWarn
	if required {
		status = StatusFail
	}
	dr.checks = append(dr.checks, Check{Name: name, Status: status, Required: required, Detail: detail, Fix: fix})
}

func (dr *doctor) skip(name, detail string) {
	dr.checks = append(dr.checks, Check{Name: name, Status: StatusSkip, Detail: detail})
}

// Doctor runs every check of 'cra doctor' on the repository at root, in
// order: git, config, databases, model servers and models. Model servers
// get timeout each.
func Doctor(ctx context.Context, root string, timeout time.Duration) []Check {
	dr := &doctor{}
	dr.checkGit(ctx, root)
	cfg := dr.checkConfig(root)
	dr.checkDatabases(ctx, root, boardOnly(cfg))
	dr.checkModels(ctx, root, cfg, timeout)
	dr.checkAgents(ctx, root, cfg, timeout)
	dr.checkNotify(cfg)
	dr.checkVerification(cfg)
	return dr.checks
}

// checkVerification says what the recycler verifies a task with
// (DESIGN.md, "Trust": no validation, no full_complete).
func (dr *doctor) checkVerification(cfg *config.Config) {
	if cfg == nil {
		return
	}
	const name = "verification"
	v := cfg.Validation
	allow := cfg.RecyclerSettings().AllowUnvalidated
	switch {
	case v != nil && (v.Test != "" || v.Lint != "" || v.Typecheck != ""):
		var cmds []string
		for _, c := range []struct{ key, cmd string }{{"test", v.Test}, {"lint", v.Lint}, {"typecheck", v.Typecheck}} {
			if c.cmd != "" {
				cmds = append(cmds, fmt.Sprintf("%s = %q", c.key, c.cmd))
			}
		}
		detail := "[validation] " + strings.Join(cmds, ", ") + ", re-run by the recycler in a fresh checkout with the protected files at their base version"
		if n := len(v.Protected); n > 0 {
			detail += fmt.Sprintf(" (and %d protected pattern(s))", n)
		}
		dr.ok(name, detail)
	case allow:
		dr.fail(false, name, "no [validation] command, and recycler.allow_unvalidated = true: the model's word and a diff verify a task",
			"set [validation] test in "+statedir.Name+"/"+statedir.ConfigFile+" and remove allow_unvalidated")
	default:
		dr.fail(false, name, "no [validation] command: the recycler verifies no task that changes files (a claim of completion stays significant_progress)",
			"set [validation] test in "+statedir.Name+"/"+statedir.ConfigFile+" (e.g. test = \"go test ./...\"), or recycler.allow_unvalidated = true to let the model's word stand")
	}
}

// checkAgents checks each preset profile of [agents] (issue 29): its
// command expands (the key's variable is set), its binary is on the
// agent's PATH, that version's help lists the headless flags the preset
// relies on, and the endpoint it points at answers. A command profile
// runs the person's own command and is not checked. Agent checks are
// optional: only the tasks that use a profile need it.
func (dr *doctor) checkAgents(ctx context.Context, root string, cfg *config.Config, timeout time.Duration) {
	if cfg == nil {
		return
	}
	names := make([]string, 0, len(cfg.Agents))
	for n, a := range cfg.Agents {
		if a.Preset != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		a := cfg.Agents[name]
		check := fmt.Sprintf("agent %s (%s)", name, a.Preset)
		p, err := agentcli.FromConfig(cfg, name)
		if err != nil {
			dr.fail(false, check, err.Error(), "fix [agents."+name+"] in "+statedir.ConfigFile)
			continue
		}
		state := statedir.Of(root)
		c, err := agentcli.Expand(p, agentcli.Run{PromptFile: state.Run("doctor").Prompt(1), Worktree: root,
			TaskID: "doctor", Branch: "cra/doctor", StateDir: state.Agent(name), Environ: os.Environ()})
		if err != nil {
			dr.fail(false, check, err.Error(), "set what it names where cra serve starts, or change [agents."+name+"]")
			continue
		}
		path, err := c.LookPath()
		if err != nil {
			dr.fail(false, check, err.Error(), "install "+agentcli.Binary(a.Preset)+" (tested: "+agentcli.Versions[a.Preset]+")")
			continue
		}
		version := firstLine(runOutput(ctx, timeout, path, "--version"))
		help := runOutput(ctx, timeout, path, c.Help[1:]...)
		var missing []string
		for _, f := range c.Headless {
			if !strings.Contains(help, f) {
				missing = append(missing, f)
			}
		}
		if len(missing) > 0 {
			dr.fail(false, check, fmt.Sprintf("%s (%s) does not list %s in '%s': its headless mode differs from the preset's", path, version, strings.Join(missing, ", "), strings.Join(c.Help, " ")),
				"install the version the preset was written for: "+agentcli.Versions[a.Preset])
			continue
		}
		dr.ok(check, fmt.Sprintf("%s, %s, headless flags present; runs: %s", path, version, c.String()))
		if p.BaseURL != "" && a.Preset != agentcli.ClaudeCode && a.Preset != agentcli.GeminiCLI {
			model := p.Model
			if model == "" {
				model = "(the agent's default)" // the client wants a name; listing uses none
			}
			e := &endpoint{model: llm.ModelConfig{Provider: llm.ProviderOpenAI, Model: model, BaseURL: p.BaseURL, APIKeyEnv: p.APIKeyEnv}}
			if p.Model != "" {
				e.models = []endpointModel{{name: "agent " + name, model: p.Model}}
			}
			dr.checkEndpoint(ctx, e, timeout)
		}
	}
}

// runOutput is what a command prints (stdout and stderr) within timeout;
// "" when it cannot run.
func runOutput(ctx context.Context, timeout time.Duration, path string, args ...string) string {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdin = nil
	out, _ := cmd.CombinedOutput()
	return string(out)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if s == "" {
		return "version unknown"
	}
	return s
}

// checkNotify checks what [notify] needs from the environment: the
// webhook's token. Only a configured webhook with a token is checked.
func (dr *doctor) checkNotify(cfg *config.Config) {
	if cfg == nil || cfg.Notify == nil {
		return
	}
	set := cfg.NotifySettings()
	if set.Webhook == "" || set.TokenEnv == "" {
		return
	}
	if os.Getenv(set.TokenEnv) == "" {
		dr.fail(false, "notify webhook token", fmt.Sprintf("%s (notify.webhook_token_env) is empty here: the webhook is not sent", set.TokenEnv),
			fmt.Sprintf("export %s where cra serve starts", set.TokenEnv))
		return
	}
	dr.ok("notify webhook token", set.TokenEnv+" is set")
}

func (dr *doctor) checkGit(ctx context.Context, root string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "--version").Output()
	if err != nil {
		dr.fail(true, "git", "git cannot be run: "+err.Error(), "install git: cra reads history and runs agents in git worktrees")
		return
	}
	dr.ok("git", strings.TrimSpace(string(out)))
	if ok, err := gitx.IsRepo(ctx, root); err != nil || !ok {
		dr.fail(false, "repository", root+" is not a git work tree: no history, co-change or worktrees", "run 'git init' and commit")
		return
	}
	if h, err := gitx.Head(ctx, root); err == nil && h == "" {
		dr.fail(false, "repository", root+" has no commits: cra solve starts its worktree from HEAD, and there is no history to mine", "commit your work (git add -A && git commit -m 'initial')")
		return
	}
	dr.ok("repository", root+" is a git work tree")
}

// checkConfig checks the config file and returns it (nil when missing or
// unreadable).
func (dr *doctor) checkConfig(root string) *config.Config {
	path := statedir.Of(root).Config()
	name := relPath(root, path)
	cfg, err := config.Load(path)
	var se *config.SyntaxError
	switch {
	case errors.As(err, &se):
		dr.fail(true, "config", "parse "+name+": "+se.Err.Error(), "fix that line of "+name)
		return nil
	case err != nil:
		dr.fail(true, "config", err.Error(), "edit "+name+", or replace the value with 'cra init --FLAG VALUE'")
		return nil
	case cfg == nil:
		dr.fail(true, "config", "no "+name, "run 'cra init --coding MODEL --reasoning MODEL --base-url URL'")
		return nil
	}
	dr.ok("config", name+" parses")
	if len(cfg.Unknown) > 0 {
		dr.fail(false, "config keys", "unknown keys, ignored: "+strings.Join(cfg.Unknown, ", "), "correct or remove them in "+name)
	}
	if cfg.Stages != nil && cfg.Stages.Default != "" {
		if _, err := stage.ParseRetrieval(cfg.Stages.Default); err != nil {
			dr.fail(true, "config stages", "[stages] default: "+err.Error(), "run 'cra init --stages scope,precision'")
		}
	}
	return cfg
}

// boardOnly reports whether cfg sets up only the board: agent profiles
// and no [models] of cra's own (the agents bring theirs). Such a set-up
// runs without an index; its agents' prompts then lack cra's context.
func boardOnly(cfg *config.Config) bool {
	return cfg != nil && len(cfg.Agents) > 0 && cfg.Models == nil
}

func (dr *doctor) checkDatabases(ctx context.Context, root string, boardOnly bool) {
	f := store.NewFactory(statedir.Of(root))
	rebuild := "run 'cra index --rebuild " + root + "': it sets the damaged file aside and builds the index anew"
	indexed := false
	if err := CheckCurated(ctx, f, root); errors.Is(err, kb.ErrNotIndexed) {
		if boardOnly {
			dr.fail(false, "index", root+" is not indexed: the board runs, but its agents' prompts get no ## Context section", "run 'cra index "+root+"'")
		} else {
			dr.fail(true, "index", root+" is not indexed", "run 'cra index "+root+"'")
		}
	} else if err != nil {
		dr.fail(true, "index", err.Error(), rebuild)
	} else if curated, err := f.Open(ctx, store.Curated, "", true); err != nil {
		dr.fail(true, "index", err.Error(), rebuild)
	} else {
		defer curated.Close()
		k := kb.New(curated)
		if err := store.QuickCheck(ctx, curated); err != nil {
			dr.fail(true, "index", statedir.Of("").Curated()+" is damaged: "+err.Error(), rebuild)
		} else if r, err := k.Repo(ctx, root); err != nil {
			dr.fail(true, "index", err.Error(), "run 'cra index "+root+"'")
		} else {
			indexed = true
			dr.ok("index", fmt.Sprintf("%d files, last indexed %s", r.Files, r.IndexedAt))
			if promoted, info := CheckEnrichment(ctx, k, r.ID); promoted {
				dr.ok("enrichment", "promoted")
			} else {
				dr.fail(false, "enrichment", info, "run 'cra enrich --promote'; retrieval works without it")
			}
		}
	}
	rawName := statedir.Of("").Raw()
	setAside := "move " + rawName + " aside (it holds cra's records: keep the copy); cra starts a new one"
	raw, err := f.Open(ctx, store.Raw, "", true)
	if errors.Is(err, store.ErrNotExist) {
		if !indexed {
			dr.skip("raw database", "none yet: 'cra index' creates it")
			return
		}
		dr.fail(false, "raw database", "no "+rawName, "re-run 'cra index "+root+"': it creates the file")
		return
	}
	if err != nil {
		dr.fail(true, "raw database", err.Error(), setAside)
		return
	}
	defer raw.Close()
	if err := store.QuickCheck(ctx, raw); err != nil {
		dr.fail(true, "raw database", rawName+" is damaged: "+err.Error(), setAside)
		return
	}
	detail, err := rawSummary(ctx, raw)
	if err != nil {
		dr.fail(true, "raw database", err.Error(), "check "+rawName)
		return
	}
	dr.ok("raw database", detail)
}

// rawSummary describes the raw database: the last index run and the LLM
// calls recorded.
func rawSummary(ctx context.Context, raw *sql.DB) (string, error) {
	c := corpus.New(raw)
	var parts []string
	run, ok, err := c.LastIndexRun(ctx)
	switch {
	case err != nil:
		return "", err
	case !ok:
		parts = append(parts, "no index run")
	default:
		parts = append(parts, fmt.Sprintf("last index run %s at %s (%d files scanned)", run.Status, run.Timestamp, run.FilesScanned))
	}
	if st, err := c.CallStats(ctx); err != nil {
		// A raw database from before migration 0002: counted when next opened for writing.
		parts = append(parts, "LLM calls not counted: "+err.Error())
	} else {
		parts = append(parts, fmt.Sprintf("%d LLM call%s recorded (%d failed or malformed)", st.Calls, plural(st.Calls), st.Failed))
	}
	return strings.Join(parts, "; "), nil
}

// endpoint is one model server and the models cra would ask of it.
type endpoint struct {
	model    llm.ModelConfig // provider, base URL and key of the server
	required bool
	models   []endpointModel
}

type endpointModel struct {
	name     string // what the check is called
	model    string
	required bool
}

func (dr *doctor) checkModels(ctx context.Context, root string, cfg *config.Config, timeout time.Duration) {
	if cfg == nil {
		dr.skip("models", "no config")
		return
	}
	if err := CheckModels(cfg); err != nil {
		dr.fail(true, "models", err.Error(), "run 'cra init' with the flags it names")
	}
	var adapters llm.AdapterSource
	var stages []string
	f := store.NewFactory(statedir.Of(root))
	if curated, err := f.Open(ctx, store.Curated, "", true); err == nil {
		defer curated.Close()
		k := kb.New(curated)
		adapters = indexAdapters(k)
		stages, _ = k.ActiveAdapterStages(ctx)
	}
	router := llm.NewRouter(cfg, adapters)
	var endpoints []*endpoint
	add := func(m llm.ModelConfig, name string, required bool) {
		for _, e := range endpoints {
			if e.model.Provider == m.Provider && e.model.BaseURL == m.BaseURL && e.model.APIKeyEnv == m.APIKeyEnv {
				e.required = e.required || required
				for i, em := range e.models {
					if em.model == m.Model {
						e.models[i].required = em.required || required
						return
					}
				}
				e.models = append(e.models, endpointModel{name: name, model: m.Model, required: required})
				return
			}
		}
		endpoints = append(endpoints, &endpoint{model: m, required: required, models: []endpointModel{{name: name, model: m.Model, required: required}}})
	}
	for _, role := range llm.Roles() {
		required := role == llm.RoleCoding || role == llm.RoleReasoning
		m, err := router.Resolve(ctx, role, "")
		if err != nil {
			continue // a missing model or server: the models check above said which
		}
		if m.Source == "reasoning" {
			continue // a supervisor or summarizer without a table of its own
		}
		if required && m.Provider == llm.ProviderOllama && m.ContextWindow == 0 {
			dr.fail(true, "context window "+string(role), "none configured: Ollama would silently truncate long prompts to its default window",
				fmt.Sprintf("run 'cra init --%s-context-window N', or set budget.context_window", role))
		}
		add(m, string(role)+" model", required)
	}
	var overrides []string
	if cfg.Models != nil {
		for stage := range cfg.Models.Overrides {
			overrides = append(overrides, stage)
		}
	}
	sort.Strings(overrides)
	for _, stage := range overrides {
		if m, err := router.Resolve(ctx, llm.RoleReasoning, stage); err == nil {
			add(m, "override "+stage, true)
		}
	}
	for _, stage := range stages {
		for _, role := range []llm.Role{llm.RoleReasoning, llm.RoleCoding} {
			if m, err := router.Resolve(ctx, role, stage); err == nil && m.Source == "adapter" {
				add(m, "adapter "+stage, true)
			}
		}
	}
	for _, e := range endpoints {
		dr.checkEndpoint(ctx, e, timeout)
	}
}

func (dr *doctor) checkEndpoint(ctx context.Context, e *endpoint, timeout time.Duration) {
	name := fmt.Sprintf("endpoint %s (%s)", e.model.BaseURL, e.model.Provider)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	names, err := llm.ListModels(ctx, e.model)
	if err != nil {
		detail, fix := endpointProblem(e.model, err)
		if errors.Is(err, context.DeadlineExceeded) {
			detail = fmt.Sprintf("no answer within %s (--timeout)", timeout)
		}
		dr.fail(e.required, name, detail, fix)
		for _, m := range e.models {
			dr.skip(m.name+" "+m.model, "not checked: its server was not reached")
		}
		return
	}
	dr.ok(name, fmt.Sprintf("answers, %d model%s", len(names), plural(len(names))))
	for _, m := range e.models {
		if llm.HasModel(names, m.model) {
			dr.ok(m.name+" "+m.model, "present")
			continue
		}
		fix := "check the model name; the server has: " + listSome(names, 8)
		if e.model.Provider == llm.ProviderOllama {
			fix = "run 'ollama pull " + m.model + "'"
		}
		dr.fail(m.required, m.name+" "+m.model, "not on the server", fix)
	}
}

// endpointProblem says what is wrong with a server that did not list its
// models, and what to do.
func endpointProblem(m llm.ModelConfig, err error) (detail, fix string) {
	detail = err.Error()
	var ce *llm.CallError
	if errors.As(err, &ce) {
		detail = ce.Err.Error()
	}
	where := "models.base_url"
	if m.Role == llm.RoleSupervisor || m.Role == llm.RoleSummarizer {
		where = "models." + string(m.Role) + ".base_url"
	}
	var se *llm.StatusError
	switch {
	case m.APIKeyEnv != "" && strings.Contains(detail, "API key not set"):
		return detail, "export " + m.APIKeyEnv + "=<your key>"
	case errors.As(err, &se) && (se.StatusCode == http.StatusUnauthorized || se.StatusCode == http.StatusForbidden):
		if m.APIKeyEnv == "" {
			return detail, "the server wants an API key: set api_key_env in .clean_room/config.toml and export it"
		}
		return detail, "check the API key in $" + m.APIKeyEnv
	case errors.As(err, &se) && se.StatusCode == http.StatusNotFound:
		if m.Provider == llm.ProviderOllama {
			return detail, "is " + m.BaseURL + " an Ollama server? check " + where + ", or set provider = \"openai\" for an OpenAI-compatible one"
		}
		return detail, "an OpenAI-compatible " + where + " ends in /v1"
	case m.Provider == llm.ProviderOllama:
		return detail, "start the server ('ollama serve') or correct " + where + " in .clean_room/config.toml"
	}
	return detail, "start the server or correct " + where + " in .clean_room/config.toml"
}

// listSome lists up to n names.
func listSome(names []string, n int) string {
	if len(names) == 0 {
		return "no models"
	}
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + fmt.Sprintf(" and %d more", len(names)-n)
}

// relPath shows path relative to base when it is inside it.
func relPath(base, path string) string {
	if r, err := filepath.Rel(base, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// indexAdapters is the index's active adapters as the router reads them;
// workspace.Adapters is the same for commands that open a workspace,
// which this package sits below.
func indexAdapters(k *kb.KnowledgeBase) llm.AdapterSource {
	return llm.AdapterFunc(func(ctx context.Context, stage string) (*llm.Adapter, error) {
		a, err := k.AdapterForStage(ctx, stage)
		if err != nil || a == nil {
			return nil, err
		}
		return &llm.Adapter{ModelTag: a.ModelTag, BaseModel: a.BaseModel}, nil
	})
}
