// Package fleet owns the supervision half of cra for one repository: the
// board, the processor that runs agent profiles, the recycler (seed 004's
// recycler and seed 002's Level 2), the supervisor agents (seed 003), the
// cleanup pass (seed 000) and the Level 1 pass (seed 002). Front ends call
// one *Fleet, as the execution half's front ends call one workspace: 'cra
// task …', 'cra recycle', 'cra supervisors', 'cra cleanup' and the daemon's
// HTTP API (internal/server) never build a worker or open a store
// themselves (DESIGN.md, "Packages"; tailscale's LocalBackend and
// soft-serve's backend.Backend are the model).
//
// The operations people and the server use (add, edit, move, answer, list,
// show, run one, recycle once, the settings, clean up) form the Ops
// interface, which *Fleet implements in process and server.Client
// implements over a running daemon's API, so that a command does not know
// which answered.
//
// The background loops of 'cra serve' are Services with one shape,
// Run(ctx) error, started and stopped as a group (River's maintenance
// services are the model): see Services and RunGroup.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/cleanup"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/fleet/runner"
	"github.com/cra-dev/cra/internal/fleetapi"
	"github.com/cra-dev/cra/internal/knowledge"
	"github.com/cra-dev/cra/internal/knowledge/supervisor"
	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/review"
	"github.com/cra-dev/cra/internal/supervise"
	"github.com/cra-dev/cra/internal/workspace"
	"github.com/cra-dev/cra/internal/world"
)

// ErrNoBoard is a repository without a state directory, opened without
// Options.Create: it has no board yet.
var ErrNoBoard = errors.New("the repository has no board yet (add a task with 'cra task add')")

// Options are the optional settings of Open.
type Options struct {
	// Create makes the state directory when the repository has none;
	// unset, such a repository is ErrNoBoard.
	Create bool
	// Now is the clock of the board, its log and its workers; nil is
	// time.Now.
	Now func() time.Time
	// Logger gets diagnostics; nil discards.
	Logger *slog.Logger
	// Out gets a line per action a person should see from the workers
	// (the recycler's verdicts, the supervisors' runs, Level 1's
	// restarts); nil discards.
	Out io.Writer
	// Malformed is told of each world-log line that cannot be read; nil
	// ignores them.
	Malformed func(r *world.Record)
	// Context writes the Context section of a board agent's prompt for
	// task within tokens (run.AgentContext, which the execution half
	// owns); nil leaves the section out.
	Context func(ctx context.Context, ws *workspace.Workspace, task string, tokens int) (string, error)
	// Getenv reads the variable [fleet] database_url_env names, when the
	// config keeps the board in PostgreSQL; nil is os.Getenv.
	Getenv func(string) string
	// Version is the cra this host runs, as a fleet host's heartbeat
	// says it ('cra fleet status' shows it); "" is "dev".
	Version string
}

// Fleet is one repository's supervision half: its board and the workers
// that act on it, built from the workspace and its config.
type Fleet struct {
	// Board is the repository's board.
	Board *board.Board

	ws     *workspace.Workspace
	now    func() time.Time
	logger *slog.Logger
	out    io.Writer
	// context is Options.Context.
	context func(ctx context.Context, ws *workspace.Workspace, task string, tokens int) (string, error)
	// version is Options.Version.
	version string

	mu        sync.Mutex
	processor *runner.Processor
	recycler  *review.Recycler

	settingsMu sync.Mutex // one settings change at a time (Settings, SetSettings)

	lastMu      sync.Mutex
	lastCleanup *fleetapi.CleanupPass // the last pass Cleanup ran, not dry

	closeDB func() // releases the PostgreSQL board's connections; nil for files
	getenv  func(string) string
	worker  *worker // this host's part of the fleet, once 'cra serve' made it
}

