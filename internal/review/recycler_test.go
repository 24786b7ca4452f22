//go:build unix

package review

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/fleet/runner"
	"github.com/cra-dev/cra/internal/flock"
	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/llm/llmtest"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
	"github.com/cra-dev/cra/internal/store/storetest"
	"github.com/cra-dev/cra/internal/supervise"
	"github.com/cra-dev/cra/internal/verdict"
	"github.com/cra-dev/cra/internal/world"
)

// fixture is a real repository with a board, a processor running [agents]
// profiles, a model server and the recycler over them.
type fixture struct {
	repo, state string
	board       *board.Board
	proc        *runner.Processor
	rec         *Recycler
	srv         *llmtest.Server
	raw         *sql.DB
}

// newFixture makes the repository; extra is appended to config.toml
// after its [models] section, which points at the fixture's model server.
func newFixture(t testing.TB, extra string) *fixture {
	t.Helper()
	f := &fixture{repo: t.TempDir(), srv: llmtest.NewServer(t)}
	gittest.Run(t, f.repo, "init", "-q")
	write(t, filepath.Join(f.repo, ".gitignore"), ".clean_room/\n")
	write(t, filepath.Join(f.repo, "README"), "hello\n")
	gittest.Run(t, f.repo, "add", "-A")
	gittest.Run(t, f.repo, "commit", "-qm", "initial")
	f.state = filepath.Join(f.repo, statedir.Name)
	write(t, filepath.Join(f.state, statedir.ConfigFile), fmt.Sprintf("[models]\nreasoning = \"thinker:4b\"\nbase_url = %q\nmax_retries = 0\n\n%s", f.srv.OllamaURL(), extra))
	cfg, err := config.Load(statedir.Of(f.repo).Config())
	if err != nil {
		t.Fatal(err)
	}
	l, err := world.Open(f.state)
	if err != nil {
		t.Fatal(err)
	}
	f.board = board.New(board.NewFileStore(f.state), l)
	f.proc = runner.NewProcessor(f.board, f.repo, f.state, cfg)
	f.proc.Grace = 200 * time.Millisecond
	f.raw, err = store.NewFactory(statedir.At(f.state)).Open(context.Background(), store.Raw, "", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.raw.Close() })
	f.rec = &Recycler{Board: f.board, Root: f.repo, StateDir: f.state,
		Config:   func() (*config.Config, error) { return config.Load(statedir.Of(f.repo).Config()) },
		Recorder: llm.NewRecorder(corpus.New(f.raw))}
	return f
}

