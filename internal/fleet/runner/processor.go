package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cra-dev/cra/internal/agentcli"
	"github.com/cra-dev/cra/internal/atomicfile"
	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/procgroup"
	"github.com/cra-dev/cra/internal/sandbox"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/supervise"
	"github.com/cra-dev/cra/internal/world"
)

// DefaultGrace is how long a run's process group has between SIGTERM and
// SIGKILL when its timeout passes.
const DefaultGrace = 5 * time.Second

// ErrBusy is a task that cannot start a run now: it is already running,
// or not in a folder a run starts from.
var ErrBusy = errors.New("task cannot start a run")

// ErrLeaseLost ends a run whose lease on a fleet this host no longer
// holds (another host took the task over, the leader swept or revoked
// the lease, or this host could not renew it in time): the run is
// stopped and not finished, since the task is another run's now.
var ErrLeaseLost = errors.New("this host lost its lease on the run")

// Leases is a fleet's hold on runs across hosts (issue 34 item 3): the
// processor claims each task it starts, in the board's order, and lets
// it go once the run has ended. Nil on one machine, where the board's
// lock and the processor's own marks are enough.
type Leases interface {
	// Claim takes up to n of ids (pending tasks in the board's order,
	// the first taken first) for this host and returns those it took;
	// the others run elsewhere, or were taken meanwhile.
	Claim(ctx context.Context, ids []string, n int) ([]string, error)
	// Release ends this host's lease on task id's run.
	Release(ctx context.Context, id string) error
	// Holds reports whether this host still holds the lease of task id's
	// run, as the fleet's database says now: asked when the agent ended,
	// before its work is committed, pushed and finished.
	Holds(ctx context.Context, id string) (bool, error)
}

// Processor runs the board's tasks with their agent profiles (seed 004,
// "Execution Processor"; issue 13 items 4 and 5): one run at a time per
// task, each in the task's worktree on branch cra/<id>, under its
// profile's timeout, its output in a capped log under
// .clean_room/runs/<id>/. It logs [agent:active] before a run starts and
// [agent:finish] when it ends, then moves the file (the log first,
// DESIGN.md principle 1). It never requeues: that is the recycler's job
// (seed 004).
type Processor struct {
	Board *board.Board
	// Root is the repository: the directory holding .clean_room, whose
	// HEAD a task's first worktree starts from.
	Root string
	// StateDir is Root's .clean_room.
	StateDir string
	// Config supplies [board] and [agents]; nil means the defaults (the
	// built-in profile, one run at a time). With Load set, the last good
	// configuration Load read.
	Config *config.Config
	// Load, when set, reads the configuration as it is now (config.toml):
	// the processor reads it again before each tick and each run, so that
	// a profile, a preset or a [board] setting changed while the daemon
	// runs is used by the next run (issue 29 item 6). A load that fails
	// keeps the last good configuration, and Logger says why, once per
	// distinct error.
	Load func() (*config.Config, error)
	// AliveEvery is how often a run's liveness is sampled (liveness);
	// zero is DefaultAliveEvery.
	AliveEvery time.Duration
	// RecordUsage, when set, records the token usage a preset's run
	// reported beside cra's own model calls (raw.sqlite; issue 29 item
	// 3). A failure to record is logged, and the run goes on.
	RecordUsage func(ctx context.Context, u RunUsage) error
	// Executable is the cra binary the built-in profile runs as a child
	// process; NewProcessor sets os.Executable().
	Executable string
	// Grace is the time between SIGTERM and SIGKILL when a run times out
	// or is stopped; NewProcessor sets DefaultGrace.
	Grace time.Duration
	// Knowledge returns the PROJECT KNOWLEDGE section's body for a task's
	// text (seed 003's injection: knowledge.Load over Root, which the CLI
	// passes; "" when there is none). Nil leaves the section out. It is a
	// function so that the board does not import retrieval.
	Knowledge func(ctx context.Context, task string) (string, error)
	// Context returns the Context section's body for a task's prompt
	// within tokens: cra's context package, for a profile other than the
	// built-in one (which retrieves on its own); nil leaves it out.
	Context func(ctx context.Context, task string, tokens int) (string, error)
	// OnFinish, when set, is called with a task's id once a run of it
	// has ended and its finish is recorded (the daemon wakes the
	// recycler with it, so that the run is reviewed at once).
	OnFinish func(id string)
	// Logger receives what goes wrong in runs Tick started in the
	// background; NewProcessor sets one that discards.
	Logger *slog.Logger
	// Now stamps results; NewProcessor sets time.Now.
	Now func() time.Time
	// Leases, when set, is the fleet's: Tick starts only the tasks it
	// claims, and Lose stops a run whose lease is lost.
	Leases Leases
	// Host is this host's name in the fleet, which a run's results
	// record; empty on one machine.
	Host string
	// PreferFor is how long a task whose last run was another host's
	// waits for that host, which has its working copy (issue 34 item 4),
	// after it went back to pending, before this one claims it.
	PreferFor time.Duration

	rootOnce sync.Once // rootWarning is logged
	mu       sync.Mutex
	loadErr  string // the last error of Load, logged once
	running  map[string]bool
	// runs are the runs going, by task: their number once begun and how
	// to stop them (Lose).
	runs    map[string]*going
	wg      sync.WaitGroup
	reports reports
}

// NeedError is a run that cannot start until a person does Need.
type NeedError struct {
	Err  error
	Need string
}

func (e *NeedError) Error() string { return e.Err.Error() }
func (e *NeedError) Unwrap() error { return e.Err }

// Close stops the endpoint the processor's runs report to.
func (p *Processor) Close() error { return p.reports.close() }

// NewProcessor returns the processor of board b over the repository at
// root, with state in stateDir and the [board] and [agents] of cfg.
func NewProcessor(b *board.Board, root, stateDir string, cfg *config.Config) *Processor {
	exe, _ := os.Executable()
	return &Processor{
		Board: b, Root: root, StateDir: stateDir, Config: cfg,
		Executable: exe, Grace: DefaultGrace,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: time.Now,
		running: map[string]bool{},
		reports: reports{log: b.Log},
	}
}

// MaxParallel is [board] max_parallel, or 1.
func (p *Processor) MaxParallel() int {
	cfg := p.config()
	if cfg != nil && cfg.Board != nil && cfg.Board.MaxParallel != nil && *cfg.Board.MaxParallel > 0 {
		return *cfg.Board.MaxParallel
	}
	return 1
}

// config is the configuration the processor has now.
func (p *Processor) config() *config.Config {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.Config
}

// CurrentConfig returns the configuration the processor runs with: the
// last one Load read well (or Config), never a config.toml broken since.
func (p *Processor) CurrentConfig() *config.Config { return p.config() }

