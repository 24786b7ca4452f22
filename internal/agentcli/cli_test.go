package agentcli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/llm/llmtest"
	"github.com/cra-dev/cra/internal/procgroup"
)

// These tests run the real agent CLIs that .ci/run installs from npm at
// the versions tools/agents/package.json pins, each through its preset,
// against llmtest in a temporary git repository: the agent edits the
// working copy with its own tools, and the reader's summary has the
// final message, the files and the token usage. The endpoint's key is a
// fresh random value; no test may find it in the agent's argv
// (/proc/PID/cmdline of every process of its group), its output, the
// dry-run line or the files of its state directory.

// cliDir holds the installed agent CLIs.
var cliDir = filepath.Join("..", "..", "tools", "agents", "node_modules", ".bin")

// installed returns the path of an agent CLI, or fails naming the install.
func installed(t *testing.T, preset string) string {
	t.Helper()
	path, err := filepath.Abs(filepath.Join(cliDir, Binary(preset)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the %s CLI is not installed at %s: run 'npm install --prefix tools/agents' from the repository root (what .ci/run does)", preset, path)
	}
	return path
}

// workRepo is a git repository with hello.txt committed.
func workRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "t"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("sh", "-c", "cd '"+dir+"' && git add . && git commit -qm init").CombinedOutput(); err != nil {
		t.Fatalf("commit: %v\n%s", err, out)
	}
	return dir
}

// cliRun is one run of an agent CLI.
type cliRun struct {
	sum    Summary
	exit   int
	output []byte
	cmd    *Command
}

const keyVar = "CRA_TEST_AGENT_KEY"

// runCLI expands profile p in repo, runs the agent with the key in cra's
// environment, and checks that the key shows nowhere but where it belongs.
// before, when set, prepares the state directory first, as a person may.
func runCLI(t *testing.T, p Profile, repo, prompt string, s *llmtest.Server, before func(stateDir string)) cliRun {
	t.Helper()
	bin := installed(t, p.Preset)
	secret := make([]byte, 16)
	rand.Read(secret)
	key := "sk-cra-test-" + hex.EncodeToString(secret)
	runDir := t.TempDir()
	promptFile := filepath.Join(runDir, "prompt.md")
	if err := os.WriteFile(promptFile, []byte(prompt), 0o644); err != nil {
		t.Fatal(err)
	}
	p.APIKeyEnv = keyVar
	environ := append(os.Environ(), keyVar+"="+key, "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	stateDir := filepath.Join(t.TempDir(), "state")
	c, err := Expand(p, Run{PromptFile: promptFile, Worktree: repo, TaskID: "t1", Branch: "cra/t1", StateDir: stateDir, RunDir: runDir, Environ: environ})
	if err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before(stateDir)
	}
	if err := c.Prepare(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s %s", p.Preset, c.String())
	if strings.Contains(c.String(), key) || strings.Contains(strings.Join(c.Args, " "), key) {
		t.Errorf("the key is on the command line: %s", c.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	path, err := c.LookPath()
	if err != nil {
		t.Fatal(err)
	}
	if path != bin {
		t.Errorf("the command runs %s, want the installed %s", path, bin)
	}
	argv, stdin, err := c.Argv()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, path, argv[1:]...)
	cmd.Dir, cmd.Env = c.Dir, c.Env
	procgroup.Own(cmd)
	if stdin != "" {
		in, err := os.Open(stdin)
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		cmd.Stdin = in
	}
	var out bytes.Buffer
	r := c.NewReader()
	w := &lockedWriter{w: []io.Writer{&out, r}}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", c.Args[0], err)
	}
	done := make(chan struct{})
	var argvs []string
	pid := cmd.Process.Pid
	go func() { // the argv of every process of the group, until Wait returns and cancels ctx
		defer close(done)
		for {
			argvs = append(argvs, groupArgv(pid)...)
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	werr := cmd.Wait()
	cancel()
	<-done
	r.Close()
	exit := 0
	if werr != nil {
		exit = -1
		if ee, ok := werr.(*exec.ExitError); ok {
			exit = ee.ExitCode()
		}
	}
	if len(argvs) == 0 {
		t.Errorf("read no argv of the agent's processes from /proc")
	}
	for _, a := range argvs {
		if strings.Contains(a, key) {
			t.Errorf("the key is in a process's argv: %s", a)
		}
	}
	if bytes.Contains(out.Bytes(), []byte(key)) {
		t.Errorf("the key is in the agent's output")
	}
	filepath.Walk(stateDir, func(path string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() && info.Size() < 1<<20 {
			if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(key)) {
				t.Errorf("the key is in the agent's state file %s", path)
			}
		}
		return nil
	})
	used := false
	for _, req := range s.ChatRequests() {
		used = used || req.Header.Get("Authorization") == "Bearer "+key
	}
	if len(s.ChatRequests()) > 0 && !used {
		t.Errorf("no request carried the key from %s as its bearer token: the agent did not get it", keyVar)
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("exit %d, output:\n%s", exit, out.String())
	}
	return cliRun{sum: r.Summary(), exit: exit, output: out.Bytes(), cmd: c}
}

// groupArgv reads the argv of the processes in process group pgid.
func groupArgv(pgid int) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …: comm may hold spaces and parens.
		rest := string(stat[bytes.LastIndexByte(stat, ')')+1:])
		f := strings.Fields(rest)
		if len(f) < 3 || f[2] != strconv.Itoa(pgid) {
			continue
		}
		if argv, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil {
			out = append(out, strings.ReplaceAll(string(argv), "\x00", " "))
		}
	}
	return out
}