func write(t testing.TB, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) add(t *testing.T, title, agent string) *board.Task {
	t.Helper()
	task := board.NewTask(title)
	task.Agent = agent
	task.Need = "it is done"
	got, err := f.board.Add(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func (f *fixture) folder(t *testing.T, id string) board.Folder {
	t.Helper()
	_, folder, err := f.board.Store.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return folder
}

const completeReply = `classification: full_complete
criteria: met
need: none
note:
What was accomplished: did it
Current status: works
Remaining issues or limitations: none
Suggested next actions: none
Validation evidence: ran it`

// A reply that breaks the format twice gets one retry; the review then
// waits, counting nothing, as when the model cannot be reached. Three such
// reviews of one run in a row fall back to the conservative note, which
// counts a failure: a run whose output keeps the model from answering in
// the format (a prompt injection, say) cannot hold its review off for
// ever. Every call is in raw.sqlite under the run's id, with the malformed
// replies as they came, and every review in the history.
func TestMalformedRepliesAreRecorded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "[agents.hi]\ncommand = \"echo hi > hi.txt; echo done\"\n")
	f.srv.Enqueue(llmtest.Text("It went well, I think."), llmtest.Text("classification: done"))
	f.srv.SetDefault(llmtest.Text("still no format"))
	// The reviews go where History keeps them (on a fleet, its
	// database), and the count of malformed waits is read from there.
	kept := t.TempDir()
	f.rec.History = verdict.Files{StateDir: kept}
	task := f.add(t, "say hi", "hi")
	if _, err := f.proc.Run(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	var rv *Review
	for i := range 3 {
		rep, err := f.rec.Tick(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rv = rep.Review; rv == nil || !strings.Contains(rv.Fallback, "malformed twice") || rv.Calls != 2 {
			t.Fatalf("tick %d: got %+v, want a review whose reply was malformed twice, 2 calls", i+1, rv)
		}
		if i < 2 && (rv.Action != Wait || f.folder(t, task.ID) != board.Completed) {
			t.Fatalf("tick %d: got %s, task in %s; want it to wait in completed", i+1, rv.Action, f.folder(t, task.ID))
		}
	}
	if rv.Classification != Uncertain || rv.After != (Streaks{Failure: 1}) || rv.Action != Requeue {
		t.Errorf("third: got %s, streaks %+v and %s, want uncertain, one failure and a retry", rv.Classification, rv.After, rv.Action)
	}
	rows := storetest.Rows(t, f.raw, `SELECT task_id, call_type, role, response FROM llm_calls ORDER BY id`)
	if len(rows) != 6 {
		t.Fatalf("got %d recorded calls, want 6: %v", len(rows), rows)
	}
	for i, want := range []string{"It went well, I think.", "classification: done", "still no format"} {
		r := rows[i]
		if r["task_id"] != board.RunTaskID(task.ID, 1) || r["call_type"] != CallReview || r["role"] != "summarizer" || r["response"] != want {
			t.Errorf("call %d: got %v, want task %s, review, summarizer, %q", i, r, board.RunTaskID(task.ID, 1), want)
		}
	}
	reqs := f.srv.ChatRequests()
	if len(reqs) != 6 || !strings.Contains(reqs[1].Prompt(), "does not follow the format") {
		t.Errorf("the retry does not name the problem: %d requests", len(reqs))
	}
	got, _, err := f.board.Store.Get(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.Notes, "Not sure current status") || !strings.Contains(got.Notes, "Validation evidence:") {
		t.Errorf("the note is not the conservative one:\n%s", got.Notes)
	}
	hist, bad, err := History(kept, task.ID)
	if err != nil || bad != 0 || len(hist) != 3 || hist[0].Action != Wait || hist[1].Action != Wait || hist[2].Action != Requeue {
		t.Errorf("history: %d reviews (%+v), %d bad, %v", len(hist), hist, bad, err)
	}
	if none, _, err := History(f.state, task.ID); none != nil || err != nil {
		t.Errorf("the state directory holds %d reviews (%v), want them in History alone", len(none), err)
	}
}

// The circuit breaker: after breaker_after model errors in a row the
// recycler pauses, says so in the log, and reviews nothing until the
// cool-down ends. Its state is in .clean_room/, so it holds for 'cra
// recycle --once' (a new Recycler each time) and across a daemon's
// restart.
func TestBreakerPausesAfterModelErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "[recycler]\nbreaker_after = 2\nbreaker_cooldown = \"10m\"\n\n[agents.hi]\ncommand = \"echo hi > hi.txt; echo done\"\n")
	f.srv.SetDefault(llmtest.Status(500, "model crashed"))
	now := time.Now()
	clock := func() time.Time { return now }
	f.rec.Now = clock
	var ids []string
	for i := range 3 {
		task := f.add(t, fmt.Sprintf("task %d", i), "hi")
		if _, err := f.proc.Run(ctx, task.ID); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.ID)
	}
	// Each tick is another process's 'cra recycle --once': a new Recycler.
	for range 2 {
		f.rec = f.newRecycler(clock)
		rep, err := f.rec.Tick(ctx)
		if err != nil || rep.Review == nil || !strings.Contains(rep.Review.Fallback, "the model failed") || rep.Review.Action != Wait {
			t.Fatalf("tick: %+v, %v", rep, err)
		}
	}
	if _, err := os.Stat(statedir.At(f.state).RecyclerBreaker()); err != nil {
		t.Fatalf("the breaker is not kept in .clean_room/: %v", err)
	}
	for _, name := range []string{"the same recycler", "a restarted one"} {
		if name == "a restarted one" {
			f.rec = f.newRecycler(clock)
		}
		rep, err := f.rec.Tick(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Review != nil || !rep.PausedUntil.Equal(now.Add(10*time.Minute)) {
			t.Fatalf("%s: got review %v, paused until %v; want none, paused 10m", name, rep.Review, rep.PausedUntil)
		}
	}
	var paused bool
	f.board.Log.Select(ctx, world.Filter{IDs: []string{"recycler"}}, func(r *world.Record) error {
		paused = paused || strings.Contains(r.Entry.Output, "recycler paused for 10m0s after 2 model errors")
		return nil
	})
	if !paused {
		t.Error("the pause is not in the log")
	}
	now = now.Add(11 * time.Minute)
	f.srv.SetDefault(llmtest.Text(completeReply))
	if rep, err := f.rec.Tick(ctx); err != nil || rep.Review == nil || rep.Review.Fallback != "" {
		t.Fatalf("after the cool-down: %+v, %v", rep, err)
	}
}

// newRecycler is a Recycler over f's board and state, as a new process
// (or a restarted daemon) makes it.
func (f *fixture) newRecycler(now func() time.Time) *Recycler {
	return &Recycler{Board: f.board, Root: f.repo, StateDir: f.state, Now: now,
		Config:   func() (*config.Config, error) { return config.Load(statedir.Of(f.repo).Config()) },
		Recorder: f.rec.Recorder}
}

// TestModelOutageIsNotTheAgentsFailure: a review that cannot reach the
// model (500, 429, a timeout) leaves the task where it is, completed or
// failed, counts nothing and requeues nothing; the run is reviewed when
// the model is back.
func TestModelOutageIsNotTheAgentsFailure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		reply   llmtest.Reply
		timeout string
	}{
		{"500", llmtest.Status(500, "model crashed"), ""},
		{"429", llmtest.RateLimited("60"), ""},
		{"timeout", llmtest.Slow(5*time.Second, completeReply), "200ms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			models := ""
			if tc.timeout != "" {
				models = fmt.Sprintf("timeout = %q\n", tc.timeout)
			}
			f := newFixture(t, "[recycler]\nbreaker_after = 100\nallow_unvalidated = true\n\n[agents.ok]\ncommand = \"echo hi > hi.txt; echo done\"\n[agents.bad]\ncommand = \"echo broken; exit 3\"\n")
			if models != "" {
				cfg := filepath.Join(f.state, statedir.ConfigFile)
				data, _ := os.ReadFile(cfg)
				write(t, cfg, strings.Replace(string(data), "max_retries = 0\n", "max_retries = 0\n"+models, 1))
			}
			f.srv.SetDefault(tc.reply)
			done := f.add(t, "good work", "ok")
			failed := f.add(t, "failed run", "bad")
			for _, task := range []*board.Task{done, failed} {
				f.proc.Run(ctx, task.ID)
			}
			lines := func() int {
				n := 0
				f.board.Log.Select(ctx, world.Filter{IDs: []string{done.ID, failed.ID}}, func(*world.Record) error { n++; return nil })
				return n
			}
			before := lines()
			for range 3 {
				rep, err := f.rec.Tick(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if rv := rep.Review; rv == nil || rv.Action != Wait || rv.Fallback == "" {
					t.Fatalf("got %+v, want a review that waits for the model", rep.Review)
				}
			}
			for task, want := range map[*board.Task]board.Folder{done: board.Completed, failed: board.Failed} {
				got, folder, err := f.board.Store.Get(ctx, task.ID)
				if err != nil {
					t.Fatal(err)
				}
				if folder != want || got.Runs != 1 || got.ConsecutiveFailures != 0 || got.ConsecutiveCompletionClaims != 0 || got.Notes != "" {
					t.Errorf("%s: in %s after %d runs, streaks %d/%d, note %q; want %s, 1 run, 0/0, no note",
						task.Title, folder, got.Runs, got.ConsecutiveCompletionClaims, got.ConsecutiveFailures, got.Notes, want)
				}
			}
			if n := lines(); n != before {
				t.Errorf("the log gained %d lines for the tasks, want none (no retry, no review)", n-before)
			}
			// The model is back: the good work is reviewed and counts.
			f.srv.SetDefault(llmtest.Text(completeReply))
			rep, err := f.rec.Tick(ctx)
			if err != nil || rep.Review == nil || rep.Review.TaskID != done.ID || rep.Review.After != (Streaks{Completion: 1}) {
				t.Fatalf("with the model back: %+v, %v; want %s reviewed with one completion", rep.Review, err, done.ID)
			}
		})
	}
}

