//go:build unix

package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/knowledge"
	"github.com/cra-dev/cra/internal/procgroup"
	"github.com/cra-dev/cra/internal/supervise"
	"github.com/cra-dev/cra/internal/world"
)

// newTestProcessor is a processor over a real git repository with one
// commit, its state in repo/.clean_room, and the given [agents] profiles.
func newTestProcessor(t *testing.T, agents map[string]config.Agent, maxParallel int) (*Processor, *board.FileStore, string) {
	t.Helper()
	repo := t.TempDir()
	gittest.Run(t, repo, "init", "-q")
	if err := os.WriteFile(filepath.Join(repo, "README"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, ".gitignore"), []byte(".clean_room/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, repo, "add", "-A")
	gittest.Run(t, repo, "commit", "-qm", "initial")
	state := filepath.Join(repo, ".clean_room")
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := world.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	s := board.NewFileStore(state)
	cfg := &config.Config{Agents: agents, Board: &config.Board{MaxParallel: &maxParallel}}
	p := NewProcessor(board.New(s, l), repo, state, cfg)
	p.Knowledge = func(ctx context.Context, task string) (string, error) {
		k, err := knowledge.Load(repo, task, knowledge.MaxTokens)
		if k == nil || err != nil {
			return "", err
		}
		return k.Text, nil
	}
	p.Grace = 200 * time.Millisecond
	return p, s, repo
}

func addWith(t *testing.T, b *board.Board, title, agent string, edit func(*board.Task)) *board.Task {
	t.Helper()
	task := board.NewTask(title)
	task.Need = "the agent says hello"
	task.Agent = agent
	if edit != nil {
		edit(task)
	}
	got, err := b.Add(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func agentLines(t *testing.T, b *board.Board, id string) []string {
	t.Helper()
	var out []string
	for _, l := range logLines(t, b, id) {
		if strings.Contains(l, "[agent:") {
			out = append(out, l[strings.Index(l, "][")+1:])
		}
	}
	return out
}

func TestRunExitStatus(t *testing.T) {
	t.Parallel()
	p, s, _ := newTestProcessor(t, map[string]config.Agent{
		"hello": {Command: "echo starting; echo hello; exit 0"},
		"three": {Command: "echo trying; echo 'it broke' >&2; exit 3"},
	}, 1)
	ctx := context.Background()
	for _, tc := range []struct {
		agent      string
		wantFolder board.Folder
		wantFinish string
		wantCode   int
	}{
		{"hello", board.Completed, "exit 0: hello", 0},
		{"three", board.Failed, "run failed: exit 3: it broke", 3},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			task := addWith(t, p.Board, "say "+tc.agent, tc.agent, nil)
			o, err := p.Run(ctx, task.ID)
			if err != nil {
				t.Fatal(err)
			}
			if o.Folder != tc.wantFolder || o.Finish != tc.wantFinish {
				t.Errorf("got %s %q, want %s %q", o.Folder, o.Finish, tc.wantFolder, tc.wantFinish)
			}
			if got := folderOn(t, s, task.ID); got != tc.wantFolder {
				t.Errorf("file in %s, want %s", got, tc.wantFolder)
			}
			want := []string{
				"[agent:start][" + task.ID + "] say " + tc.agent + " | need: the agent says hello",
				"[agent:active][" + task.ID + "] run 1: " + tc.agent,
				"[agent:finish][" + task.ID + "] " + tc.wantFinish,
			}
			if got := agentLines(t, p.Board, task.ID); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			got, _, err := s.Get(ctx, task.ID)
			if err != nil {
				t.Fatal(err)
			}
			r := got.Results
			if got.Runs != 1 || r == nil || r.ExitCode == nil || *r.ExitCode != tc.wantCode {
				t.Fatalf("runs %d results %+v, want 1 run, exit %d", got.Runs, r, tc.wantCode)
			}
			if r.Branch != "cra/"+task.ID || r.StartedAt.IsZero() || r.FinishedAt.Before(r.StartedAt) || !strings.Contains(r.Output, "trying") && !strings.Contains(r.Output, "hello") {
				t.Errorf("results %+v", r)
			}
			data, err := os.ReadFile(o.LogPath)
			if err != nil {
				t.Fatal(err)
			}
			if o.LogPath != filepath.Join(p.RunDir(task.ID), "run-1.log") || !strings.Contains(string(data), "\n") {
				t.Errorf("log %s: %q", o.LogPath, data)
			}
		})
	}
}

func TestRunTimeoutStopsTheGroup(t *testing.T) {
	p, s, _ := newTestProcessor(t, map[string]config.Agent{
		// The shell starts a child and waits: the group has two processes.
		// The timeout leaves a loaded machine time to start the sandboxed
		// shell (5 s did not always, with other packages' tests beside
		// it); what the test checks is that nothing outlives it.
		"hang": {Command: "echo $$ > pids; sleep 300 & echo $! >> pids; echo waiting; wait", Timeout: "15s"},
	}, 1)
	task := addWith(t, p.Board, "hang", "hang", nil)
	o, err := p.Run(context.Background(), task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if o.Folder != board.Failed || o.Finish != "run failed: timed out after 15s: waiting" || o.ExitCode != nil {
		t.Errorf("got %s %q exit %v", o.Folder, o.Finish, o.ExitCode)
	}
	if got := folderOn(t, s, task.ID); got != board.Failed {
		t.Errorf("file in %s, want failed", got)
	}
	data, err := os.ReadFile(filepath.Join(o.Worktree, "pids"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(string(data)) {
		pid, _ := strconv.Atoi(f)
		if state, ok := procState(pid); ok && state != 'Z' {
			t.Errorf("process %d is still there (state %c)", pid, state)
		} else if err := syscall.Kill(pid, 0); !ok && !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d is still there (%v)", pid, err)
		}
	}
	id, err := supervise.LoadIdentity(filepath.Join(p.RunDir(task.ID), supervise.RunFileName))
	if err != nil {
		t.Fatal(err)
	}
	if procgroup.Alive(id.PID) {
		t.Errorf("process group %d is still there", id.PID)
	}
}

func TestRunEnvironmentAndIdentity(t *testing.T) {
	t.Parallel()
	p, _, _ := newTestProcessor(t, map[string]config.Agent{
		// The agent reports its own pid, its environment and its
		// placeholders, then waits to be looked at.
		"env": {Command: "echo \"$$ $CRA_TASK_ID $CRA_RUN_ID\" > env.txt; echo {task_id} {branch} > args.txt; cp {prompt_file} prompt.txt; sleep 0.5"},
	}, 1)
	task := addWith(t, p.Board, "look around", "env", func(t *board.Task) { t.Description = "Read the README." })
	o, err := p.Run(context.Background(), task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !o.Completed() {
		t.Fatalf("got %s %q", o.Folder, o.Finish)
	}
	// The agent's uncommitted files are committed on the task's branch.
	repo := p.Root
	env := gittest.Run(t, repo, "show", "cra/"+task.ID+":env.txt")
	f := strings.Fields(env)
	if len(f) != 3 || f[1] != task.ID || f[2] != "1" {
		t.Fatalf("env.txt %q, want pid, %s, 1", env, task.ID)
	}
	if args := gittest.Run(t, repo, "show", "cra/"+task.ID+":args.txt"); args != task.ID+" cra/"+task.ID {
		t.Errorf("args.txt %q", args)
	}
	id, err := supervise.LoadIdentity(filepath.Join(p.RunDir(task.ID), supervise.RunFileName))
	if err != nil {
		t.Fatal(err)
	}
	if strconv.Itoa(id.PID) != f[0] || id.TaskID != task.ID || id.Run != 1 || id.StartTime == 0 {
		t.Errorf("run.json %+v, want pid %s", id, f[0])
	}
	if !strings.Contains(o.DiffStat, "env.txt") {
		t.Errorf("diff stat %q", o.DiffStat)
	}
}

func TestRunReusesTheWorktree(t *testing.T) {
	t.Parallel()
	p, _, _ := newTestProcessor(t, map[string]config.Agent{
		"count": {Command: "echo x >> count.txt; wc -l < count.txt"},
	}, 1)
	ctx := context.Background()
	task := addWith(t, p.Board, "count", "count", nil)
	for n := 1; n <= 2; n++ {
		if n == 2 {
			if _, err := p.Board.Move(ctx, task.ID, board.Pending, "again"); err != nil {
				t.Fatal(err)
			}
		}
		o, err := p.Run(ctx, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		if want := "exit 0: " + strconv.Itoa(n); o.Finish != want || o.Run != n {
			t.Errorf("run %d: got %q (run %d), want %q", n, o.Finish, o.Run, want)
		}
	}
}

func TestRunRefuses(t *testing.T) {
	t.Parallel()
	p, _, _ := newTestProcessor(t, map[string]config.Agent{"ok": {Command: "true"}}, 1)
	ctx := context.Background()
	task := addWith(t, p.Board, "once", "ok", nil)
	if _, err := p.Run(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(ctx, task.ID); !errors.Is(err, ErrBusy) {
		t.Errorf("a second run of a completed task: got %v, want ErrBusy", err)
	}
}

func TestRunUnknownProfile(t *testing.T) {
	t.Parallel()
	p, s, _ := newTestProcessor(t, nil, 1)
	task := addWith(t, p.Board, "who", "aider", nil)
	o, err := p.Run(context.Background(), task.ID)
	if err != nil {
		t.Fatal(err)
	}
	// No run can start until a person defines it: the task is blocked at
	// once, without a review (issue 29 item 6), after its run's end.
	if o.Folder != board.FailedBlocked || !strings.HasPrefix(o.Finish, `run failed: agent profile "aider" is not defined`) || !strings.HasPrefix(o.Need, "define [agents.aider] with a command or a preset") {
		t.Errorf("got %s %q need %q", o.Folder, o.Finish, o.Need)
	}
	if got := folderOn(t, s, task.ID); got != board.FailedBlocked {
		t.Errorf("file in %s", got)
	}
	if got := agentLines(t, p.Board, task.ID); len(got) < 2 || !strings.Contains(got[len(got)-2], "[agent:finish]") || !strings.Contains(got[len(got)-1], "[agent:failed]") {
		t.Errorf("log %q, want the run's finish, then failed", got)
	}
}

func TestPromptFile(t *testing.T) {
	t.Parallel()
	p, _, repo := newTestProcessor(t, map[string]config.Agent{"ok": {Command: "true"}}, 1)
	ctx := context.Background()
	kdir := filepath.Join(repo, "docs", "knowledge", "conventions")
	if err := os.MkdirAll(kdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(kdir, "errors.md"), []byte("# Errors\n\nWrap errors once per layer.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	task := addWith(t, p.Board, "Fix the parser", "ok", func(t *board.Task) {
		t.Description = "The parser drops the last line."
		t.Notes = "Tried a buffer; it was not enough."
	})
	if _, err := p.Run(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Board.Log.Event(ctx, world.SourceUser, task.ID, "use bufio.Scanner"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Board.Log.Agent(ctx, world.StatusRetry, task.ID, "the last line is still lost", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Board.Rebuild(ctx, false); err != nil {
		t.Fatal(err)
	}
	o, err := p.Run(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if o.PromptPath != filepath.Join(p.RunDir(task.ID), "prompt-2.md") {
		t.Errorf("prompt %s", o.PromptPath)
	}
	data, err := os.ReadFile(o.PromptPath)
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	for _, want := range []string{
		"# Fix the parser\n", "Task " + task.ID + ", run 2.",
		"## Description\n\nThe parser drops the last line.\n",
		"## Done when\n\nthe agent says hello\n",
		"## Latest note\n\nTried a buffer; it was not enough.\n",
		"## Guidance for this run\n\nthe last line is still lost\n",
		"## A person's answer\n\nuse bufio.Scanner\n",
		"## PROJECT KNOWLEDGE\n", "Wrap errors once per layer.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("prompt lacks %q:\n%s", want, got)
		}
	}
}

func TestTickParallelAndOrder(t *testing.T) {
	t.Parallel()
	p, s, _ := newTestProcessor(t, map[string]config.Agent{
		"slow": {Command: "sleep 0.3; echo done"},
	}, 2)
	ctx := context.Background()
	low := addWith(t, p.Board, "low", "slow", func(t *board.Task) { t.Priority = board.Low })
	crit := addWith(t, p.Board, "critical directive", "slow", func(t *board.Task) { t.Kind, t.Priority = board.KindDirective, board.Critical })
	high := addWith(t, p.Board, "high", "slow", func(t *board.Task) { t.Priority = board.High })
	blocked := addWith(t, p.Board, "after low", "slow", func(t *board.Task) { t.After = []string{low.ID} })

	started, err := p.Tick(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{crit.ID, high.ID}; strings.Join(started, ",") != strings.Join(want, ",") {
		t.Errorf("first tick started %v, want %v", started, want)
	}
	again, err := p.Tick(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 0 {
		t.Errorf("a tick at max_parallel started %v", again)
	}
	p.Wait()
	started, err = p.Tick(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{low.ID}; strings.Join(started, ",") != strings.Join(want, ",") {
		t.Errorf("second tick started %v, want %v (%s waits for %s)", started, want, blocked.ID, low.ID)
	}
	p.Wait()
	for _, id := range []string{crit.ID, high.ID, low.ID} {
		if f := folderOn(t, s, id); f != board.Completed {
			t.Errorf("%s in %s", id, f)
		}
	}
	if f := folderOn(t, s, blocked.ID); f != board.Pending {
		t.Errorf("blocked task in %s", f)
	}
}

func TestTickNeverRunsATaskTwice(t *testing.T) {
	t.Parallel()
	p, _, _ := newTestProcessor(t, map[string]config.Agent{
		"slow": {Command: "sleep 0.5"},
	}, 4)
	ctx := context.Background()
	task := addWith(t, p.Board, "one", "slow", nil)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var all []string
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids, err := p.Tick(ctx)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			all = append(all, ids...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	p.Wait()
	if len(all) != 1 {
		t.Errorf("started %v, want %s once", all, task.ID)
	}
	if got := agentLines(t, p.Board, task.ID); len(got) != 3 {
		t.Errorf("log %v", got)
	}
}

func TestRunStoppedByContext(t *testing.T) {
	t.Parallel()
	p, s, _ := newTestProcessor(t, map[string]config.Agent{
		"hang": {Command: "echo up; sleep 300"},
	}, 1)
	task := addWith(t, p.Board, "hang", "hang", nil)
	// Cancelled once the agent runs (its identity is recorded), however
	// long the worktree took to make.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		path := filepath.Join(p.RunDir(task.ID), supervise.RunFileName)
		for ctx.Err() == nil {
			if _, err := os.Stat(path); err == nil {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	o, err := p.Run(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	// cra stopping is not the agent's failure: the run's end is logged,
	// and the task goes back to pending without a review.
	if o.Folder != board.Pending || !strings.HasPrefix(o.Finish, "run failed: stopped: ") {
		t.Errorf("got %s %q", o.Folder, o.Finish)
	}
	if f := folderOn(t, s, task.ID); f != board.Pending {
		t.Errorf("file in %s", f)
	}
	if got := agentLines(t, p.Board, task.ID); len(got) < 2 || !strings.Contains(got[len(got)-2], "[agent:finish]["+task.ID+"] run failed: stopped: ") ||
		!strings.Contains(got[len(got)-1], "[agent:retry]["+task.ID+"] continue: the run was stopped when cra stopped") {
		t.Errorf("log %q, want the run's finish, then a retry", got)
	}
}

func TestCaptureCaps(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "run.log")
	c, err := newCapture(path)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Repeat("a", 1023) + "\n"
	total := HeadBytes + TailBytes + 5*1024
	for written := 0; written < total; written += len(line) {
		c.Write([]byte(line))
	}
	c.Write([]byte("the end\n"))
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > HeadBytes+TailBytes+200 {
		t.Errorf("log is %d bytes", len(data))
	}
	if !strings.Contains(string(data), "bytes of output cut here") || !strings.HasSuffix(string(data), "the end\n") {
		t.Errorf("log lacks the cut marker or the end")
	}
	if got := lastLine(c.Tail(board.MaxOutput), 200); got != "the end" {
		t.Errorf("last line %q", got)
	}
}

func TestLoopRunsEveryTaskThenStops(t *testing.T) {
	t.Parallel()
	p, s, _ := newTestProcessor(t, map[string]config.Agent{"ok": {Command: "echo ok"}}, 2)
	var ids []string
	for _, title := range []string{"one", "two", "three"} {
		ids = append(ids, addWith(t, p.Board, title, "ok", nil).ID)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Loop(ctx, 20*time.Millisecond) }()
	// A bound on the wait, not on the speed: a loaded machine takes its
	// time to start three sandboxed runs.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		left, err := s.List(context.Background(), board.Pending)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) == 0 && p.Running() == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if f := folderOn(t, s, id); f != board.Completed {
			t.Errorf("%s in %s, want completed", id, f)
		}
	}
}

// procState reads a process's state from /proc/<pid>/stat, after the
// command's last ')'; false without /proc or the process.
func procState(pid int) (byte, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	if len(f) == 0 || len(f[0]) != 1 {
		return 0, false
	}
	return f[0][0], true
}

// A run whose task was requeued by a person and started again elsewhere
// does not write its end over the next run's.
func TestSupersededRunLeavesTheNextAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, s, _ := newTestProcessor(t, map[string]config.Agent{"hang": {Command: "echo up; sleep 300"}}, 1)
	task := addWith(t, p.Board, "hang", "hang", nil)
	first, cancel := context.WithCancel(ctx)
	done := make(chan *Outcome, 1)
	go func() {
		o, err := p.Run(first, task.ID)
		if err != nil {
			t.Error(err)
		}
		done <- o
	}()
	runFile := filepath.Join(p.RunDir(task.ID), supervise.RunFileName)
	waitFor(t, func() bool { _, err := os.Stat(runFile); return err == nil })
	// A person requeues it while it runs; another process starts run 2.
	if _, err := p.Board.Move(ctx, task.ID, board.Pending, "again"); err != nil {
		t.Fatal(err)
	}
	other := NewProcessor(p.Board, p.Root, p.StateDir, p.Config)
	other.Grace = p.Grace
	second, cancel2 := context.WithCancel(ctx)
	defer cancel2()
	done2 := make(chan struct{})
	go func() {
		defer close(done2)
		other.Run(second, task.ID)
	}()
	waitFor(t, func() bool { tk, _, err := s.Get(ctx, task.ID); return err == nil && tk.Runs == 2 })
	waitFor(t, func() bool { a, _, _ := p.Board.Log.Lookup(ctx, task.ID); return a.Status == world.StatusActive })
	cancel() // run 1 ends now
	o := <-done
	if !strings.HasPrefix(o.Finish, "superseded: run 2") {
		t.Errorf("run 1 finished %q, want superseded", o.Finish)
	}
	a, _, _ := p.Board.Log.Lookup(ctx, task.ID)
	if a.Status != world.StatusActive || !strings.HasPrefix(a.Output, "run 2:") {
		t.Errorf("the log has %s %q, want run 2 active", a.Status, a.Output)
	}
	if f := folderOn(t, s, task.ID); f != board.InProgress {
		t.Errorf("file in %s, want in-progress (run 2)", f)
	}
	cancel2()
	<-done2
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second) // a bound on the wait, under load
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRunNotesWhatTheWorktreeLacks: a run's log begins with what its
// worktree lacks that the checkout has (ignored dependencies), for the
// person and the reviewer reading why its tests could not run.
func TestRunNotesWhatTheWorktreeLacks(t *testing.T) {
	t.Parallel()
	p, _, repo := newTestProcessor(t, map[string]config.Agent{"work": {Command: "echo working"}}, 1)
	if err := os.MkdirAll(filepath.Join(repo, "node_modules", ".bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	task := addWith(t, p.Board, "work", "work", nil)
	o, err := p.Run(context.Background(), task.ID)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(o.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	body := string(data)
	if !strings.HasPrefix(body, "cra: node_modules is in your checkout but not in the worktree") || !strings.Contains(body, "working\n") {
		t.Errorf("run log:\n%s", data)
	}
}

// TestClaimGoesWithTheRun: a run's claim (starting.json) is gone once the
// run has ended, also when it failed before its agent started, and a
// task another process runs keeps that process's claim.
func TestClaimGoesWithTheRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, _, _ := newTestProcessor(t, map[string]config.Agent{"work": {Command: "echo working"}}, 1)
	claimOf := func(id string) string {
		path, err := supervise.ClaimFile(filepath.Join(p.StateDir, board.RunsDir), id)
		if err != nil {
			t.Fatal(err)
		}
		return path
	}
	ok := addWith(t, p.Board, "work", "work", nil)
	if _, err := p.Run(ctx, ok.ID); err != nil {
		t.Fatal(err)
	}
	failed := addWith(t, p.Board, "work too", "work", nil)
	p.Knowledge = func(context.Context, string) (string, error) { return "", errors.New("docs/knowledge unreadable") }
	o, err := p.Run(ctx, failed.ID)
	if err != nil || o.Folder != board.Failed {
		t.Fatalf("a start that fails: %+v, %v", o, err)
	}
	for _, id := range []string{ok.ID, failed.ID} {
		if _, err := os.Stat(claimOf(id)); !os.IsNotExist(err) {
			t.Errorf("task %s: the run ended, its claim is left: %v", id, err)
		}
	}
	// A task this processor may not start: its begin refuses it, and
	// leaves a claim it did not write alone.
	busy := addWith(t, p.Board, "busy", "work", nil)
	if _, err := p.Board.Move(ctx, busy.ID, board.FailedBlocked, ""); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(claimOf(busy.ID)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(claimOf(busy.ID), []byte(`{"pid":0,"task_id":"x","run":1,"starter_pid":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(ctx, busy.ID); !errors.Is(err, ErrBusy) {
		t.Fatalf("a blocked task: got %v, want ErrBusy", err)
	}
	if _, err := os.Stat(claimOf(busy.ID)); err != nil {
		t.Errorf("another process's claim was removed: %v", err)
	}
}

// TestFinishLoggedWhenFileUnreadable: a run whose task file a hand edit
// broke while it ran still logs its end (the log first), and says how to
// repair the file; the log no longer holds the run active for ever.
func TestFinishLoggedWhenFileUnreadable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, s, _ := newTestProcessor(t, map[string]config.Agent{"slow": {Command: "sleep 1; echo done"}}, 1)
	task := addWith(t, p.Board, "slow", "slow", nil)
	broken := make(chan error, 1)
	go func() {
		for {
			if _, f, _ := s.Get(ctx, task.ID); f == board.InProgress {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		data, err := os.ReadFile(s.Path(task.ID, board.InProgress))
		if err == nil {
			err = os.WriteFile(s.Path(task.ID, board.InProgress), append(data, "notes: [unclosed\n"...), 0o644)
		}
		broken <- err
	}()
	_, err := p.Run(ctx, task.ID)
	if werr := <-broken; werr != nil {
		t.Fatal(werr)
	}
	if err == nil || !strings.Contains(err.Error(), "cra task rebuild") {
		t.Errorf("run: got %v, want an error naming the repair", err)
	}
	if a, _, _ := p.Board.Log.Lookup(ctx, task.ID); a.Status != world.StatusFinish {
		t.Errorf("the log has %s %q, want the run's finish", a.Status, a.Output)
	}
}

func folderOn(t *testing.T, s *board.FileStore, id string) board.Folder {
	t.Helper()
	_, f, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func logLines(t *testing.T, b *board.Board, id string) []string {
	t.Helper()
	var out []string
	err := b.Log.Select(context.Background(), world.Filter{IDs: []string{id}}, func(r *world.Record) error {
		out = append(out, string(r.Raw))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRootWarningGoesToTheLogOnce: a processor whose confined agents run
// as root says once, in its own log, what the sandbox does not cover;
// never in a run's log, where it would be output the agent did not
// write (Level 2 and the recycler read silence from it). Run as another
// user, it says nothing.
func TestRootWarningGoesToTheLogOnce(t *testing.T) {
	t.Parallel()
	p, _, _ := newTestProcessor(t, map[string]config.Agent{"quiet": {Command: "true"}}, 1)
	var logged bytes.Buffer
	p.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	for i := range 2 {
		task := addWith(t, p.Board, fmt.Sprintf("quiet %d", i), "quiet", nil)
		o, err := p.Run(context.Background(), task.ID)
		if err != nil {
			t.Fatal(err)
		}
		if data, err := os.ReadFile(o.LogPath); err != nil || strings.Contains(string(data), "as root") {
			t.Errorf("run %d's log: %q, %v; want no word of root", i, data, err)
		}
	}
	want := 0
	if os.Geteuid() == 0 {
		want = 1
	}
	if got := strings.Count(logged.String(), "agents run as root"); got != want {
		t.Errorf("uid %d: the processor's log says it %d times, want %d:\n%s", os.Geteuid(), got, want, logged.String())
	}
}
