package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/agentcli"
	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/llm/llmtest"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/world"
)

// TestRunPreset runs a task with a preset profile, confined: the real
// codex that .ci/run installs edits the working copy with its own
// apply_patch against llmtest; the finish line is its final message, not
// the last line of its JSON stream; the run's summary has the file and
// the tokens, which the task's results keep; the world log has the file
// it edited; the key stays out of the command, the run log, the
// summary and the log.
func TestRunPreset(t *testing.T) {
	bin, err := filepath.Abs(filepath.Join("..", "..", "..", "tools", "agents", "node_modules", ".bin"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(bin, "codex")); err != nil {
		t.Fatalf("codex is not installed in %s: run 'npm install --prefix tools/agents' from the repository root (what .ci/run does)", bin)
	}
	const key = "sk-runner-test-4f1e2d3c4b5a69788796"
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("CRA_RUNNER_KEY", key)
	s := llmtest.NewServer(t)
	s.SetDefault(llmtest.Status(400, "llmtest: no reply scripted for this request"))
	patch := "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: greeting.txt\n+hello\n*** End Patch\nEOF"
	args, _ := json.Marshal(map[string]string{"cmd": patch})
	s.Enqueue(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "exec_command", Arguments: string(args)}}, PromptTokens: 700, CompletionTokens: 9},
		llmtest.Usage("greeting.txt says hello.", 900, 11, 600))
	p, st, _ := newTestProcessor(t, map[string]config.Agent{
		"codex": {Preset: "codex", Model: "test-model", BaseURL: s.OpenAIURL(), APIKeyEnv: "CRA_RUNNER_KEY", State: "isolated"},
	}, 1)
	var recorded []RunUsage
	p.RecordUsage = func(_ context.Context, u RunUsage) error { recorded = append(recorded, u); return nil }
	task := addWith(t, p.Board, "add a greeting", "codex", nil)
	o, err := p.Run(context.Background(), task.ID)
	if err != nil {
		t.Fatal(err)
	}
	log, _ := os.ReadFile(o.LogPath)
	if o.Folder != board.Completed || o.Finish != "exit 0: greeting.txt says hello." {
		t.Fatalf("got %s %q, want completed with the agent's final message\n%s", o.Folder, o.Finish, log)
	}
	if o.Summary == nil || o.SummaryPath == "" {
		t.Fatalf("no summary of the run")
	}
	want := agentcli.Usage{Model: "test-model", Input: 1600, Output: 20, Cached: 600}
	if diff := cmp.Diff([]string{"greeting.txt"}, o.Summary.Files); diff != "" || o.Summary.Usage != want {
		t.Errorf("summary files (-want +got):\n%s\nusage %+v, want %+v\n%s", diff, o.Summary.Usage, want, log)
	}
	if !strings.Contains(o.DiffStat, "greeting.txt") {
		t.Errorf("diff stat %q: the branch lacks the agent's file", o.DiffStat)
	}
	if !strings.HasPrefix(o.Command, "CODEX_HOME="+statedir.At(p.StateDir).Agent("codex")+" CRA_RUNNER_KEY=**** codex exec --json") {
		t.Errorf("command: %s", o.Command)
	}
	got, _, err := st.Get(context.Background(), task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if u := got.Results.Usage; u == nil || *u != (board.Usage{Model: "test-model", Input: 1600, Output: 20, Cached: 600}) {
		t.Errorf("the task's results have usage %+v", u)
	}
	if strings.Contains(got.Results.Output, `"type":`) {
		t.Errorf("the results' output has the JSON framing, not the transcript:\n%s", got.Results.Output)
	}
	if len(recorded) != 1 || recorded[0].RunTaskID != task.ID+".r1" || recorded[0].Total != want || recorded[0].Preset != "codex" {
		t.Errorf("recorded usage %+v, want one run's %+v", recorded, want)
	}
	var events []string
	p.Board.Log.Select(context.Background(), world.Filter{IDs: []string{task.ID}, Kind: world.KindEvent}, func(r *world.Record) error {
		events = append(events, string(r.Entry.Source)+": "+r.Entry.Output)
		return nil
	})
	if !contains(events, "file: edited greeting.txt") {
		t.Errorf("the world log's events of the run: %q, want the file it edited", events)
	}
	summary, _ := os.ReadFile(o.SummaryPath)
	if !strings.Contains(string(summary), `"final": "greeting.txt says hello."`) {
		t.Errorf("summary file: %s", summary)
	}
	for name, text := range map[string]string{"command": o.Command, "run log": string(log), "finish": o.Finish, "summary": string(summary),
		"events": strings.Join(events, "\n"), "output": got.Results.Output} {
		if strings.Contains(text, key) {
			t.Errorf("the key is in the %s", name)
		}
	}
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// fakeAgents puts on PATH, for each preset, a program of its binary's
// name that prints the output agentcli's testdata recorded for a case
// (case: "endpoint" or "refusal") and exits as that output did.
func fakeAgents(t *testing.T, which string) {
	t.Helper()
	bin := t.TempDir()
	for _, preset := range agentcli.Presets() {
		data := filepath.Join("..", "..", "agentcli", "testdata", preset+"-"+which+".out")
		abs, err := filepath.Abs(data)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(abs); err != nil {
			t.Fatalf("no recorded %s output of %s: %v", which, preset, err)
		}
		exit := 0
		if which == "endpoint" {
			exit = 1
		}
		script := fmt.Sprintf("#!/bin/sh\ncat '%s'\nexit %d\n", abs, exit)
		if err := os.WriteFile(filepath.Join(bin, agentcli.Binary(preset)), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// Each preset's failing model endpoint leaves its task in pending for a
// retry after a backoff, with no failure counted and the reason in the
// log; each preset's refusal blocks its task at once, with a need that
// names the tool and the setting that allows it (issue 29 item 5). The
// outputs are the ones agentcli's readers are tested on.
func TestPresetRunsClassified(t *testing.T) {
	for _, which := range []string{"endpoint", "refusal"} {
		t.Run(which, func(t *testing.T) {
			fakeAgents(t, which)
			agents := map[string]config.Agent{}
			for _, preset := range agentcli.Presets() {
				agents[preset] = config.Agent{Preset: preset, Model: "test-model", BaseURL: "http://127.0.0.1:9/v1"}
			}
			p, st, _ := newTestProcessor(t, agents, 1)
			ctx := context.Background()
			// The presets' runs go at once, as a daemon's do: each is
			// mostly waiting on git and the sandbox's launcher.
			presets := agentcli.Presets()
			tasks := make([]*board.Task, len(presets))
			for i, preset := range presets {
				tasks[i] = addWith(t, p.Board, "fix it with "+preset, preset, nil)
			}
			outcomes, errs := make([]*Outcome, len(presets)), make([]error, len(presets))
			var wg sync.WaitGroup
			for i := range presets {
				wg.Go(func() { outcomes[i], errs[i] = p.Run(ctx, tasks[i].ID) })
			}
			wg.Wait()
			for i, preset := range presets {
				task, o, err := tasks[i], outcomes[i], errs[i]
				if err != nil {
					t.Fatal(err)
				}
				got, folder, err := st.Get(ctx, task.ID)
				if err != nil {
					t.Fatal(err)
				}
				a, _, err := p.Board.Log.Lookup(ctx, task.ID)
				if err != nil {
					t.Fatal(err)
				}
				switch which {
				case "endpoint":
					if folder != board.Pending || o.Class != "endpoint failed" || a.Status != world.StatusRetry ||
						!strings.Contains(a.Output, "the agent's model endpoint is failing") {
						t.Errorf("%s: %s, class %q, log %s %q; want pending after a retry naming the endpoint", preset, folder, o.Class, a.Status, a.Output)
					}
					if got.EndpointFailures != 1 || !got.RetryAfter.After(o.FinishedAt) || got.ConsecutiveFailures != 0 {
						t.Errorf("%s: endpoint failures %d, retry after %s (finished %s), failures %d", preset, got.EndpointFailures, got.RetryAfter, o.FinishedAt, got.ConsecutiveFailures)
					}
					// The processor's tick leaves it (and every other
					// preset's task, all in their backoff) alone until then.
					if ids, err := p.Tick(ctx); err != nil || len(ids) != 0 {
						t.Errorf("%s: a tick during the backoff started %v (%v)", preset, ids, err)
					}
				case "refusal":
					if folder != board.FailedBlocked || o.Class != "refused" || a.Status != world.StatusFailed ||
						!strings.Contains(a.Need, "the agent was refused ") || !strings.Contains(a.Need, "[agents."+preset+"]") {
						t.Errorf("%s: %s, class %q, log %s %q need %q; want blocked with what to allow", preset, folder, o.Class, a.Status, a.Output, a.Need)
					}
				}
			}
		})
	}
}

// The endpoint's backoff doubles with each failure in a row, up to its
// bound.
func TestEndpointBackoff(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]time.Duration{1: time.Minute, 2: 2 * time.Minute, 3: 4 * time.Minute, 5: 16 * time.Minute, 6: 30 * time.Minute, 40: 30 * time.Minute} {
		if got := endpointBackoff(n); got != want {
			t.Errorf("endpointBackoff(%d) = %s, want %s", n, got, want)
		}
	}
}

// A profile added to config.toml is used by the next run without a
// restart, and a broken edit keeps the last good configuration (issue 29
// item 6).
func TestProcessorReloadsConfig(t *testing.T) {
	t.Parallel()
	p, st, repo := newTestProcessor(t, nil, 1)
	p.Config.Board.Sandbox = "off" // the file below decides from here
	path := filepath.Join(repo, statedir.Name, statedir.ConfigFile)
	write := func(text string) {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("[board]\nsandbox = \"off\"\n")
	p.Load = func() (*config.Config, error) { return config.Load(statedir.Of(repo).Config()) }
	ctx := context.Background()
	task := addWith(t, p.Board, "greet", "late", nil)
	write("[board]\nsandbox = \"off\"\n\n[agents.late]\ncommand = \"echo added while running\"\n")
	o, err := p.Run(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if o.Folder != board.Completed || o.Finish != "exit 0: added while running" {
		t.Fatalf("got %s %q, want the profile added to config.toml", o.Folder, o.Finish)
	}
	write("[agents.late\ncommand = broken")
	if err := p.Board.Requeue(ctx, task.ID, "again"); err != nil {
		t.Fatal(err)
	}
	if ids, err := p.Tick(ctx); err != nil || len(ids) != 1 {
		t.Fatalf("tick over a broken config.toml started %v (%v)", ids, err)
	}
	p.Wait()
	if _, folder, _ := st.Get(ctx, task.ID); folder != board.Completed {
		t.Errorf("with config.toml broken, the run ended in %s: the last good configuration should have run it", folder)
	}
}