// A tick reads one task file when the first one is eligible, however many
// wait in completed/, and a task found not eligible is not read again
// until its file changes.
func TestTickReadsFewFiles(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "[recycler]\nenabled_for = [\"bug\"]\n")
	cs := &countingStore{Store: f.board.Store}
	f.board.Store = cs
	f.rec.Board = f.board
	var bug string
	for i := range 50 {
		task := board.NewTask(fmt.Sprintf("task %d", i))
		task.Type = "docs"
		if i == 25 {
			task.Type = "bug"
		}
		got, err := f.board.Add(ctx, task)
		if err != nil {
			t.Fatal(err)
		}
		if i == 25 {
			bug = got.ID
		}
		// Into completed/, as a finished run leaves it.
		for _, e := range []struct {
			s   world.Status
			out string
		}{{world.StatusActive, "run 1: test"}, {world.StatusFinish, "exit 0: ok"}} {
			if _, err := f.board.Log.Agent(ctx, e.s, got.ID, e.out, ""); err != nil {
				t.Fatal(err)
			}
		}
		got.Runs = 1
		got.SetOutput("ok\n")
		// Every type is reviewed; a task a person holds is not.
		got.ProcessorAutoRequeue = i == 25
		if err := f.board.Store.Put(ctx, got, board.Pending); err != nil {
			t.Fatal(err)
		}
		if err := f.board.Store.Move(ctx, got.ID, board.Pending, board.Completed); err != nil {
			t.Fatal(err)
		}
	}
	f.srv.SetDefault(llmtest.Text(completeReply))
	cs.gets = 0
	rep, err := f.rec.Tick(ctx)
	if err != nil || rep.Review == nil || rep.Review.TaskID != bug {
		t.Fatalf("got %+v, %v; want a review of %s", rep, err, bug)
	}
	first := cs.gets
	// The second tick reads the tasks the first did not reach; after
	// that, no tick reads a file until one changes.
	cs.gets = 0
	if rep, err := f.rec.Tick(ctx); err != nil || rep.Review != nil {
		t.Fatalf("second tick: %+v, %v", rep, err)
	}
	if first+cs.gets > 50+2 {
		t.Errorf("two ticks read %d and %d files, more than the 50 tasks and the reviewed one's decision", first, cs.gets)
	}
	cs.gets = 0
	if _, err := f.rec.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if cs.gets != 0 {
		t.Errorf("the third tick read %d files, want 0", cs.gets)
	}
}

// countingStore counts the task files read.
type countingStore struct {
	board.Store
	gets int
}

func (c *countingStore) Get(ctx context.Context, id string) (*board.Task, board.Folder, error) {
	c.gets++
	return c.Store.Get(ctx, id)
}

// Path keeps the file store's paths visible, for the recycler's cache.
func (c *countingStore) Path(id string, f board.Folder) string {
	return c.Store.(*board.FileStore).Path(id, f)
}