type lockedWriter struct {
	mu sync.Mutex
	w  []io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range l.w {
		w.Write(p)
	}
	return len(p), nil
}

func readFileT(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the agent did not leave %s: %v", path, err)
	}
	return string(b)
}

// strictServer is an llmtest server that answers nothing unscripted: an
// agent's unexpected call fails the run instead of getting a reply.
func strictServer(t *testing.T) *llmtest.Server {
	s := llmtest.NewServer(t)
	s.SetModels("test-model")
	s.SetDefault(llmtest.Status(400, "llmtest: no reply scripted for this request"))
	return s
}

// TestQwenCode runs qwen-code: it reads and edits a file and writes a new
// one with its own tools; a shell command it is not allowed is a
// refusal; a rate-limited endpoint is the endpoint's failure.
func TestQwenCode(t *testing.T) {
	t.Parallel()
	profile := func(s *llmtest.Server) Profile {
		return Profile{Name: "qwen", Preset: QwenCode, Model: "test-model", BaseURL: s.OpenAIURL(), Isolated: true}
	}
	t.Run("edits", func(t *testing.T) {
		t.Parallel()
		s, repo := strictServer(t), workRepo(t)
		hello := filepath.Join(repo, "hello.txt")
		s.Enqueue(
			llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "read_file", Arguments: `{"file_path":"` + hello + `"}`}}, PromptTokens: 1000, CompletionTokens: 10},
			llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "edit", Arguments: `{"file_path":"` + hello + `","old_string":"hello","new_string":"hello world"}`}}, PromptTokens: 1100, CompletionTokens: 20, CachedTokens: 800},
			llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Arguments: `{"file_path":"` + filepath.Join(repo, "notes", "new.txt") + `","content":"fresh\n"}`}}, PromptTokens: 1200, CompletionTokens: 30, CachedTokens: 900},
			llmtest.Usage("hello.txt greets the world now.", 1300, 40, 1000),
		)
		run := runCLI(t, profile(s), repo, "Make hello.txt greet the world and add notes/new.txt.", s, nil)
		if run.exit != 0 || run.sum.Classify(run.exit) != Succeeded {
			t.Errorf("exit %d, class %v, want a success", run.exit, run.sum.Classify(run.exit))
		}
		if got := readFileT(t, hello); got != "hello world\n" {
			t.Errorf("hello.txt: got %q, want the agent's edit", got)
		}
		if got := readFileT(t, filepath.Join(repo, "notes", "new.txt")); got != "fresh\n" {
			t.Errorf("notes/new.txt: got %q", got)
		}
		want := brief{Final: "hello.txt greets the world now.", Files: []string{"hello.txt", "notes/new.txt"},
			Usage: Usage{Model: "test-model", Input: 4600, Output: 100, Cached: 2700}, Turns: 4, Class: Succeeded}
		if diff := cmp.Diff(want, briefOf(run.sum, run.exit)); diff != "" {
			t.Errorf("summary (-want +got):\n%s\ntranscript:\n%s", diff, run.sum.Transcript)
		}
	})
	t.Run("refusal", func(t *testing.T) {
		t.Parallel()
		s, repo := strictServer(t), workRepo(t)
		s.Enqueue(llmtest.Call("run_shell_command", map[string]string{"command": "touch made-by-shell"}), llmtest.Text("I could not run it."))
		run := runCLI(t, profile(s), repo, "Create made-by-shell with touch.", s, nil)
		if c := run.sum.Classify(run.exit); c != Refused {
			t.Errorf("class: got %v, want refused; summary %+v", c, run.sum)
		}
		if need := run.sum.Need("qwen"); !strings.Contains(need, "run_shell_command") || !strings.Contains(need, `approval = "full"`) {
			t.Errorf("need: got %q, want the tool and the setting that allows it", need)
		}
		if _, err := os.Stat(filepath.Join(repo, "made-by-shell")); err == nil {
			t.Errorf("the refused command ran")
		}
	})
	t.Run("endpoint", func(t *testing.T) {
		t.Parallel()
		s, repo := strictServer(t), workRepo(t)
		// Retry-After 1: qwen-code 0.24 tries a first call seven times
		// whatever maxRetries says, after 1.5 to 30 s of its own backoff each
		// (over a minute) unless the endpoint names a wait.
		s.SetDefault(llmtest.RateLimited("1"))
		// The settings a person gave the isolated state: no retries of a
		// rate limit in the stream (qwen-code's default waits minutes before
		// it gives up).
		settings := strings.Replace(qwenSettings, `"privacy"`, `"model": {"generationConfig": {"maxRetries": 0}}, "privacy"`, 1)
		run := runCLI(t, profile(s), repo, "Do anything.", s, func(stateDir string) {
			if err := os.MkdirAll(stateDir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(stateDir, "settings.json"), []byte(settings), 0o600); err != nil {
				t.Fatal(err)
			}
		})
		if c := run.sum.Classify(run.exit); c != EndpointFailed || run.exit == 0 {
			t.Errorf("exit %d, class %v, want the endpoint's failure; summary %+v", run.exit, c, run.sum)
		}
	})
}