// reload reads the configuration again with Load, when set, and returns
// the one to use: the new one, or the last good one when the new one
// cannot be read.
func (p *Processor) reload() *config.Config {
	if p.Load == nil {
		return p.config()
	}
	cfg, err := p.Load()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		if msg := err.Error(); msg != p.loadErr {
			p.loadErr = msg
			p.Logger.Error("config.toml changed but cannot be read: the processor keeps the last good configuration until it is fixed", "err", err)
		}
		return p.Config
	}
	if p.loadErr != "" {
		p.loadErr = ""
		p.Logger.Info("config.toml reads again: the processor uses it")
	}
	p.Config = cfg
	return cfg
}

// Outcome is one run as it ended.
type Outcome struct {
	ID      string `json:"id"`
	Run     int    `json:"run"`
	Profile string `json:"profile"`
	// Folder is where the task went: completed or failed.
	Folder board.Folder `json:"folder"`
	// ExitCode is the process's exit status; nil when it was killed, timed
	// out or never started.
	ExitCode *int `json:"exit_code,omitempty"`
	// Finish is the output of the run's [agent:finish] entry.
	Finish     string        `json:"finish"`
	Need       string        `json:"need,omitempty"`
	StartedAt  time.Time     `json:"started_at"`
	FinishedAt time.Time     `json:"finished_at"`
	Duration   time.Duration `json:"-"` // FinishedAt - StartedAt
	Branch     string        `json:"branch,omitempty"`
	Worktree   string        `json:"worktree,omitempty"`
	LogPath    string        `json:"log,omitempty"`
	PromptPath string        `json:"prompt,omitempty"`
	DiffStat   string        `json:"diff_stat,omitempty"`
	// Commit is the commit the run left its branch at when it pushed it
	// to the fleet's remote (Results.Commit); "" without [fleet] push.
	Commit string `json:"commit,omitempty"`
	// Command is the command a profile ran, its secrets masked; Summary
	// what a preset's output said (the final message, files, commands,
	// denials, tokens), also in SummaryPath (runs/ID/summary-N.json).
	Command     string            `json:"command,omitempty"`
	Summary     *agentcli.Summary `json:"summary,omitempty"`
	SummaryPath string            `json:"summary_path,omitempty"`
	// Class is how a preset's run was classified (agentcli.Class):
	// "endpoint failed" requeues the task with a backoff and "refused"
	// blocks it (issue 29 item 5).
	Class string `json:"class,omitempty"`
}

// usage is the token usage of a preset's run, nil when its output
// reported none.
func (o *Outcome) usage() *board.Usage {
	if o.Summary == nil || o.Summary.Usage.IsZero() {
		return nil
	}
	u := o.Summary.Usage
	return &board.Usage{Model: u.Model, Input: u.Input, Output: u.Output, Cached: u.Cached}
}

// Completed reports whether the run ended in completed (exit 0).
func (o *Outcome) Completed() bool { return o.Folder == board.Completed }

// RunDir returns the run directory of task id, .clean_room/runs/<id>.
func (p *Processor) RunDir(id string) string { return statedir.At(p.StateDir).Run(id).Path() }

// Run runs task id once, now, and returns how it ended: the path both the
// processor's loop and 'cra task run' take. The task must be in pending
// with a start or retry as its latest lifecycle entry, and not running
// already (else ErrBusy). A run that fails (non-zero exit, timeout, an
// unknown profile) is an Outcome in failed, not an error; an error means
// the run could not be recorded as it should, and says what to do.
func (p *Processor) Run(ctx context.Context, id string) (*Outcome, error) {
	if !p.claim(id) {
		return nil, fmt.Errorf("task %s is running in this process: %w", id, ErrBusy)
	}
	defer p.release(id)
	return p.run(ctx, id)
}

// claim marks id as running in this process; false when it was.
func (p *Processor) claim(id string) bool { return p.claimUnder(id, 0) }

// claimUnder is claim that also fails when limit (> 0) runs are going
// already: the count and the mark in one step, so that Ticks at once
// never start more than MaxParallel.
func (p *Processor) claimUnder(id string, limit int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running == nil {
		p.running = map[string]bool{}
	}
	if p.running[id] || limit > 0 && len(p.running) >= limit {
		return false
	}
	p.running[id] = true
	return true
}

func (p *Processor) release(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.running, id)
}

// going is a run in this process: its number, once begun, and the end
// of its context.
type going struct {
	run  int
	stop context.CancelCauseFunc
}

// track registers the run of task id going under a context of its own,
// which Lose ends; untrack removes it.
func (p *Processor) track(ctx context.Context, id string) (context.Context, func()) {
	ctx, stop := context.WithCancelCause(ctx)
	p.mu.Lock()
	if p.runs == nil {
		p.runs = map[string]*going{}
	}
	p.runs[id] = &going{stop: stop}
	p.mu.Unlock()
	return ctx, func() {
		p.mu.Lock()
		delete(p.runs, id)
		p.mu.Unlock()
		stop(nil)
	}
}

// begun records the number of task id's run once it is logged.
func (p *Processor) begun(id string, run int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if g := p.runs[id]; g != nil {
		g.run = run
	}
}

// Lose stops this process's run of task id, whose lease is lost (why
// says how): its agent is stopped and the run is not finished, since the
// task is another run's now. It reports whether a run was going.
func (p *Processor) Lose(id, why string) bool {
	p.mu.Lock()
	g := p.runs[id]
	p.mu.Unlock()
	if g == nil {
		return false
	}
	g.stop(fmt.Errorf("%w: %s", ErrLeaseLost, why))
	return true
}

// LastOutput returns when task id's run going in this process last
// showed life: its output's or its liveness file's last change, or its
// start; false when no run of it has begun here.
func (p *Processor) LastOutput(id string) (time.Time, bool) {
	p.mu.Lock()
	g := p.runs[id]
	p.mu.Unlock()
	if g == nil || g.run == 0 {
		return time.Time{}, false
	}
	rd := statedir.At(p.StateDir).Run(id)
	var last time.Time
	for _, path := range []string{rd.Log(g.run), rd.Alive(g.run)} {
		if fi, err := os.Stat(path); err == nil && fi.ModTime().After(last) {
			last = fi.ModTime()
		}
	}
	return last, !last.IsZero()
}

// Running returns how many runs this processor has going.
func (p *Processor) Running() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.running)
}

// Holds reports whether this processor holds a run of task id: from its
// claim, through the run's start and its agent's exit, to the record of
// how it ended (supervise.Pass.Held).
func (p *Processor) Holds(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running[id]
}