// Level 2: a live run with no output and no log line for stale_after is
// stopped, its restart logged as Level 1 counts them, and its task sent
// back to pending with "continue"; the processor that waited for it
// records its results without a finish line of its own.
func TestLevel2RestartsAStaleRun(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "[agents.stuck]\ncommand = \"echo thinking; exec sleep 60\"\n")
	task := f.add(t, "get stuck", "stuck")
	// The run's error is reported by the test, not by its goroutine: a
	// test that stops early (waitRunning gave up) would otherwise be
	// logged to after it ended, which panics. It stops the run and waits.
	runCtx, stopRun := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := f.proc.Run(runCtx, task.ID)
		done <- err
	}()
	defer func() {
		stopRun()
		if err, ok := <-done; ok && err != nil {
			t.Error(err)
		}
	}()
	pid := waitRunning(t, f, task.ID)
	f.rec.Now = func() time.Time { return time.Now().Add(time.Hour) }
	rep, err := f.rec.Tick(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Restarted) != 1 || rep.Restarted[0].ID != task.ID || !strings.HasPrefix(rep.Restarted[0].Reason, "stale: no output and no log line for ") {
		t.Fatalf("restarted %+v, want %s as stale", rep.Restarted, task.ID)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Error(err)
		}
		close(done)
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not end")
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the stale run's process %d is still there (%v)", pid, err)
	}
	if got := f.folder(t, task.ID); got != board.Pending {
		t.Errorf("the task is in %s, want pending", got)
	}
	a, _, err := f.board.Log.Lookup(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != world.StatusRetry || !strings.HasPrefix(a.Output, "continue: the run was stopped, stale") {
		t.Errorf("the log has %s %q, want a retry with continue", a.Status, a.Output)
	}
	var restarts []world.Entry
	f.board.Log.Select(ctx, world.Filter{IDs: []string{task.ID}, Kind: world.KindEvent}, func(r *world.Record) error {
		restarts = append(restarts, r.Entry)
		return nil
	})
	if got := supervise.Restarted(restarts)[task.ID]; len(got) != 1 {
		t.Errorf("Level 1 counts %d restarts, want 1: %v", len(got), restarts)
	}
	// The stopped run's end has a line of its own.
	ended := 0
	for _, e := range restarts {
		if strings.HasPrefix(e.Output, "run 1 ended: run failed: killed") {
			ended++
		}
	}
	if ended != 1 {
		t.Errorf("%d lines of run 1's end, want 1: %v", ended, restarts)
	}
	// The next run's prompt says to continue.
	f.proc.Config.Agents["stuck"] = config.Agent{Command: "echo fine"}
	if _, err := f.proc.Run(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	prompt, err := os.ReadFile(filepath.Join(f.state, board.RunsDir, task.ID, "prompt-2.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(prompt), "continue: the run was stopped, stale") {
		t.Errorf("the next prompt has no guidance to continue:\n%s", prompt)
	}
}

// At Level 1's start limit, Level 2 blocks the task instead, with what a
// person must do.
func TestLevel2BlocksAtTheStartLimit(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "[agents.stuck]\ncommand = \"exec sleep 60\"\n")
	task := f.add(t, "get stuck", "stuck")
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.proc.Run(ctx, task.ID)
	}()
	defer func() { <-done }()
	waitRunning(t, f, task.ID)
	later := time.Now().Add(time.Hour)
	f.rec.Now = func() time.Time { return later }
	f.rec.Policy = supervise.Policy{Limit: 1, Window: 2 * time.Hour}
	if _, err := f.board.Log.Event(ctx, world.SourceSystem, task.ID, "restarted | reason: not running (test)"); err != nil {
		t.Fatal(err)
	}
	rep, err := f.rec.Tick(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Restarted) != 1 || !rep.Restarted[0].Blocked {
		t.Fatalf("restarted %+v, want one blocked", rep.Restarted)
	}
	deadline := time.Now().Add(10 * time.Second)
	for f.folder(t, task.ID) != board.FailedBlocked && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	a, _, _ := f.board.Log.Lookup(ctx, task.ID)
	if a.Status != world.StatusFailed || !strings.Contains(a.Need, "cra answer "+task.ID) {
		t.Errorf("the log has %s need %q, want failed with an answer to give", a.Status, a.Need)
	}
}

// waitRunning waits until task id's run has its identity recorded and
// returns its pid.
func waitRunning(t *testing.T, f *fixture, id string) int {
	t.Helper()
	// A bound on the wait, not on the speed: a loaded machine starts a
	// confined agent in seconds.
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		path, err := supervise.RunFile(filepath.Join(f.state, board.RunsDir), id)
		if err != nil {
			t.Fatal(err)
		}
		if ident, err := supervise.LoadIdentity(path); err == nil && ident.PID > 0 {
			return ident.PID
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("task %s never started running", id)
	return 0
}

// The evidence gate on real runs: a full_complete claim is lowered when
// validation fails, when the diff is empty, or when a test file is
// deleted; it stands when the evidence agrees.
func TestGateOnRealEvidence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, command, validation string
		lowered                   string // "" for none
		noChange                  bool
	}{
		{"evidence agrees", "echo done > out.txt; echo wrote it", "test -f out.txt", "", false},
		{"failing validation", "echo done > out.txt; echo wrote it", "echo FAIL TestX; exit 1", "validation", false},
		{"empty diff", "echo nothing to do", "true", "changes nothing", false},
		{"empty diff of a task that changes nothing", "echo reviewed it", "true", "", true},
		{"deleted test", "rm calc_test.go; echo done > out.txt; echo wrote it", "true", "calc_test.go", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			f := newFixture(t, fmt.Sprintf("[validation]\ntest = %q\n\n[agents.a]\ncommand = %q\n", tc.validation, tc.command))
			write(t, filepath.Join(f.repo, "calc_test.go"), "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif 1+1 != 2 {\n\t\tt.Fatal(\"math\")\n\t}\n}\n")
			gittest.Run(t, f.repo, "add", "-A")
			gittest.Run(t, f.repo, "commit", "-qm", "a test")
			f.srv.SetDefault(llmtest.Text(completeReply))
			task := board.NewTask(tc.name)
			task.Agent, task.Need, task.NoChange = "a", "it is done", tc.noChange
			task, err := f.board.Add(ctx, task)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.proc.Run(ctx, task.ID); err != nil {
				t.Fatal(err)
			}
			rep, err := f.rec.Tick(ctx)
			if err != nil || rep.Review == nil {
				t.Fatalf("tick: %+v, %v", rep, err)
			}
			rv := rep.Review
			if rv.Model != FullComplete {
				t.Fatalf("the model said %q (fallback %q)", rv.Model, rv.Fallback)
			}
			switch {
			case tc.lowered == "" && (rv.Classification != FullComplete || len(rv.Lowered) > 0):
				t.Errorf("got %s, lowered %q; want full_complete", rv.Classification, rv.Lowered)
			case tc.lowered != "" && (rv.Classification != SomeProgress || !strings.Contains(strings.Join(rv.Lowered, "; "), tc.lowered)):
				t.Errorf("got %s, lowered %q; want some_progress because of %q", rv.Classification, rv.Lowered, tc.lowered)
			}
			wantStreak := 0
			if tc.lowered == "" {
				wantStreak = 1
			}
			if rv.After.Completion != wantStreak {
				t.Errorf("completion streak %d, want %d", rv.After.Completion, wantStreak)
			}
		})
	}
}