// TestCodex runs codex exec: it patches a file and adds one with its
// apply_patch, runs a failing command; a command that asks to leave the
// sandbox is a refusal; a failing endpoint is the endpoint's failure.
func TestCodex(t *testing.T) {
	t.Parallel()
	profile := func(s *llmtest.Server) Profile {
		return Profile{Name: "codex", Preset: Codex, Model: "test-model", BaseURL: s.OpenAIURL(), Isolated: true}
	}
	patch := "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: hello.txt\n@@\n-hello\n+hello world\n*** Add File: notes/new.txt\n+fresh\n*** End Patch\nEOF"
	t.Run("edits", func(t *testing.T) {
		t.Parallel()
		s, repo := strictServer(t), workRepo(t)
		s.Enqueue(
			llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "exec_command", Arguments: jsonText(map[string]string{"cmd": patch})}}, PromptTokens: 1000, CompletionTokens: 10, CachedTokens: 100},
			llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "exec_command", Arguments: `{"cmd":"test -f nothing-here"}`}}, PromptTokens: 1100, CompletionTokens: 20, CachedTokens: 200},
			llmtest.Usage("hello.txt greets the world now.", 1200, 30, 300),
		)
		run := runCLI(t, profile(s), repo, "Make hello.txt greet the world and add notes/new.txt.", s, nil)
		if run.exit != 0 || run.sum.Classify(run.exit) != Succeeded {
			t.Errorf("exit %d, class %v, want a success", run.exit, run.sum.Classify(run.exit))
		}
		if got := readFileT(t, filepath.Join(repo, "hello.txt")); got != "hello world\n" {
			t.Errorf("hello.txt: got %q, want the agent's edit", got)
		}
		if got := readFileT(t, filepath.Join(repo, "notes", "new.txt")); got != "fresh\n" {
			t.Errorf("notes/new.txt: got %q", got)
		}
		want := brief{Final: "hello.txt greets the world now.", Files: []string{"hello.txt", "notes/new.txt"},
			Commands: []Shell{{Command: "/bin/bash -lc 'test -f nothing-here'", Exit: 1}},
			Usage:    Usage{Model: "test-model", Input: 3300, Output: 60, Cached: 600}, Turns: 1, Class: Succeeded}
		if diff := cmp.Diff(want, briefOf(run.sum, run.exit)); diff != "" {
			t.Errorf("summary (-want +got):\n%s\ntranscript:\n%s", diff, run.sum.Transcript)
		}
	})
	t.Run("refusal", func(t *testing.T) {
		t.Parallel()
		s, repo := strictServer(t), workRepo(t)
		outside := filepath.Join(t.TempDir(), "outside")
		s.Enqueue(llmtest.Call("exec_command", map[string]string{"cmd": "touch " + outside, "sandbox_permissions": "require_escalated", "justification": "write outside"}),
			llmtest.Text("I could not write outside."))
		run := runCLI(t, profile(s), repo, "Touch a file outside the repository.", s, nil)
		if c := run.sum.Classify(run.exit); c != Refused {
			t.Errorf("class: got %v, want refused; summary %+v", c, run.sum)
		}
		if need := run.sum.Need("codex"); !strings.Contains(need, "exec_command") || !strings.Contains(need, "--add-dir") {
			t.Errorf("need: got %q, want the tool and the settings that allow it", need)
		}
		if _, err := os.Stat(outside); err == nil {
			t.Errorf("the refused command ran")
		}
	})
	t.Run("endpoint", func(t *testing.T) {
		t.Parallel()
		s, repo := strictServer(t), workRepo(t)
		s.SetDefault(llmtest.Status(500, "upstream exploded"))
		p := profile(s)
		// No retries: codex's own back off five times before it gives up.
		p.ExtraArgs = []string{"-c", "model_providers.cra.request_max_retries=0", "-c", "model_providers.cra.stream_max_retries=0"}
		run := runCLI(t, p, repo, "Do anything.", s, nil)
		if c := run.sum.Classify(run.exit); c != EndpointFailed || run.exit == 0 {
			t.Errorf("exit %d, class %v, want the endpoint's failure; summary %+v", run.exit, c, run.sum)
		}
	})
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
