package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/agentcli"
	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/statedir"
)

// Profile is the agent profile a run uses (issue 13 item 4): cra's own
// solve (Builtin), an [agents.NAME] command run by sh -c in the task's
// worktree, or an [agents.NAME] preset whose command agentcli writes
// (issue 29).
type Profile struct {
	Name string
	// Builtin is the profile config.BuiltinAgent: cra's own solve, run as a
	// child process of its own so that Level 1 can track it like any
	// other agent.
	Builtin bool
	// Agent is the [agents.NAME] entry; its Command is empty for Builtin.
	Agent config.Agent
	// CLI is the entry made ready to expand, with the endpoint defaults of
	// [models] (agentcli.FromConfig); unset for Builtin.
	CLI agentcli.Profile
}

// Timeout bounds one run of the profile: its timeout, or
// config.DefaultAgentTimeout.
func (p Profile) Timeout() time.Duration { return p.Agent.AgentTimeout() }

// ProfileError is a task whose profile no configuration defines. The run
// fails with Need as what a person must do.
type ProfileError struct {
	Name string
	Need string
}

func (e *ProfileError) Error() string {
	return fmt.Sprintf("agent profile %q is not defined", e.Name)
}

// ResolveProfile returns the profile task t runs with: its agent field,
// else [board] default_agent, else the built-in config.BuiltinAgent
// (issue 13 item 4). cfg may be nil. A name no [agents.NAME] defines is a
// *ProfileError that names the fix.
func ResolveProfile(t *board.Task, cfg *config.Config) (Profile, error) {
	name := t.Agent
	if name == "" && cfg != nil && cfg.Board != nil {
		name = cfg.Board.DefaultAgent
	}
	if name == "" || name == config.BuiltinAgent {
		// config refuses an [agents.cra]: the built-in profile runs under
		// config.DefaultAgentTimeout, solve's own bounds stopping it first.
		return Profile{Name: config.BuiltinAgent, Builtin: true}, nil
	}
	var agents map[string]config.Agent
	if cfg != nil {
		agents = cfg.Agents
	}
	if a, ok := agents[name]; ok && (strings.TrimSpace(a.Command) != "" || a.Preset != "") {
		cli, err := agentcli.FromConfig(cfg, name)
		if err != nil {
			return Profile{}, err
		}
		return Profile{Name: name, Agent: a, CLI: cli}, nil
	}
	defined := make([]string, 0, len(agents)+1)
	defined = append(defined, config.BuiltinAgent)
	for n := range agents {
		defined = append(defined, n)
	}
	sort.Strings(defined[1:])
	return Profile{}, &ProfileError{Name: name, Need: fmt.Sprintf(
		"define [agents.%s] with a command or a preset in .clean_room/config.toml, or give the task a defined profile (%s): cra task edit %s --agent NAME, then cra task move %s pending",
		name, strings.Join(defined, ", "), t.ID, t.ID)}
}

// caches are the directories outside its working copy the profile's
// agent may write ([agents.NAME] caches), made when missing so that the
// sandbox can allow them.
func (p Profile) caches() ([]string, error) {
	var out []string
	for _, dir := range p.Agent.Caches {
		dir = os.ExpandEnv(dir)
		if rest, ok := strings.CutPrefix(dir, "~/"); ok {
			home, err := os.UserHomeDir()
			if err != nil {
				return nil, fmt.Errorf("[agents.%s] caches %q: %w", p.Name, dir, err)
			}
			dir = filepath.Join(home, rest)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("[agents.%s] caches: %w", p.Name, err)
		}
		out = append(out, dir)
	}
	return out, nil
}

// DryRun is the command run n+1 of task t would start with profile p (a
// dry run: nothing starts, nothing is written), its secrets masked: what
// 'cra task run ID --dry-run' prints. A confined run starts it through
// 'cra sandbox-exec', which the line leaves out.
func DryRun(p Profile, t *board.Task, root, stateDir, executable string, environ []string, confined bool) (string, error) {
	id, run := t.ID, t.Runs+1
	sd := statedir.At(stateDir)
	rd := sd.Run(id)
	work := sd.Worktree(id)
	if p.Builtin {
		if executable == "" {
			executable = "cra"
		}
		c := &agentcli.Command{Args: []string{executable, "solve", "--repo", root, "--task-id", board.RunTaskID(id, run), "--board", "--worktree", work,
			"--task-file", rd.TaskText(run)}}
		return c.String(), nil
	}
	c, err := agentcli.Expand(p.CLI, agentcli.Run{PromptFile: rd.Prompt(run), Worktree: work, TaskID: id, Branch: board.BranchPrefix + id,
		StateDir: sd.Agent(p.Name), RunDir: rd.Path(), Environ: environ, Confined: confined})
	if err != nil {
		return "", err
	}
	return c.String(), nil
}