// A run that exits 0 and says nothing cannot be judged: each review
// counts as an error, so the task reaches a person at failure_threshold
// instead of being requeued for ever.
func TestSilentRunsReachAPerson(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "[recycler]\nfailure_threshold = 2\n\n[agents.quiet]\ncommand = \"true\"\n")
	task := f.add(t, "say nothing", "quiet")
	var last *Review
	for i := range 2 {
		if _, err := f.proc.Run(ctx, task.ID); err != nil {
			t.Fatal(err)
		}
		rep, err := f.rec.Tick(ctx)
		if err != nil || rep.Review == nil {
			t.Fatalf("tick %d: %+v, %v", i, rep, err)
		}
		last = rep.Review
	}
	if last.Fallback != "the run left no output" || last.Action != Block || f.folder(t, task.ID) != board.FailedBlocked {
		t.Errorf("after two silent runs: %s, fallback %q, in %s; want blocked", last.Action, last.Fallback, f.folder(t, task.ID))
	}
	if n := len(f.srv.ChatRequests()); n != 0 {
		t.Errorf("the model was asked %d times about runs with no output", n)
	}
}

// TestRefutedClaimsReachAPerson: an agent that says it is done while the
// tests fail, run after run, has its claim lowered each time and each time
// counted as an error: the task reaches failure_threshold and a person
// instead of cycling for ever.
func TestRefutedClaimsReachAPerson(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "[validation]\ntest = \"echo FAIL TestX; exit 1\"\n\n[recycler]\ncompletion_threshold = 2\nfailure_threshold = 2\n\n[agents.a]\ncommand = \"date >> out.txt; echo all done, tests pass\"\n")
	f.srv.SetDefault(llmtest.Text(completeReply))
	task := f.add(t, "make tests pass", "a")
	var last *Review
	for i := range 2 {
		if _, err := f.proc.Run(ctx, task.ID); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		rep, err := f.rec.Tick(ctx)
		if err != nil || rep.Review == nil {
			t.Fatalf("tick %d: %+v, %v", i+1, rep, err)
		}
		last = rep.Review
	}
	if last.Model != FullComplete || len(last.Lowered) == 0 || last.Action != Block || f.folder(t, task.ID) != board.FailedBlocked {
		t.Errorf("after two claims refuted by failing validation (failure_threshold 2): model %s, lowered %q, %s, streaks %+v, in %s; want blocked",
			last.Model, last.Lowered, last.Action, last.After, f.folder(t, task.ID))
	}
}

// A run that ends on its own before Level 2's signal is left to the
// processor and the recycler: no restart is logged, nothing is requeued.
func TestLevel2LeavesARunThatEnded(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "[agents.stuck]\ncommand = \"exec sleep 60\"\n")
	task := f.add(t, "get stuck", "stuck")
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.proc.Run(ctx, task.ID)
	}()
	defer func() { <-done }()
	waitRunning(t, f, task.ID)
	f.rec.Now = func() time.Time { return time.Now().Add(time.Hour) }
	f.rec.Stop = func(context.Context, supervise.Kill, time.Duration) (bool, error) { return false, nil }
	rep, err := f.rec.Tick(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Restarted) != 0 {
		t.Errorf("restarted %+v, want none", rep.Restarted)
	}
	a, _, _ := f.board.Log.Lookup(ctx, task.ID)
	if a.Status != world.StatusActive {
		t.Errorf("the log has %s, want the run still active", a.Status)
	}
	var events []world.Entry
	f.board.Log.Select(ctx, world.Filter{IDs: []string{task.ID}, Kind: world.KindEvent}, func(r *world.Record) error {
		events = append(events, r.Entry)
		return nil
	})
	if n := len(supervise.Restarted(events)[task.ID]); n != 0 {
		t.Errorf("%d restarts logged, want none", n)
	}
	// Stop the run for the test's end.
	f.rec.Stop = nil
	pid := waitRunning(t, f, task.ID)
	syscall.Kill(-pid, syscall.SIGKILL)
}

// TestEnabledForChangeTakesEffect: every type is reviewed; a type
// enabled_for names is recycled (a complete review sends it back for a
// confirmation run), any other is verified on its first complete review;
// a change of enabled_for to "off" stops the reviews at the next tick.
func TestEnabledForChangeTakesEffect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "[recycler]\nenabled_for = [\"bug\"]\nallow_unvalidated = true\n\n[agents.hi]\ncommand = \"echo hi > hi.txt; echo done\"\n")
	f.srv.SetDefault(llmtest.Text(completeReply))
	add := func(title, typ string) *board.Task {
		task := board.NewTask(title)
		task.Type, task.Agent = typ, "hi"
		task, err := f.board.Add(ctx, task)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.proc.Run(ctx, task.ID); err != nil {
			t.Fatal(err)
		}
		return task
	}
	docs := add("docs work", "docs")
	rep, err := f.rec.Tick(ctx)
	if err != nil || rep.Review == nil || rep.Review.TaskID != docs.ID || rep.Review.Action != Finalize {
		t.Fatalf("a type not recycled: %+v, %v; want %s verified on one complete review", rep, err, docs.ID)
	}
	bug := add("bug work", "bug")
	rep, err = f.rec.Tick(ctx)
	if err != nil || rep.Review == nil || rep.Review.TaskID != bug.ID || rep.Review.Action != Requeue || rep.Review.Entry != Confirmation {
		t.Fatalf("a recycled type: %+v, %v; want %s sent back for a confirmation run", rep, err, bug.ID)
	}
	if _, err := f.proc.Run(ctx, bug.ID); err != nil {
		t.Fatal(err)
	}
	prompt, err := os.ReadFile(statedir.At(f.state).Run(bug.ID).Prompt(2))
	if err != nil || !strings.Contains(string(prompt), Confirmation) {
		t.Errorf("run 2's prompt does not say it is a confirmation run (%v):\n%s", err, prompt)
	}
	cfg, err := os.ReadFile(filepath.Join(f.state, statedir.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(f.state, statedir.ConfigFile), strings.Replace(string(cfg), `enabled_for = ["bug"]`, `enabled_for = "off"`, 1))
	if rep, err := f.rec.Tick(ctx); err != nil || rep.Review != nil {
		t.Fatalf("with enabled_for off: %+v, %v; want no review", rep, err)
	}
}