// Open returns the fleet of the repository ws opened. The fleet takes ws
// over: Close closes it.
func Open(ctx context.Context, ws *workspace.Workspace, opts Options) (*Fleet, error) {
	if !workspace.HasState(ws.Root) {
		if !opts.Create {
			return nil, ErrNoBoard
		}
		if _, err := workspace.EnsureStateDir(ws.Root); err != nil {
			return nil, err
		}
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if workspace.WorldBackendOf(ws.Config) == workspace.WorldPostgres {
		getenv := opts.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		b, closeDB, err := postgresBoard(ctx, ws, now, getenv)
		if err != nil {
			return nil, err
		}
		b.Now = now
		return &Fleet{Board: b, ws: ws, now: now, logger: logger, out: opts.Out, context: opts.Context, version: opts.Version, closeDB: closeDB, getenv: getenv}, nil
	}
	l, err := ws.Log()
	if err != nil {
		return nil, err
	}
	l.Now = now
	if ws.Config != nil && ws.Config.World != nil && ws.Config.World.Fsync != "" {
		if l.Sync, err = world.ParseSyncPolicy(ws.Config.World.Fsync); err != nil {
			return nil, err
		}
	}
	l.Malformed = opts.Malformed
	b := board.New(board.NewFileStore(ws.StateDir), l)
	b.Now = now
	return &Fleet{Board: b, ws: ws, now: now, logger: logger, out: opts.Out, context: opts.Context}, nil
}

// Close stops the endpoint the processor's runs report to, and closes
// the workspace the fleet was opened over.
func (f *Fleet) Close() error {
	f.mu.Lock()
	p, w := f.processor, f.worker
	f.mu.Unlock()
	var err error
	if p != nil {
		err = p.Close()
	}
	if w != nil {
		w.close()
	}
	if f.closeDB != nil {
		f.closeDB()
	}
	return errors.Join(err, f.ws.Close())
}

// Root is the repository's root.
func (f *Fleet) Root() string { return f.ws.Root }

// StateDir is the repository's .clean_room/.
func (f *Fleet) StateDir() string { return f.ws.StateDir }

// Config loads the repository's config.toml as it is now: the workers
// read it on every tick, so a change takes effect without a restart.
//
// On a fleet the settings a person changes from the web board are the
// fleet's, kept in its database, and lie over config.toml's (Settings).
func (f *Fleet) Config() (*config.Config, error) {
	cfg, err := workspace.LoadConfig(f.ws.Root)
	if err != nil || f.closeDB == nil {
		return cfg, err
	}
	if cfg == nil {
		cfg = &config.Config{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.overlayShared(ctx, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Processor returns the fleet's processor, made on first use: the one
// that 'cra task run' and the daemon run tasks with, so that a run it
// holds is known to the Level 1 pass (Level1).
func (f *Fleet) Processor() *runner.Processor {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.processor == nil {
		p := runner.NewProcessor(f.Board, f.ws.Root, f.ws.StateDir, f.ws.Config)
		p.Load = f.Config // a changed config.toml is read by the next tick and run
		p.Now = f.now
		root := f.ws.Root
		p.Knowledge = func(ctx context.Context, task string) (string, error) {
			// A fleet's prompts read the knowledge every host shares: the
			// store syncs with the remote first (issue 34 item 6).
			if err := f.syncForRun(ctx, p.CurrentConfig()); err != nil {
				return "", err
			}
			k, err := knowledge.Load(root, task, knowledge.MaxTokens)
			if k == nil || err != nil {
				return "", err
			}
			return k.Text, nil
		}
		if f.context != nil {
			p.Context = func(ctx context.Context, task string, tokens int) (string, error) {
				return f.context(ctx, f.ws, task, tokens)
			}
		}
		p.Logger = f.logger
		p.RecordUsage = f.recordUsage
		f.processor = p
	}
	return f.processor
}

// recordUsage records a preset run's token usage in raw.sqlite's
// llm_calls beside cra's own calls: a row of type agent_run for the run,
// with its total, and one of type agent_call for each call or turn its
// output counted (issue 29 item 3). The cached tokens, for which the
// table has no column, are in the run row's response.
func (f *Fleet) recordUsage(ctx context.Context, u runner.RunUsage) error {
	c, err := f.ws.Corpus(ctx)
	if err != nil {
		return err
	}
	resp := fmt.Sprintf("cached_tokens: %d\n%s", u.Total.Cached, u.Final)
	if _, err := c.AddCall(ctx, corpus.Call{TaskID: u.RunTaskID, Type: "agent_run", Role: "agent", Provider: u.Preset, Model: u.Total.Model,
		Prompt: "(the agent's own prompts: see its run log)", Response: resp,
		PromptTokens: int(u.Total.Input), CompletionTokens: int(u.Total.Output), Latency: u.Duration}); err != nil {
		return err
	}
	for _, call := range u.Calls {
		if _, err := c.AddCall(ctx, corpus.Call{TaskID: u.RunTaskID, Type: "agent_call", Role: "agent", Provider: u.Preset, Model: call.Model,
			Prompt: "(the agent's own prompt)", Response: fmt.Sprintf("cached_tokens: %d", call.Cached),
			PromptTokens: int(call.Input), CompletionTokens: int(call.Output)}); err != nil {
			return err
		}
	}
	return nil
}

// recorder records the workers' model calls in raw.sqlite.
func (f *Fleet) recorder(ctx context.Context) (*llm.Recorder, error) {
	c, err := f.ws.Corpus(ctx)
	if err != nil {
		return nil, err
	}
	return llm.NewRecorder(c), nil
}

// Recycler returns the fleet's recycler, made on first use, its settings
// read from config.toml on every tick, its lines to Options.Out.
func (f *Fleet) Recycler(ctx context.Context) (*review.Recycler, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.recycler != nil {
		return f.recycler, nil
	}
	rec, err := f.recorder(ctx)
	if err != nil {
		return nil, err
	}
	f.recycler = &review.Recycler{
		Board: f.Board, Root: f.ws.Root, StateDir: f.ws.StateDir,
		History: f.reviewHistory(),
		Config:  f.Config, Recorder: rec,
		Out: f.out, Logger: f.logger, Now: f.now,
	}
	if f.closeDB != nil {
		// On a fleet the run reviewed may have been another host's.
		f.recycler.Fetch = func(ctx context.Context, id string) error { return f.Processor().FetchBranch(ctx, id) }
		f.recycler.Notices = f.Board.Log.(review.NoticeQueue) // pgstore.Log: every host that leads reads the same queue
	}
	return f.recycler, nil
}

// Supervisors returns the supervisor agents, their settings read from
// config.toml on every check, their lines to out; each run that wrote
// something is followed by the cleanup pass (seed 000).
func (f *Fleet) Supervisors(ctx context.Context, out io.Writer) (*supervisor.Runner, error) {
	rec, err := f.recorder(ctx)
	if err != nil {
		return nil, err
	}
	return &supervisor.Runner{
		Board: f.Board, Root: f.ws.Root, StateDir: f.ws.StateDir, History: f.reviewHistory(),
		Config: f.Config, Recorder: rec,
		Out: out, Logger: f.logger, Now: f.now,
		After: func(ctx context.Context) error {
			rep, err := f.Cleanup(ctx, false)
			if errors.Is(err, cleanup.ErrRunning) {
				return nil // the one running does the job
			}
			if err == nil && out != nil {
				fmt.Fprintf(out, "cleanup: %s\n", rep.Summary())
			}
			return err
		},
	}, nil
}

// Cleanup runs one cleanup pass (seed 000): what 'cra cleanup', the
// board's Clean Up button and the supervisors' runs start. A dry run asks
// no model, so it opens no raw database. A pass that is not dry is kept
// as LastCleanup.
func (f *Fleet) Cleanup(ctx context.Context, dryRun bool) (*CleanupReport, error) {
	deps := cleanup.Deps{Board: f.Board, Root: f.ws.Root, StateDir: f.ws.StateDir, Now: f.now, Logger: f.logger}
	if !dryRun {
		rec, err := f.recorder(ctx)
		if err != nil {
			return nil, err
		}
		// config.toml as it is now, as the other workers read it: a
		// daemon's pass asks the models a person set since it started.
		cfg, err := f.Config()
		if err != nil {
			return nil, err
		}
		deps.Gateway = llm.NewGateway(f.ws.RouterFor(ctx, cfg), rec)
		deps.Gateway.Logger = f.logger
	}
	rep, err := cleanup.Run(ctx, deps, cleanup.Options{DryRun: dryRun})
	if !dryRun && !errors.Is(err, cleanup.ErrRunning) {
		last := &fleetapi.CleanupPass{Report: rep, Finished: f.now()}
		if err != nil {
			last.Error = err.Error()
		}
		f.lastMu.Lock()
		f.lastCleanup = last
		f.lastMu.Unlock()
	}
	return rep, err
}

// LastCleanup is the last cleanup pass this fleet ran, the button's,
// a command's through the daemon or the supervisors' (not a dry run, nor
// one refused because another ran); nil before the first.
func (f *Fleet) LastCleanup() *fleetapi.CleanupPass {
	f.lastMu.Lock()
	defer f.lastMu.Unlock()
	if f.lastCleanup == nil {
		return nil
	}
	last := *f.lastCleanup
	return &last
}

// CleanupRunning says whether a cleanup pass runs now, in any process.
func (f *Fleet) CleanupRunning() bool { return cleanup.Running(f.ws.StateDir) }

// Level1 returns a Level 1 pass over the fleet's log and board (seed
// 002): the runs the fleet's processor holds are its own. takeOver makes
// it the first pass of a daemon starting after one that died.
func (f *Fleet) Level1(out io.Writer, takeOver bool) *supervise.Pass {
	p := &supervise.Pass{Log: f.Board.Log, Board: f.Board, StateDir: f.ws.StateDir, Out: out, TakeOver: takeOver}
	f.mu.Lock()
	if f.processor != nil {
		p.Held = f.processor.Holds // its runs, from claim to finish, are its own
	}
	if f.worker != nil {
		p.Owned = f.worker.owned // on a fleet, another host's runs are not this pass's
	}
	f.mu.Unlock()
	return p
}

// Repair puts every task file where the world log says (board.RebuildAtStart),
// as the daemon does at start.
func (f *Fleet) Repair(ctx context.Context) (board.Report, error) {
	return f.Board.RebuildAtStart(ctx)
}

// ErrCleanupRunning is a cleanup pass refused because one runs already,
// in this process or another.
var ErrCleanupRunning = fleetapi.ErrCleanupRunning

// The board is what Level 1 restarts and fails tasks through.
var _ supervise.Board = (*board.Board)(nil)