// started is a run whose active entry is written and whose file is in
// in-progress.
type started struct {
	task    *board.Task
	cfg     *config.Config // the configuration the run started with
	run     int
	profile Profile
	perr    error // the profile could not be resolved: the run fails
	prompt  board.Prompt
	at      time.Time
	// reader reads a preset's output; its final message is the finish
	// line. mask hides its secrets in what cra writes of it.
	reader *agentcli.Reader
	mask   func(string) string
}

func (p *Processor) run(ctx context.Context, id string) (*Outcome, error) {
	ctx, untrack := p.track(ctx, id)
	defer untrack()
	s, err := p.begin(ctx, id)
	if err != nil {
		return nil, err
	}
	p.begun(id, s.run)
	defer p.dropClaim(id) // the run ended, however
	if p.OnFinish != nil {
		defer p.OnFinish(id) // after the finish is recorded: its review may begin
	}
	o := &Outcome{ID: id, Run: s.run, Profile: s.profile.Name, StartedAt: s.at}
	if s.perr != nil {
		var pe *ProfileError
		need := ""
		r := &ran{finished: p.Now().UTC().Truncate(time.Millisecond)}
		if errors.As(s.perr, &pe) {
			need = pe.Need
			// No run can start until a person defines the profile: the
			// task is blocked at once, without a review (issue 29 item 6).
			r.then = &then{status: world.StatusFailed, folder: board.FailedBlocked,
				output: fmt.Sprintf("blocked: agent profile %q is not defined", pe.Name), need: pe.Need}
		}
		return p.finish(ctx, o, r, fmt.Sprintf("%s %v", board.RunFailed, s.perr), need)
	}
	res, err := p.execute(ctx, s, o)
	if lost := context.Cause(ctx); errors.Is(lost, ErrLeaseLost) {
		return p.abandon(ctx, o, lost)
	}
	if err != nil {
		need := "fix the cause and requeue: cra task move " + id + " pending"
		var ne *NeedError
		if errors.As(err, &ne) {
			need = ne.Need
		}
		return p.finish(ctx, o, res, fmt.Sprintf("%s %s", board.RunFailed, board.Clip(err.Error(), 300)), need)
	}
	return p.finish(ctx, o, res, res.status, "")
}

// abandon ends a run whose lease was lost without finishing it: the
// task is another run's now, on this host or another, and only an event
// says how this copy ended (written when the log can be reached).
func (p *Processor) abandon(ctx context.Context, o *Outcome, lost error) (*Outcome, error) {
	o.FinishedAt = p.Now().UTC().Truncate(time.Millisecond)
	o.Duration = o.FinishedAt.Sub(o.StartedAt)
	o.Finish = board.Clip(fmt.Sprintf("abandoned: run %d stopped, not finished: %v", o.Run, context.Cause(ctx)), 300)
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := p.Board.Log.Event(ectx, world.SourceSystem, o.ID, o.Finish); err != nil {
		p.Logger.Warn("the abandoned run's event not logged", "task", o.ID, "run", o.Run, "err", err)
	}
	return o, lost
}