// enabled_for off reviews nothing, and says so.
func TestRecyclerOff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "[recycler]\nenabled_for = \"off\"\n\n[agents.hi]\ncommand = \"echo hi > hi.txt; echo done\"\n")
	task := f.add(t, "say hi", "hi")
	if _, err := f.proc.Run(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	rep, err := f.rec.Tick(ctx)
	if err != nil || rep.Review != nil || rep.Disabled != "recycler.enabled_for is off" {
		t.Fatalf("got %+v, %v; want no review, disabled", rep, err)
	}
	if got := f.folder(t, task.ID); got != board.Completed {
		t.Errorf("the task is in %s, want completed", got)
	}
}

// While another reader holds the notifications' lock, a tick tells
// nothing and leaves the lines for the holder; once it is free, the
// lines are told, once.
func TestNotifyOneReaderAtATime(t *testing.T) {
	ctx := context.Background()
	out := filepath.Join(t.TempDir(), "told")
	f := newFixture(t, fmt.Sprintf("[notify]\ncommand = 'echo \"$CRA_TASK_EVENT $CRA_TASK_ID\" >> %s'\n", out))
	task := f.add(t, "blocked by hand", "")
	if _, err := f.rec.Tick(ctx); err != nil { // sets the marker at the end
		t.Fatal(err)
	}
	if _, err := f.board.Move(ctx, task.ID, board.FailedBlocked, ""); err != nil {
		t.Fatal(err)
	}
	// A person's own move is not told back: block it the way Level 1 does.
	if _, err := f.board.Log.Event(ctx, world.SourceUser, task.ID, "retry"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.board.Resume(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.board.Block(ctx, task.ID, "start limit reached", "look at it"); err != nil {
		t.Fatal(err)
	}
	held, ok, err := flock.TryLock(filepath.Join(f.state, notifyLock))
	if err != nil || !ok {
		t.Fatalf("take the lock: %v, %v", ok, err)
	}
	rep, err := f.rec.Tick(ctx)
	if err != nil || len(rep.Notified) != 0 {
		t.Fatalf("with the lock held: %+v, %v; want nothing told", rep.Notified, err)
	}
	held.Close()
	for range 2 {
		if _, err := f.rec.Tick(ctx); err != nil {
			t.Fatal(err)
		}
	}
	data, _ := os.ReadFile(out)
	if got := string(data); got != "blocked "+task.ID+"\n" {
		t.Errorf("told %q, want one blocked line", got)
	}
}

// TestNotifyRetries: a notification whose notifier fails (a webhook down)
// is tried again after 30 s, and told once when the notifier is back; it
// is given up a day after the ending.
func TestNotifyRetries(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	out, up := filepath.Join(dir, "told"), filepath.Join(dir, "up")
	f := newFixture(t, fmt.Sprintf("[notify]\ncommand = 'test -f %s || exit 1; echo \"$CRA_TASK_EVENT $CRA_TASK_ID\" >> %s'\n", up, out))
	now := time.Now()
	f.rec.Now = func() time.Time { return now }
	task := blockedAfterMarker(t, f, "blocked")
	rep, err := f.rec.Tick(ctx)
	if err != nil || len(rep.Notified) != 1 || rep.Notified[0].Err == "" {
		t.Fatalf("the notifier down: %+v, %v; want one failed notification", rep.Notified, err)
	}
	if err := os.WriteFile(up, nil, 0o644); err != nil { // it is back
		t.Fatal(err)
	}
	if rep, err := f.rec.Tick(ctx); err != nil || len(rep.Notified) != 0 {
		t.Fatalf("at once: %+v, %v; want the retry to wait", rep.Notified, err)
	}
	now = now.Add(31 * time.Second)
	for range 2 {
		if _, err := f.rec.Tick(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if data, _ := os.ReadFile(out); string(data) != "blocked "+task.ID+"\n" {
		t.Errorf("told %q once the notifier was back, want the blocked task once", data)
	}
	if _, err := os.Stat(filepath.Join(f.state, notifyPending)); !os.IsNotExist(err) {
		t.Errorf("the pending file is left after everything was told: %v", err)
	}

	// Down for good: tried with growing waits, given up after a day.
	os.Remove(up)
	other := f.add(t, "blocked too", "")
	if err := f.board.Block(ctx, other.ID, "start limit reached", "look at it"); err != nil {
		t.Fatal(err)
	}
	tries := 0
	var last *Report
	for range 200 {
		rep, err := f.rec.Tick(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tries += len(rep.Notified)
		last = rep
		if _, err := os.Stat(filepath.Join(f.state, notifyPending)); os.IsNotExist(err) {
			break
		}
		now = now.Add(10 * time.Minute)
	}
	if tries < 5 || tries > 25 || !strings.Contains(strings.Join(last.Warnings, "\n"), "given up") {
		_, serr := os.Stat(filepath.Join(f.state, notifyPending))
		t.Errorf("%d tries, last %+v, pending %v; want a handful, then given up", tries, last, serr)
	}
}

// TestAnswerBeforeReview: a person answers a task whose run failed while
// it waits for its review. The review shows the model the answer, and a
// need the answer meets does not block the task: it goes back to pending,
// and its next run reads the answer.
func TestAnswerBeforeReview(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "[agents.ask]\ncommand = \"echo which API should I use, v1 or v2?; exit 1\"\n")
	task := f.add(t, "port the client", "ask")
	if _, err := f.proc.Run(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	if got := f.folder(t, task.ID); got != board.Failed {
		t.Fatalf("setup: in %s", got)
	}
	if _, _, resumed, err := f.board.Answer(ctx, task.ID, "use the v2 API"); err != nil || resumed {
		t.Fatalf("answer: resumed %v, %v", resumed, err)
	}
	f.srv.SetDefault(llmtest.Text(strings.Replace(strings.Replace(completeReply, "need: none", "need: decide whether to use API v1 or v2", 1),
		"classification: full_complete", "classification: some_progress", 1)))
	rep, err := f.rec.Tick(ctx)
	if err != nil || rep.Review == nil {
		t.Fatalf("tick: %+v, %v", rep, err)
	}
	if p := f.srv.ChatRequests()[0].Prompt(); !strings.Contains(p, "A PERSON ANSWERED") || !strings.Contains(p, "use the v2 API") {
		t.Errorf("the review's prompt lacks the person's answer:\n%s", p)
	}
	if rep.Review.Action != Requeue || rep.Review.Need != "" || f.folder(t, task.ID) != board.Pending {
		t.Errorf("review %s, need %q, task in %s; want it back in pending for its next run", rep.Review.Action, rep.Review.Need, f.folder(t, task.ID))
	}
	if !strings.Contains(rep.Review.Note.Remaining, "who answered: use the v2 API") {
		t.Errorf("the note's remaining issues: %q", rep.Review.Note.Remaining)
	}
}

// TestLoopNotifiesApart: a notifier that hangs (a blackholed webhook)
// holds the daemon's reviews up not at all: Loop sends notifications from
// a goroutine of their own.
func TestLoopNotifiesApart(t *testing.T) {
	dir := t.TempDir()
	release, hanging := filepath.Join(dir, "release"), filepath.Join(dir, "hanging")
	f := newFixture(t, fmt.Sprintf("[notify]\ncommand = 'touch %s; while [ ! -f %s ]; do sleep 0.05; done'\ntimeout = \"10m\"\n\n[agents.a]\ncommand = \"echo all done\"\n", hanging, release))
	f.srv.SetDefault(llmtest.Text(completeReply))
	var mu sync.Mutex
	now := time.Now()
	f.rec.Now = func() time.Time { // every round of the loop a tick
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(10 * time.Minute)
		return now
	}
	if _, err := f.rec.Tick(context.Background()); err != nil { // sets the marker
		t.Fatal(err)
	}
	blocked := f.add(t, "blocked", "")
	if err := f.board.Block(context.Background(), blocked.ID, "start limit reached", "look at it"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.rec.Loop(ctx) }()
	defer func() {
		os.WriteFile(release, nil, 0o644)
		cancel()
		<-done
	}()
	// (Bounds for a hang, not measures of speed.)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(hanging); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the notifier never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The notifier hangs on the blocked task until released; a run that
	// ends meanwhile is reviewed.
	task := f.add(t, "finish it", "a")
	if _, err := f.proc.Run(context.Background(), task.ID); err != nil {
		t.Fatal(err)
	}
	for f.folder(t, task.ID) == board.Completed {
		if time.Now().After(deadline) {
			t.Fatal("the run was not reviewed while the notifier hung")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNotifyRetriesTheFailedChannelOnly: with a command that works and a
// webhook that fails, the retries go to the webhook: the person hears of
// the ending once through the command.
func TestNotifyRetriesTheFailedChannelOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	out := filepath.Join(dir, "told")
	t.Setenv("CRA_TEST_UNSET_TOKEN", "")
	f := newFixture(t, fmt.Sprintf("[notify]\ncommand = 'echo \"$CRA_TASK_EVENT $CRA_TASK_ID\" >> %s'\nwebhook = \"http://127.0.0.1:1/hook\"\nwebhook_token_env = \"CRA_TEST_UNSET_TOKEN\"\n", out))
	now := time.Now()
	f.rec.Now = func() time.Time { return now }
	task := blockedAfterMarker(t, f, "blocked")
	for range 30 {
		if _, err := f.rec.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Hour)
	}
	data, _ := os.ReadFile(out)
	if n := strings.Count(string(data), "blocked "+task.ID); n != 1 {
		t.Errorf("the working command told the person %d times of one blocked task, want once", n)
	}
}

// blockedAfterMarker sets the notifications' marker with a tick, then
// adds a task named title and blocks it the way Level 1 does: an ending
// the next tick tells.
func blockedAfterMarker(t *testing.T, f *fixture, title string) *board.Task {
	t.Helper()
	ctx := context.Background()
	task := f.add(t, title, "")
	if _, err := f.rec.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.board.Block(ctx, task.ID, "start limit reached", "look at it"); err != nil {
		t.Fatal(err)
	}
	return task
}

// TestForgedVerifiedIsNotTold: a verified appended to the world log by
// hand, which the lifecycle forbids (no finish, no review), ends nothing,
// so no one is told the task was verified.
func TestForgedVerifiedIsNotTold(t *testing.T) {
	ctx := context.Background()
	out := filepath.Join(t.TempDir(), "told")
	f := newFixture(t, fmt.Sprintf("[notify]\ncommand = 'echo \"$CRA_TASK_EVENT $CRA_TASK_ID\" >> %s'\n", out))
	task := f.add(t, "pending", "")
	if _, err := f.rec.Tick(ctx); err != nil { // sets the marker at the end
		t.Fatal(err)
	}
	lf, err := os.OpenFile(f.board.Log.(*world.Log).Path(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(lf, "[2026-01-02T03:04:05.000Z][agent:verified][%s] verified by hand\n", task.ID)
	lf.Close()
	rep, err := f.rec.Tick(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(out); len(data) != 0 || len(rep.Notified) != 0 {
		t.Errorf("told %q (%+v), want nothing", data, rep.Notified)
	}
}

// TestNoValidationNoVerification: without a [validation] command a
// claim of completion stands as significant_progress at most, the note
// and the lowering say why, and the task reaches a person at
// failure_threshold with the fix named; a task that changes nothing, or
// a config that allows it, lets the claim stand.
func TestNoValidationNoVerification(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, extra string
		noChange    bool
		want        Classification
	}{
		{name: "no validation", want: SignificantProgress},
		{name: "no change expected", noChange: true, want: FullComplete},
		{name: "allowed", extra: "[recycler]\nallow_unvalidated = true\n", want: FullComplete},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t, tc.extra+"\n[agents.a]\ncommand = \"echo done > out.txt; echo all done\"\n")
			f.srv.SetDefault(llmtest.Text(completeReply))
			task := board.NewTask(tc.name)
			task.Agent, task.Need, task.NoChange = "a", "it is done", tc.noChange
			task, err := f.board.Add(ctx, task)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.proc.Run(ctx, task.ID); err != nil {
				t.Fatal(err)
			}
			rep, err := f.rec.Tick(ctx)
			if err != nil || rep.Review == nil {
				t.Fatalf("tick: %+v, %v", rep, err)
			}
			rv := rep.Review
			if rv.Classification != tc.want {
				t.Fatalf("got %s (lowered %q), want %s", rv.Classification, rv.Lowered, tc.want)
			}
			if tc.want == FullComplete {
				if len(rv.Unverified) > 0 || rv.After.Completion != 1 {
					t.Errorf("unverified %q, streaks %+v; want the claim to count", rv.Unverified, rv.After)
				}
				return
			}
			if len(rv.Lowered) != 1 || !strings.Contains(rv.Lowered[0], "no [validation] command is configured") ||
				!strings.Contains(rv.Note.Remaining, "Not verified, whatever the run claimed: no [validation] command") {
				t.Errorf("lowered %q, note %q", rv.Lowered, rv.Note.Remaining)
			}
			if rv.After.Failure != 1 || rv.After.Completion != 0 {
				t.Errorf("streaks %+v, want a failure: a claim nothing can check must reach a person", rv.After)
			}
		})
	}
}

// TestLoweredNoteTellsTheTruth: when the evidence lowers a claim of
// completion, the note's Current status and Validation evidence are the
// harness's lines, with the failing check's output; the retry's guidance
// is not "none"; and the next run's prompt carries the failing output,
// not the run's claim that everything works.
func TestLoweredNoteTellsTheTruth(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "[validation]\ntest = \"echo 'FAIL: test_sub (tests.CalcTest.test_sub)'; echo 'AssertionError: -1 != 5'; exit 1\"\n\n[agents.hi]\ncommand = \"echo hi > hi.txt; echo done\"\n")
	f.srv.SetDefault(llmtest.Text(completeReply))
	task := f.add(t, "fix sub", "hi")
	if _, err := f.proc.Run(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	rep, err := f.rec.Tick(ctx)
	if err != nil || rep.Review == nil {
		t.Fatalf("tick: %+v, %v", rep, err)
	}
	rv := rep.Review
	if rv.Classification == FullComplete || len(rv.Lowered) == 0 {
		t.Fatalf("got %s, lowered %q; want the claim lowered", rv.Classification, rv.Lowered)
	}
	if !strings.HasPrefix(rv.Note.Status, "The harness found: ") || strings.Contains(rv.Note.Status, "works") {
		t.Errorf("Current status: %q, want the harness's lines", rv.Note.Status)
	}
	if !strings.Contains(rv.Note.Evidence, "test failed, exit 1") || !strings.Contains(rv.Note.Evidence, "AssertionError: -1 != 5") {
		t.Errorf("Validation evidence: %q, want the failing check and its output", rv.Note.Evidence)
	}
	if strings.HasSuffix(strings.ToLower(rv.Entry), ": none") {
		t.Errorf("the retry's guidance: %q", rv.Entry)
	}
	if _, err := f.proc.Run(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	prompt, err := os.ReadFile(statedir.At(f.state).Run(task.ID).Prompt(2))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(prompt), "AssertionError: -1 != 5") || strings.Contains(string(prompt), "Current status:\nworks") {
		t.Errorf("run 2's prompt:\n%s", prompt)
	}
}

// TestWakeReviewsAtOnce: with a 10-minute interval, a run whose finish
// wakes the loop (the daemon wires the processor's OnFinish to Wake) is
// reviewed without waiting for the interval.
func TestWakeReviewsAtOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFixture(t, "[recycler]\ninterval_seconds = 600\nallow_unvalidated = true\n\n[agents.hi]\ncommand = \"echo hi > hi.txt; echo done\"\n")
	f.srv.SetDefault(llmtest.Text(completeReply))
	// The interval's tick comes first, with nothing to review: the next
	// one is 600 s away.
	if _, err := f.rec.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- f.rec.Loop(ctx) }()
	task := f.add(t, "say hi", "hi")
	f.proc.OnFinish = func(string) { f.rec.Wake() }
	if _, err := f.proc.Run(context.Background(), task.ID); err != nil {
		t.Fatal(err)
	}
	// A bound on the wait, not on the speed: without the wake the review
	// would come after 600 s.
	deadline := time.Now().Add(2 * time.Minute)
	for f.folder(t, task.ID) != board.CompletedFinalized && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := f.folder(t, task.ID); got != board.CompletedFinalized {
		t.Errorf("the task is in %s, want completed-finalized: reviewed at once", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
