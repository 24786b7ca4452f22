package runner

import (
	"errors"
	"github.com/cra-dev/cra/internal/board"
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/config"
)

func TestResolveProfile(t *testing.T) {
	t.Parallel()
	agents := map[string]config.Agent{"aider": {Command: "aider --message-file {prompt_file}", Timeout: "10m"}, "qwen": {Preset: "qwen-code", Model: "q"}}
	for _, tc := range []struct {
		name        string
		agent       string
		cfg         *config.Config
		want        string
		wantBuiltin bool
		wantTimeout time.Duration
		wantErr     string
	}{
		{"no config", "", nil, "cra", true, config.DefaultAgentTimeout, ""},
		{"the task's own", "aider", &config.Config{Agents: agents}, "aider", false, 10 * time.Minute, ""},
		{"the board's default", "", &config.Config{Agents: agents, Board: &config.Board{DefaultAgent: "aider"}}, "aider", false, 10 * time.Minute, ""},
		{"the task's over the default", "cra", &config.Config{Agents: agents, Board: &config.Board{DefaultAgent: "aider"}}, "cra", true, config.DefaultAgentTimeout, ""},
		{"a preset", "qwen", &config.Config{Agents: agents}, "qwen", false, config.DefaultAgentTimeout, ""},
		{"unknown", "codex", &config.Config{Agents: agents}, "", false, 0, "define [agents.codex] with a command or a preset in .clean_room/config.toml, or give the task a defined profile (cra, aider, qwen)"},
		{"unknown default", "", &config.Config{Board: &config.Board{DefaultAgent: "claude"}}, "", false, 0, "define [agents.claude]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task := board.NewTask("x")
			task.ID, task.Agent = "t-00000001", tc.agent
			p, err := ResolveProfile(task, tc.cfg)
			if tc.wantErr != "" {
				var pe *ProfileError
				if !errors.As(err, &pe) || !strings.Contains(pe.Need, tc.wantErr) {
					t.Fatalf("got %v, want a ProfileError whose need has %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Name != tc.want || p.Builtin != tc.wantBuiltin || p.Timeout() != tc.wantTimeout {
				t.Errorf("got %s builtin %v timeout %v, want %s %v %v", p.Name, p.Builtin, p.Timeout(), tc.want, tc.wantBuiltin, tc.wantTimeout)
			}
		})
	}
}