// begin checks that task id may run, and under the board's lock logs
// [agent:active][id] run N: profile, then writes runs N into the file and
// moves it to in-progress.
func (p *Processor) begin(ctx context.Context, id string) (*started, error) {
	b := p.Board
	unlock, err := b.Store.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	t, folder, err := b.Store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if folder != board.Pending {
		return nil, fmt.Errorf("task %s is in %s, and a run starts only from pending: %w", id, folder, ErrBusy)
	}
	a, known, err := b.Log.Lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	if !known || a.Status != world.StatusStart && a.Status != world.StatusRetry {
		status := "no entry"
		if known {
			status = string(a.Status)
		}
		return nil, fmt.Errorf("task %s is in pending but the world log has it at %s: run 'cra task rebuild' first: %w", id, status, ErrBusy)
	}
	history, err := b.History(ctx, id)
	if err != nil {
		return nil, err
	}
	s := &started{task: t, run: t.Runs + 1, cfg: p.reload()}
	s.profile, s.perr = ResolveProfile(t, s.cfg)
	name := s.profile.Name
	if s.perr != nil {
		name = t.Agent
		if name == "" && s.cfg != nil && s.cfg.Board != nil {
			name = s.cfg.Board.DefaultAgent
		}
		s.profile.Name = name
	}
	s.prompt = board.Prompt{Task: t, Run: s.run}
	s.prompt.FromLog(history)
	if s.prompt.Directives, err = b.PendingDirectives(ctx, id); err != nil {
		return nil, err
	}
	// The claim first: another process's Level 1 leaves the run to this
	// one until its identity is recorded, however long the start takes.
	if err := p.writeClaim(ctx, id, s.run); err != nil {
		return nil, err
	}
	// A start that fails from here leaves no claim: Level 1 then restarts
	// a run the log has active after the start grace, as without one.
	fail := func(err error) (*started, error) {
		p.dropClaim(id)
		return nil, err
	}
	// The entry and the file's change commit together where the board
	// is in PostgreSQL (board.Atomic); on files the log goes first.
	err = b.Atomically(ctx, func(b *board.Board) error {
		out := fmt.Sprintf("run %d: %s", s.run, name)
		if p.Host != "" {
			out += " on host " + p.Host // a fleet's: which host runs it
		}
		e, err := b.Log.Agent(ctx, world.StatusActive, id, out, "")
		if err != nil {
			return fmt.Errorf("log the run's start: %w", err)
		}
		s.at = e.Time
		t.Runs = s.run
		t.UpdatedAt = e.Time
		if err := b.Store.Put(ctx, t, board.Pending); err != nil {
			return fmt.Errorf("task %s is active in the world log but its file was not updated (run 'cra task rebuild'): %w", id, err)
		}
		if err := b.Store.Move(ctx, id, board.Pending, board.InProgress); err != nil {
			return fmt.Errorf("task %s is active in the world log but its file did not move (run 'cra task rebuild'): %w", id, err)
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	return s, nil
}

// dropClaim removes this process's claim of task id's run, once the run
// has its identity, has ended, or failed to start.
func (p *Processor) dropClaim(id string) {
	if path, err := supervise.ClaimFile(statedir.At(p.StateDir).Runs(), id); err == nil {
		os.Remove(path)
	}
}

// writeClaim writes the claim of task id's run: this process starts it
// (supervise.ClaimFile).
func (p *Processor) writeClaim(ctx context.Context, id string, run int) error {
	path, err := supervise.ClaimFile(statedir.At(p.StateDir).Runs(), id)
	if err != nil {
		return err
	}
	c, err := supervise.Claim(ctx, id, run)
	if err == nil {
		err = c.Save(path)
	}
	if err != nil {
		return fmt.Errorf("claim the run of task %s: %w", id, err)
	}
	return nil
}

// ran is what execute learned of a run.
type ran struct {
	status   string // the finish entry's output
	exitCode *int
	output   string // the tail for results.output
	timedOut bool
	stopped  bool // ctx ended the run: cra stopped
	finished time.Time
	// then, when set, is the lifecycle entry that follows the finish
	// entry at once, and where the task goes instead of the folder the
	// finish maps to: a task blocked or requeued without a review.
	then *then
}

// then is a lifecycle entry logged right after a run's finish entry.
type then struct {
	status       world.Status
	folder       board.Folder
	output, need string
	update       func(*board.Task)
}

// Backoff after a failing model endpoint: the first retry waits
// EndpointBackoff, each next one twice as long, up to MaxEndpointBackoff.
const (
	EndpointBackoff    = time.Minute
	MaxEndpointBackoff = 30 * time.Minute
)

// endpointBackoff is the wait after the n-th endpoint failure in a row.
func endpointBackoff(n int) time.Duration {
	d := EndpointBackoff
	for i := 1; i < n && d < MaxEndpointBackoff; i++ {
		d *= 2
	}
	return min(d, MaxEndpointBackoff)
}

// execute prepares the worktree and the prompt, runs the profile's
// process and waits for it, under the profile's timeout. An error is a
// run that could not start; its ran may still carry output.
func (p *Processor) execute(ctx context.Context, s *started, o *Outcome) (*ran, error) {
	id := s.task.ID
	rd := statedir.At(p.StateDir).Run(id)
	if err := os.MkdirAll(rd.Path(), 0o755); err != nil {
		return nil, fmt.Errorf("make the run directory: %w", err)
	}
	top, prefix, err := gitx.TopLevel(ctx, p.Root)
	if err != nil {
		return nil, fmt.Errorf("the processor runs agents in git working copies: %w", err)
	}
	confined := !s.cfg.SandboxOff()
	if confined && sandbox.ABI() == 0 {
		return nil, &NeedError{Err: sandbox.ErrUnavailable, Need: "run cra on Linux 5.13+ with Landlock, or set [board] sandbox = \"off\" in .clean_room/config.toml to run agents unconfined (every run then says so)"}
	}
	path := statedir.At(p.StateDir).Worktree(id)
	var confine func(*exec.Cmd) error
	if confined {
		// Every git command cra runs in the working copy after the agent
		// wrote there runs confined to it too.
		confine = func(cmd *exec.Cmd) error { return sandbox.Wrap(cmd, p.Executable, sandbox.Spec{Write: []string{path}}) }
	}
	// The fleet's remote first (issue 34 item 4): its URL read now, before
	// the agent starts, and the branch brought from it.
	sh, err := p.shareOf(ctx, s.cfg, top, board.BranchPrefix+id)
	if err != nil {
		return nil, &NeedError{Err: err, Need: fmt.Sprintf("fix [fleet] or the repository's remote as the error says, then requeue: cra task move %s pending", id)}
	}
	var pl *pulled
	haveCopy := exists(path)
	if sh != nil {
		if pl, err = p.pull(ctx, sh, top, board.BranchPrefix+id, s.run, haveCopy, recordedCommit(s.task)); err != nil {
			return nil, &NeedError{Err: err, Need: fmt.Sprintf("fix the remote as the error says, then requeue: cra task move %s pending", id)}
		}
	}
	wt, err := gitx.OpenClone(ctx, top, path, board.BranchPrefix+id, confine)
	if err != nil {
		return nil, fmt.Errorf("make the task's working copy: %w", err)
	}
	if pl != nil {
		if pl.forward != "" && haveCopy {
			if err := wt.FastForward(ctx, pl.forward); err != nil {
				return nil, &NeedError{Err: err, Need: fmt.Sprintf("remove the working copy %s (its branch %s keeps the committed work), then requeue: cra task move %s pending", path, wt.Branch, id)}
			}
		}
		if pl.note != "" {
			p.event(ctx, id, pl.note)
		}
	}
	o.Branch, o.Worktree = wt.Branch, wt.Path
	work := filepath.Join(wt.Path, filepath.FromSlash(prefix))
	missing := gitx.Missing(ctx, top, wt.Path, prefix)
	tmp, err := os.MkdirTemp("", "cra-run-"+id+"-")
	if err != nil {
		return nil, fmt.Errorf("make the run's temp directory: %w", err)
	}
	defer os.RemoveAll(tmp)

	task := s.prompt.TaskText()
	if p.Knowledge != nil {
		if s.prompt.Knowledge, err = p.Knowledge(ctx, task); err != nil {
			return nil, fmt.Errorf("load the project knowledge: %w", err)
		}
	}
	if p.Context != nil && !s.profile.Builtin {
		if s.prompt.Context, err = p.Context(ctx, task, s.profile.Agent.ContextBudget()); err != nil {
			return nil, fmt.Errorf("make the prompt's context package: %w", err)
		}
	}
	// The run's token first: an external profile's MCP configuration
	// names the endpoint it reports to.
	token, url, err := p.reports.issue(id, s.run)
	if err != nil {
		return nil, err
	}
	defer p.reports.revoke(token)
	mcpConfig := rd.MCPConfig(s.run)
	if !s.profile.Builtin {
		if err := writeMCPConfig(mcpConfig, p.Executable, p.Root, work, id, s.run, url); err != nil {
			return nil, fmt.Errorf("write the run's MCP configuration: %w", err)
		}
		if usesMCP(s.profile.Agent.Command) {
			s.prompt.Tools = mcpTools
		}
	}
	o.PromptPath = rd.Prompt(s.run)
	if err := atomicfile.Write(o.PromptPath, []byte(s.prompt.Markdown()), 0o644); err != nil {
		return nil, fmt.Errorf("write the prompt file: %w", err)
	}

	var cmd *exec.Cmd
	env := agentEnviron(os.Environ(), s.cfg)
	var stdin io.Reader
	var writes []string // a preset's state directories, for the sandbox
	if s.profile.Builtin {
		if p.Executable == "" {
			return nil, errors.New("the built-in profile runs cra itself, whose path is unknown")
		}
		taskFile := rd.TaskText(s.run)
		if err := atomicfile.Write(taskFile, []byte(task), 0o644); err != nil {
			return nil, fmt.Errorf("write the task file: %w", err)
		}
		cmd = exec.Command(p.Executable, "solve", "--repo", p.Root, "--task-id", board.RunTaskID(id, s.run),
			"--board", "--worktree", work, "--task-file", taskFile)
	} else {
		// agentcli writes the command: a command profile's as before (sh
		// -c, the whole environment), a preset's headless, its key only in
		// its environment (issue 29). A preset's files of its own (aider's
		// histories) go to the run's temp directory: a confined agent
		// cannot write .clean_room.
		c, err := agentcli.Expand(s.profile.CLI, agentcli.Run{PromptFile: o.PromptPath, MCPConfig: mcpConfig, Worktree: work, TaskID: id, Branch: wt.Branch,
			StateDir: statedir.At(p.StateDir).Agent(s.profile.Name), RunDir: tmp, Environ: env, Confined: confined})
		if err != nil {
			return nil, &NeedError{Err: err, Need: fmt.Sprintf("fix [agents.%s] in .clean_room/config.toml or cra's environment as the error says, then requeue: cra task move %s pending", s.profile.Name, id)}
		}
		if err := c.Prepare(); err != nil {
			return nil, err
		}
		path, err := c.LookPath()
		if err != nil {
			return nil, &NeedError{Err: err, Need: fmt.Sprintf("install the agent CLI as the error says, then requeue: cra task move %s pending", id)}
		}
		argv, stdinFile, err := c.Argv()
		if err != nil {
			return nil, err
		}
		cmd = exec.Command(path, argv[1:]...)
		env = c.Env
		if stdinFile != "" {
			in, err := os.Open(stdinFile)
			if err != nil {
				return nil, fmt.Errorf("open the prompt for the agent's input: %w", err)
			}
			defer in.Close()
			stdin = in
		}
		if c.Preset != "" {
			s.reader, s.mask = c.NewReader(), c.Mask
			writes = c.Writes
		}
		o.Command = c.String()
	}
	cmd.Dir = work
	// The tags Level 1 knows its runs by: task, run number, and the
	// repository, so that another repository's pass never touches it.
	cmd.Env = append(env, supervise.EnvTaskID+"="+id, supervise.EnvRunID+"="+strconv.Itoa(s.run), supervise.EnvStateDir+"="+p.StateDir,
		"TMPDIR="+tmp, "TMP="+tmp, "TEMP="+tmp)
	// The run reports through cra, with a token of its own (DESIGN.md,
	// "Trust"): its process cannot write the log itself.
	cmd.Env = append(cmd.Env, EnvRunToken+"="+token, EnvReportURL+"="+url)
	if !s.profile.Builtin {
		cmd.Env = append(cmd.Env, EnvMCPConfig+"="+mcpConfig)
	}
	var warning string
	switch {
	case s.profile.Builtin:
		// cra's own solve is cra's code; the validation commands it runs
		// are confined by it.
	case confined:
		caches, err := s.profile.caches()
		if err != nil {
			return nil, err
		}
		write := append(append([]string{wt.Path, tmp}, caches...), writes...)
		if err := sandbox.Wrap(cmd, p.Executable, sandbox.Spec{Write: write}); err != nil {
			return nil, err
		}
		if os.Geteuid() == 0 {
			// Said once, to the daemon's log: in the run's own log it
			// would be output the agent never wrote (Level 2, the
			// recycler's silent runs).
			p.rootOnce.Do(func() { p.Logger.Warn(rootWarning) })
		}
	default:
		warning = "cra: warning: this run is not sandboxed ([board] sandbox = \"off\"): the agent could write anything this user can, the world log and other tasks included"
	}
	procgroup.Own(cmd)
	o.LogPath = rd.Log(s.run)
	out, err := newCapture(o.LogPath)
	if err != nil {
		return nil, err
	}
	if warning != "" {
		fmt.Fprintln(out, warning)
	}
	for _, note := range missing {
		fmt.Fprintf(out, "cra: %s\n", note) // for the person and the reviewer reading the output
	}
	if s.reader != nil {
		fmt.Fprintf(out, "cra: runs %s\n", o.Command) // a preset's command, its secrets masked
	}
	cmd.Stdout, cmd.Stderr = out, out
	if s.reader != nil {
		w := io.MultiWriter(out, s.reader) // neither fails
		cmd.Stdout, cmd.Stderr = w, w
	}
	cmd.Stdin = stdin
	// A leftover child holding the output pipe does not hold the run.
	cmd.WaitDelay = p.grace()
	if err := cmd.Start(); err != nil {
		out.close()
		return nil, fmt.Errorf("start the agent: %w", err)
	}
	r, werr := p.wait(ctx, s, cmd, out, work, EnvRunToken+"="+token)
	if p.Leases != nil && !errors.Is(context.Cause(ctx), ErrLeaseLost) {
		// The agent may have ended because its lease was lost before this
		// host heard of it (Level 1 stops a run whose lease is another
		// host's): only a run still held goes on to its commit, its push
		// and its finish.
		hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		held, herr := p.Leases.Holds(hctx, id)
		cancel()
		switch {
		case herr != nil:
			p.Lose(id, "the lease could not be confirmed when the agent ended: "+herr.Error())
		case !held:
			p.Lose(id, "the lease was no longer this host's when the agent ended")
		}
	}
	cerr := out.close()
	r.output = out.Tail(board.MaxOutput)
	if s.reader != nil {
		cerr = errors.Join(cerr, p.summarize(s, o, r))
		if o.Summary != nil {
			cerr = errors.Join(cerr, p.logEvents(context.WithoutCancel(ctx), id, o.Summary, s.mask))
			if p.RecordUsage != nil && !o.Summary.Usage.IsZero() {
				u := RunUsage{RunTaskID: board.RunTaskID(id, s.run), Preset: o.Summary.Preset, Final: s.mask(o.Summary.Final),
					Total: o.Summary.Usage, Calls: o.Summary.Calls, Duration: r.finished.Sub(s.at)}
				if err := p.RecordUsage(context.WithoutCancel(ctx), u); err != nil {
					p.Logger.Warn("the run's token usage not recorded", "task", id, "run", s.run, "err", err)
				}
			}
		}
	}
	if errors.Is(context.Cause(ctx), ErrLeaseLost) {
		// The task is another run's now, which starts from the branch as
		// pushed: this copy's work is neither committed, brought back nor
		// pushed, and its working copy goes, so that this host's next run
		// of the task starts from the remote's branch.
		if err := os.RemoveAll(wt.Path); err != nil {
			werr = errors.Join(werr, fmt.Errorf("remove the abandoned working copy: %w", err))
		}
		return r, errors.Join(werr, cerr)
	}
	if !s.profile.Builtin {
		// An agent that edits without committing leaves its work in the
		// worktree; the branch keeps it (DESIGN.md principle 5).
		if _, err := wt.CommitAll(context.WithoutCancel(ctx), fmt.Sprintf("cra task %s run %d (%s)\n", id, s.run, s.profile.Name)); err != nil {
			werr = errors.Join(werr, fmt.Errorf("commit the run's changes on %s: %w", wt.Branch, err))
		}
	}
	if err := wt.FetchBack(context.WithoutCancel(ctx)); err != nil {
		werr = errors.Join(werr, err)
	}
	if sh != nil {
		o.Commit = p.push(ctx, sh, top, id, wt.Branch, s.run, pl.foreign)
	}
	if st, err := gitx.DiffStat(context.WithoutCancel(ctx), top, wt.Base, wt.Branch); err == nil {
		o.DiffStat = st
	}
	return r, errors.Join(werr, cerr)
}

func (p *Processor) grace() time.Duration {
	if p.Grace > 0 {
		return p.Grace
	}
	return DefaultGrace
}

// summarize reads a preset's summary once its output ended: the run's
// results show its compact transcript instead of the JSON framing (what
// the reviewer reads), the summary goes to runs/ID/summary-N.json, and
// the run is classified (issue 29 item 5): a refused tool blocks the task
// at once with what to allow, a failing model endpoint requeues it after
// a backoff without a failure, whatever else as the exit says.
func (p *Processor) summarize(s *started, o *Outcome, r *ran) error {
	s.reader.Close()
	sum := s.reader.Summary()
	o.Summary = &sum
	if sum.Transcript != "" {
		r.output = s.mask(sum.Transcript)
	}
	o.SummaryPath = statedir.At(p.StateDir).Run(s.task.ID).Summary(s.run)
	var err error
	if data, merr := json.MarshalIndent(sum, "", "  "); merr != nil {
		err = fmt.Errorf("encode the run's summary: %w", merr)
	} else if werr := atomicfile.Write(o.SummaryPath, []byte(s.mask(string(data))+"\n"), 0o644); werr != nil {
		err = fmt.Errorf("write the run's summary: %w", werr)
	}
	if r.stopped {
		return err // cra stopped it: not the agent's doing
	}
	exit := -1
	if r.exitCode != nil {
		exit = *r.exitCode
	}
	class := sum.Classify(exit)
	if class == agentcli.Succeeded && r.timedOut {
		class = agentcli.AgentFailed
	}
	o.Class = class.String()
	if class != agentcli.Succeeded && !strings.HasPrefix(r.status, board.RunFailed) {
		// exit 0, but the agent reported a failure or a refusal
		r.status = board.RunFailed + " " + class.String() + ": " + r.status
	}
	switch class {
	case agentcli.Refused:
		r.then = &then{status: world.StatusFailed, folder: board.FailedBlocked,
			output: board.Clip("blocked: the agent was refused "+sum.Denials[0].Tool, 200), need: sum.Need(s.profile.Name)}
	case agentcli.EndpointFailed:
		n := s.task.EndpointFailures + 1
		wait := endpointBackoff(n)
		after := r.finished.Add(wait)
		r.then = &then{status: world.StatusRetry, folder: board.Pending,
			output: board.Clip(fmt.Sprintf("continue: the agent's model endpoint is failing (%s); run %d in a row, the next starts after %s", sum.Endpoint, n, wait), 300),
			update: func(t *board.Task) { t.EndpointFailures, t.RetryAfter = n, after }}
	}
	return err
}

// RunUsage is the token usage of one preset run, for RecordUsage.
type RunUsage struct {
	// RunTaskID is the run's id, board.RunTaskID: ID.rN.
	RunTaskID string
	Preset    string
	// Final is the agent's final message; Total the run's tokens (with
	// the agent's model); Calls the per-call or per-turn counts when its
	// output gave them.
	Final    string
	Total    agentcli.Usage
	Calls    []agentcli.Usage
	Duration time.Duration
}

// MaxRunEvents bounds the [event:bash] and the [event:file] lines one
// run writes each; a last line says how many more there were.
const MaxRunEvents = 30

// logEvents writes the commands a preset's agent ran and the files it
// edited to the world log, as [event:bash][ID] and [event:file][ID] lines
// (seed 002's event sources), MaxRunEvents of each.
func (p *Processor) logEvents(ctx context.Context, id string, sum *agentcli.Summary, mask func(string) string) error {
	type event struct {
		src  world.Source
		text string
	}
	var lines []event
	add := func(src world.Source, texts []string, more int) {
		for i, t := range texts {
			if i == MaxRunEvents {
				more += len(texts) - i
				break
			}
			lines = append(lines, event{src, t})
		}
		if more > 0 {
			lines = append(lines, event{src, fmt.Sprintf("… and %d more this run (runs/%s/summary-N.json)", more, id)})
		}
	}
	var cmds []string
	for _, c := range sum.Commands {
		t := "$ " + board.Clip(oneLine(c.Command), 200)
		if c.Exit >= 0 {
			t += fmt.Sprintf(" (exit %d)", c.Exit)
		}
		cmds = append(cmds, t)
	}
	add(world.SourceBash, cmds, 0)
	var files []string
	for _, f := range sum.Files {
		files = append(files, "edited "+board.Clip(oneLine(f), 200))
	}
	add(world.SourceFile, files, 0)
	for _, l := range lines {
		if _, err := p.Board.Log.Event(ctx, l.src, id, mask(l.text)); err != nil {
			return fmt.Errorf("log the run's %s events: %w", l.src, err)
		}
	}
	return nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// rootWarning is logged once by a processor whose confined agents run as
// root: the sandbox confines writes, not metadata (Landlock has no right
// for chmod, chown or utimes), and root owns the system's files.
const rootWarning = "agents run as root: the sandbox keeps their writes to their working copies, but cannot keep them from changing the modes, owners and times of files elsewhere (the world log's, the system's); run cra as a normal user"

// wait records the run's identity, then waits for the process under the
// profile's timeout and ctx, sampling its liveness meanwhile. It returns
// the finish entry's output.
func (p *Processor) wait(ctx context.Context, s *started, cmd *exec.Cmd, out *capture, work, tag string) (*ran, error) {
	pid := cmd.Process.Pid
	// Should this process die first (kill -9), the run's group goes
	// with it, and every process carrying the run's token (tag), those
	// that left the group too: an agent working on past its daemon, and
	// past its lease while another host runs the task again, is no run
	// anyone records.
	if reaper, err := procgroup.Reap(pid, p.grace(), tag); err != nil {
		p.Logger.Warn("the run outlives this daemon should it be killed", "task", s.task.ID, "run", s.run, "err", err)
	} else {
		defer reaper.Done() // after the group is stopped below
	}
	if l, err := newLiveness(statedir.At(p.StateDir).Run(s.task.ID).Alive(s.run), pid, work, out, s.reader); err != nil {
		p.Logger.Warn("run liveness not watched", "task", s.task.ID, "run", s.run, "err", err)
	} else {
		every := p.AliveEvery
		if every <= 0 {
			every = DefaultAliveEvery
		}
		lctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		defer stop()
		go l.watch(lctx, every)
	}
	// The identity is read before anything waits for the process: until
	// it is reaped, an agent that already exited is a zombie whose
	// /proc entry still says who it was (a quick agent raced the reaping
	// and left no run.json on a loaded machine).
	var idErr error
	if path, err := supervise.RunFile(statedir.At(p.StateDir).Runs(), s.task.ID); err != nil {
		idErr = err
	} else if ident, err := supervise.OfChild(ctx, pid); err != nil {
		idErr = err
	} else {
		ident.Run, ident.TaskID = s.run, s.task.ID
		if self, err := supervise.Self(ctx); err == nil {
			// The starter: a daemon starting after this one takes over
			// the run only once this process is gone.
			ident.StarterPID, ident.StarterStart = self.PID, self.StartTime
		}
		if idErr = ident.Save(path); idErr == nil {
			p.dropClaim(s.task.ID) // the identity says it all now
		}
	}
	if idErr != nil {
		p.Logger.Warn("run identity not saved", "task", s.task.ID, "run", s.run, "err", idErr)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timeout := s.profile.Timeout()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var stopped string
	var timedOut bool
	var err error
	select {
	case err = <-done:
	case <-timer.C:
		stopped, timedOut = "timed out after "+timeout.String(), true
	case <-ctx.Done():
		stopped = "stopped: " + context.Cause(ctx).Error()
	}
	if stopped != "" {
		procgroup.Stop(pid, p.grace(), 2*time.Second)
		cmd.Process.Kill() // where there are no groups; harmless after
		err = <-done
	} else {
		procgroup.Stop(pid, p.grace(), 2*time.Second) // what the agent left running in its group
	}
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil // it exited 0; what it left behind held the output open
	}
	r := &ran{finished: p.Now().UTC().Truncate(time.Millisecond), timedOut: stopped != "" && timedOut, stopped: stopped != "" && !timedOut}
	last := lastLine(out.Tail(4096), 200)
	if s.reader != nil {
		// A preset's finish line is the agent's final message, not the
		// last line of its JSON stream (issue 29 item 3).
		s.reader.Close()
		if f := lastLine(s.mask(s.reader.Summary().Final), 200); f != "" {
			last = f
		}
	}
	suffix := ""
	if last != "" {
		suffix = ": " + last
	}
	var ee *exec.ExitError
	switch {
	case stopped != "":
		r.status = fmt.Sprintf("%s %s%s", board.RunFailed, stopped, suffix)
	case err == nil:
		code := 0
		r.exitCode = &code
		r.status = "exit 0" + suffix
	case errors.As(err, &ee) && procgroup.Signal(ee) != "":
		r.status = fmt.Sprintf("%s killed (%s)%s", board.RunFailed, procgroup.Signal(ee), suffix)
	case errors.As(err, &ee):
		code := ee.ExitCode()
		r.exitCode = &code
		r.status = fmt.Sprintf("%s exit %d%s", board.RunFailed, code, suffix)
	default:
		r.status = fmt.Sprintf("%s %v%s", board.RunFailed, err, suffix)
	}
	return r, nil
}

// recordedCommit is the commit task t's last run recorded, "" when none.
func recordedCommit(t *board.Task) string {
	if t == nil || t.Results == nil {
		return ""
	}
	return t.Results.Commit
}

// finish writes the run's results, logs [agent:finish][id] status and
// moves the file to the folder FolderOf gives for it, under the board's
// lock.
func (p *Processor) finish(ctx context.Context, o *Outcome, r *ran, status, need string) (*Outcome, error) {
	ctx = context.WithoutCancel(ctx) // a stopped run is still recorded
	b := p.Board
	if r == nil {
		r = &ran{finished: p.Now().UTC().Truncate(time.Millisecond)}
	}
	o.Finish, o.Need, o.ExitCode, o.FinishedAt = status, need, r.exitCode, r.finished
	o.Duration = o.FinishedAt.Sub(o.StartedAt)
	o.Folder, _ = board.FolderOf(world.StatusFinish, status)
	unlock, err := b.Store.Lock(ctx)
	if err != nil {
		return o, err
	}
	defer unlock()
	// The entries and the file's change commit together where the board
	// is in PostgreSQL (board.Atomic); on files the log goes first.
	var out *Outcome
	err = b.Atomically(ctx, func(b *board.Board) error {
		var err error
		out, err = p.record(ctx, b, o, r, status, need)
		return err
	})
	if out == nil {
		out = o
	}
	return out, err
}

// record is finish's work under the board's lock, on b, whose log and
// store may be one transaction's.
func (p *Processor) record(ctx context.Context, b *board.Board, o *Outcome, r *ran, status, need string) (*Outcome, error) {
	a, _, err := b.Log.Lookup(ctx, o.ID)
	if err != nil {
		return o, err
	}
	superseded := func(run int, folder board.Folder) (*Outcome, error) {
		// Another run began meanwhile (a person requeued the task while
		// this one ran, and 'cra task run' started the next): the file
		// and the log are that run's now. This one is only reported.
		o.Folder, o.Finish = folder, fmt.Sprintf("superseded: run %d of task %s began while run %d ran; its output is in %s", run, o.ID, o.Run, o.LogPath)
		return o, nil
	}
	// The log first, before the file is read: a file that cannot be read
	// (a hand edit broke it) must not leave the run active in the log for
	// ever, which no one could then finish.
	if n, ok := world.ParseRun(a.Output); a.Status == world.StatusActive && ok && n != o.Run {
		_, folder, _ := b.Store.Get(ctx, o.ID)
		return superseded(n, folder)
	}
	logged := a.Status == world.StatusActive
	if logged {
		if _, err := b.Log.Agent(ctx, world.StatusFinish, o.ID, status, need); err != nil {
			return o, fmt.Errorf("log the end of run %d of task %s: %w", o.Run, o.ID, err)
		}
	}
	if r.stopped && r.then == nil {
		// cra stopped the run (the daemon's shutdown): not the agent's
		// failure, and no review; the next start continues it.
		r.then = &then{status: world.StatusRetry, folder: board.Pending,
			output: board.Clip("continue: the run was stopped when cra stopped ("+status+")", 300)}
	}
	if logged && r.then != nil && o.Folder == board.Failed {
		if _, err := b.Log.Agent(ctx, r.then.status, o.ID, r.then.output, r.then.need); err != nil {
			return o, fmt.Errorf("log what follows run %d of task %s: %w", o.Run, o.ID, err)
		}
		o.Folder = r.then.folder
		if r.then.need != "" {
			o.Need = r.then.need
		}
	} else {
		r.then = nil
	}
	t, folder, err := b.Store.Get(ctx, o.ID)
	if err != nil {
		return o, fmt.Errorf("task %s: run %d finished in the world log but its file cannot be read (fix it, then run 'cra task rebuild'): %w", o.ID, o.Run, err)
	}
	if t.Runs != o.Run {
		return superseded(t.Runs, folder)
	}
	if f, ok := board.FolderOf(a.Status, a.Output); ok && a.Status != world.StatusActive {
		// The log moved on while the run ended: Level 2 stopped a stale
		// run and logged its retry first. The run's results are kept and
		// the file follows the log.
		o.Folder, o.Finish = f, fmt.Sprintf("stopped: the world log has it at %s: %s", a.Status, a.Output)
		// Its end still has a line of its own (issue 29 item 4): an event,
		// since the lifecycle has moved past a finish.
		if _, err := b.Log.Event(ctx, world.SourceSystem, o.ID, board.Clip(fmt.Sprintf("run %d ended: %s", o.Run, status), 300)); err != nil {
			return o, fmt.Errorf("log the end of run %d of task %s: %w", o.Run, o.ID, err)
		}
	}
	t.SetOutput(r.output)
	t.Results.ExitCode, t.Results.TimedOut = r.exitCode, r.timedOut
	t.Results.StartedAt, t.Results.FinishedAt = o.StartedAt, o.FinishedAt
	t.Results.DurationMS = max(o.Duration.Milliseconds(), 0)
	t.Results.Branch, t.Results.DiffStat, t.Results.Host = o.Branch, o.DiffStat, p.Host
	if o.Commit != "" {
		// The commit the run pushed, the only one of its branch another
		// host takes from the remote (a run that made none, as one that
		// did not start, leaves the last run's).
		t.Results.Commit = o.Commit
	}
	t.Results.Validation, t.Results.Classification = "", ""
	t.EndpointFailures, t.RetryAfter = 0, time.Time{}
	if r.then != nil {
		if r.then.folder.Terminal() {
			t.ProcessorAutoRequeue = false
		}
		if r.then.update != nil {
			r.then.update(t)
		}
	}
	if u := o.usage(); u != nil {
		t.Results.Usage = u
	}
	t.UpdatedAt = o.FinishedAt
	if err := b.Store.Put(ctx, t, folder); err != nil {
		return o, fmt.Errorf("task %s finished in the world log but its file was not updated (run 'cra task rebuild'): %w", o.ID, err)
	}
	if folder != o.Folder {
		if err := b.Store.Move(ctx, o.ID, folder, o.Folder); err != nil {
			return o, fmt.Errorf("task %s finished in the world log but its file did not move (run 'cra task rebuild'): %w", o.ID, err)
		}
	}
	return o, nil
}

// Tick starts runs of the pending tasks the processor may pick, in Order
// (verified being the tasks in completed-finalized), skipping any already
// running, until MaxParallel runs are going; the runs go on in the
// background (Wait waits for them). It returns the ids it started.
func (p *Processor) Tick(ctx context.Context) ([]string, error) {
	p.reload()
	if p.Running() >= p.MaxParallel() {
		return nil, nil // every slot busy: nothing to read
	}
	pending, err := p.Board.Store.List(ctx, board.Pending)
	if err != nil {
		return nil, err
	}
	// Only the ids of finalized tasks matter (for after), and that folder
	// only grows: their files are not read.
	final, err := p.Board.Store.IDs(ctx, board.CompletedFinalized)
	if err != nil {
		return nil, err
	}
	verified := make(map[string]bool, len(final))
	for _, id := range final {
		verified[id] = true
	}
	var tasks []*board.Task
	now := p.Now()
	for _, l := range pending {
		if l.Err != nil {
			p.Logger.Warn("task file skipped", "task", l.ID, "err", l.Err)
			continue
		}
		if l.Task.RetryAfter.After(now) {
			continue // its agent's endpoint failed: backing off
		}
		tasks = append(tasks, l.Task)
	}
	ordered := board.Order(tasks, verified)
	var leased map[string]bool
	if p.Leases != nil {
		if leased, err = p.claimLeases(ctx, ordered); err != nil {
			return nil, err
		}
	}
	var startedIDs []string
	for _, t := range ordered {
		if leased != nil && !leased[t.ID] {
			continue
		}
		limit := p.MaxParallel()
		if p.Running() >= limit || !p.claimUnder(t.ID, limit) {
			if leased != nil {
				p.releaseLease(ctx, t.ID) // claimed, but no slot after all
			}
			continue
		}
		startedIDs = append(startedIDs, t.ID)
		p.wg.Add(1)
		go func(id string) {
			defer p.wg.Done()
			defer p.release(id)
			if leased != nil {
				defer p.releaseLease(ctx, id) // after the finish is recorded
			}
			_, err := p.run(ctx, id)
			switch {
			case err == nil, errors.Is(err, ErrBusy):
			case errors.Is(err, ErrLeaseLost):
				p.Logger.Warn("run stopped: its lease was lost", "task", id, "err", err)
			default:
				p.Logger.Error("run failed to record", "task", id, "err", err)
			}
		}(t.ID)
	}
	return startedIDs, nil
}

// claimLeases claims, through Leases, as many of the ordered tasks as
// this processor has free slots for, and returns the ids it holds.
func (p *Processor) claimLeases(ctx context.Context, ordered []*board.Task) (map[string]bool, error) {
	free := p.MaxParallel() - p.Running()
	var ids []string
	now := p.Now()
	for _, t := range ordered {
		if p.Holds(t.ID) {
			continue
		}
		if t.Results != nil && t.Results.Host != "" && t.Results.Host != p.Host && now.Sub(t.UpdatedAt) < p.PreferFor {
			continue // its last run's host has its working copy: it goes first
		}
		ids = append(ids, t.ID)
	}
	if free <= 0 || len(ids) == 0 {
		return map[string]bool{}, nil
	}
	got, err := p.Leases.Claim(ctx, ids, free)
	if err != nil {
		return nil, fmt.Errorf("claim pending tasks: %w", err)
	}
	leased := make(map[string]bool, len(got))
	for _, id := range got {
		leased[id] = true
	}
	return leased, nil
}

// releaseLease lets go of this host's lease on task id's run, even when
// ctx has ended (the daemon stopping).
func (p *Processor) releaseLease(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := p.Leases.Release(ctx, id); err != nil {
		p.Logger.Warn("lease not released: it expires by itself", "task", id, "err", err)
	}
}

// Wait waits for the runs Tick started.
func (p *Processor) Wait() { p.wg.Wait() }

// Loop calls Tick every interval until ctx ends, then stops the runs it
// started (their finish entries say so) and waits for them.
func (p *Processor) Loop(ctx context.Context, every time.Duration) error {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if _, err := p.Tick(ctx); err != nil && ctx.Err() == nil {
			p.Logger.Error("processor tick", "err", err)
		}
		select {
		case <-ctx.Done():
			p.Wait()
			return nil
		case <-tick.C:
		}
	}
}
