package supervise

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/world"
)

// Pass is one Level 1 pass over a repository (seed 002 Phase 3): report
// the log's entries the lifecycle forbids (reportSkipped), put task files
// back where the log says (repairFolders), read who the log calls active,
// look at the machine, decide (Reconcile), act (Executor). 'cra supervise --once' runs one; the daemon runs one at
// start and every few seconds.
type Pass struct {
	// Log is the world log; required.
	Log world.Store
	// Board restarts and fails board tasks; nil when there is none, and
	// then an agent whose run died cannot be restarted and is failed.
	Board Board
	// StateDir is the repository's .clean_room/: runs record their
	// identity under its runs/, and only processes whose CRA_STATE_DIR
	// names it are this repository's.
	StateDir string
	// Only, when set, narrows the processes a pass looks at further
	// (tests: to the ones they started).
	Only func(Process) bool
	// Policy bounds restarts; the zero value is DefaultPolicy.
	Policy Policy
	// DryRun describes each action on Out and takes none.
	DryRun bool
	// Out gets a line per action and per unreadable run file; nil
	// discards.
	Out io.Writer
	// Now is the pass's clock; nil is time.Now.
	Now func() time.Time
	// Stop ends orphans; nil is the package's Stop (tests substitute).
	Stop func(ctx context.Context, k Kill, grace time.Duration) (bool, error)
	// TakeOver stops the live runs of active agents before deciding: a
	// daemon starting after one that died (kill -9) has no process
	// waiting for those runs, so nothing would record how they end. They
	// are stopped, logged, and restarted by the same pass.
	TakeOver bool
	// Held, when set, reports whether this process holds the run of task
	// id: the daemon's processor, between claiming a task and logging how
	// its run ended. Such a run is never restarted, failed or killed by
	// the pass, however long its start (a worktree of a large repository)
	// or its wrap-up (the commit, the diff) takes: the processor logs how
	// it ends.
	Held func(id string) bool
	// Owned, when set, narrows the active agents the pass acts on to the
	// runs this host holds: on a fleet (issue 34), another host's run has
	// no process here, and this pass must not take it for dead. It is
	// read once per pass. Processes are this machine's whatever it says.
	Owned func(ctx context.Context) (func(id string) bool, error)

	// gone holds when this pass first found each task's recorded run gone
	// while its starter lived (Input.GoneSince), across the Runs of one
	// Pass: the daemon keeps one.
	gone map[string]time.Time
	// future keeps times the log stamps after now (an active entry, a
	// restart) from deferring a wait past when the pass first saw them.
	future FutureClamp
	// recent is the last read of the log's restarts, kept while the log
	// file is unchanged: an idle daemon read its whole log every pass,
	// a cost that grew with the board's history.
	recent restartMemo
}

// restartMemo is the restart events read from the log at version v, of
// the window starting at since.
type restartMemo struct {
	ok     bool
	v      world.Version
	since  time.Time
	events []world.Entry
}

// Board is what a pass needs of the task board (*board.Board is one).
type Board interface {
	// Has reports whether id is a task on the board.
	Has(ctx context.Context, id string) (bool, error)
	// RestartRun restarts a task whose run is gone, under the board's
	// lock and only while the log still has it active in run run (any run
	// when 0): it logs [event:system][id] event, then [agent:retry][id]
	// output, then moves the task to pending for the processor. A task
	// that moved on meanwhile (its daemon logged the finish) gets an error
	// wrapping ErrMovedOn and nothing written.
	RestartRun(ctx context.Context, id string, run int, event, output string) error
	// BlockRun logs [agent:failed][id] output | need: need, then moves
	// the task to failed-blocked, with RestartRun's condition.
	BlockRun(ctx context.Context, id string, run int, output, need string) error
	// RepairFolders moves each task file that is not in the folder its
	// latest entry puts it in (a move that failed after its log line)
	// there, leaving alone active tasks and those live reports a run
	// still going for, and returns what it moved, a line each.
	RepairFolders(ctx context.Context, live func(id string) bool) ([]string, error)
}

// Run carries out one pass and returns the actions it decided on (taken,
// or described in a dry run).
func (p *Pass) Run(ctx context.Context) ([]Action, error) {
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	t := now()
	policy := p.Policy.withDefaults()
	if err := p.reportSkipped(ctx); err != nil {
		p.say("warning: %v", err) // the report waits for the next pass; the runs do not
	}
	if err := p.repairFolders(ctx); err != nil {
		p.say("warning: %v", err) // tried again next pass
	}
	// The active agents alone: their lines are read, not every agent's
	// (a board with 10,000 closed tasks read as many on every pass).
	agents, err := p.Log.CurrentIn(ctx, world.StatusActive)
	if err != nil {
		return nil, err
	}
	active := ActiveAgents(agents)
	if p.Owned != nil {
		mine, err := p.Owned(ctx)
		if err != nil {
			return nil, fmt.Errorf("level 1: which runs this host holds: %w", err)
		}
		active = slices.DeleteFunc(active, func(a Active) bool { return !mine(a.ID) })
	}
	for i, a := range active {
		active[i].Since = p.future.At("active "+a.ID, a.Since, t)
	}
	defer p.future.Prune()
	obs, err := p.observe(ctx, active)
	if err != nil {
		return nil, err
	}
	for _, perr := range obs.Problems {
		p.say("warning: %v", perr)
	}
	if p.TakeOver {
		if obs, err = p.takeOver(ctx, active, obs); err != nil {
			return nil, err
		}
	}
	restarts, err := p.restarts(ctx, t.Add(-policy.Window))
	if err != nil {
		return nil, err
	}
	for id, ts := range restarts {
		for i, r := range ts {
			ts[i] = p.future.At("restart "+id, r, t)
		}
	}
	starters := map[string]bool{}
	for _, a := range active {
		if id, ok := obs.Runs[a.ID]; ok && id.StarterAlive(ctx) {
			starters[a.ID] = true
		}
	}
	claims := map[string]Identity{}
	for _, a := range active {
		if c, ok := obs.Claims[a.ID]; ok && c.Run == a.Run && c.StarterAlive(ctx) {
			claims[a.ID] = c
		}
	}
	held := map[string]bool{}
	for _, a := range active {
		if p.Held != nil && p.Held(a.ID) {
			held[a.ID] = true
		}
	}
	actions := Reconcile(Input{Active: active, Runs: obs.Runs, Procs: obs.Procs, Restarts: restarts,
		StarterAlive: starters, Held: held, Claims: claims, GoneSince: p.gone, Now: t, Policy: policy})
	gone := map[string]time.Time{}
	for _, a := range actions {
		if w, ok := a.(Wait); ok && w.Finishing {
			since, seen := p.gone[w.ID]
			if !seen {
				since = t
			}
			gone[w.ID] = since
		}
	}
	p.gone = gone
	actions = p.onlyBoardRestarts(ctx, actions)
	e := &Executor{
		Restart: func(ctx context.Context, r Restart, event string) error {
			return p.Board.RestartRun(ctx, r.ID, r.Run, event, "restarted by Level 1: "+r.Reason)
		},
		Fail: p.fail,
		Log: func(ctx context.Context, id, output string) error {
			_, err := p.Log.Event(ctx, world.SourceSystem, id, output)
			return err
		},
		Stop:   p.Stop,
		DryRun: p.DryRun,
		Out:    p.Out,
	}
	return actions, e.Apply(ctx, actions)
}

// takeOver stops each live recorded run of an active agent, logs it, and
// observes again.
func (p *Pass) takeOver(ctx context.Context, active []Active, obs Observation) (Observation, error) {
	stop := p.Stop
	if stop == nil {
		stop = Stop
	}
	took := false
	for _, a := range active {
		id, ok := obs.Runs[a.ID]
		if !ok || id.StarterAlive(ctx) {
			continue // no run, or one its starter (a cra task run) still waits for
		}
		for _, pr := range obs.Procs {
			if pr.PID != id.PID || pr.StartTime != id.StartTime || !p.ours(pr) {
				continue
			}
			k := Kill{PID: pr.PID, StartTime: pr.StartTime, PGID: pr.PID, TaskID: a.ID, Run: id.Run,
				Reason: "taken over", Detail: "its daemon is gone, so nothing waits for it; it is restarted"}
			if p.DryRun {
				p.say("would %s", k)
				continue
			}
			sent, err := stop(ctx, k, 0)
			if err != nil {
				return obs, err
			}
			if sent {
				took = true
				p.say("%s", k)
				if _, err := p.Log.Event(ctx, world.SourceSystem, strconv.Itoa(pr.PID), "killed | reason: taken over (run "+strconv.Itoa(id.Run)+" of "+a.ID+": its daemon is gone)"); err != nil {
					return obs, err
				}
			}
		}
	}
	if !took {
		return obs, nil
	}
	return p.observe(ctx, active)
}

// observe reads the active agents' runs and this repository's tagged
// processes.
func (p *Pass) observe(ctx context.Context, active []Active) (Observation, error) {
	obs, err := Observe(ctx, statedir.At(p.StateDir).Runs(), active)
	if err != nil {
		return obs, err
	}
	obs.Procs = slices.DeleteFunc(obs.Procs, func(pr Process) bool { return !p.ours(pr) })
	return obs, nil
}

// ours reports whether a tagged process belongs to this repository: its
// CRA_STATE_DIR names the state directory. One that names none, or another,
// is never this pass's to kill: it may be another repository's agent.
func (p *Pass) ours(pr Process) bool {
	if pr.StateDir == "" || filepath.Clean(pr.StateDir) != filepath.Clean(p.StateDir) {
		return false
	}
	return p.Only == nil || p.Only(pr)
}

// restarts rebuilds Level 1's recent restarts from the log, so that a
// daemon that restarts keeps counting towards the start limit.
// While the log file is unchanged (a file log's Version), a later window
// is the events of the last read from its start on.
func (p *Pass) restarts(ctx context.Context, since time.Time) (map[string][]time.Time, error) {
	vl, versioned := p.Log.(interface{ Version() (world.Version, bool) })
	var v world.Version
	ok := false
	if versioned {
		v, ok = vl.Version() // before the read: a line written during it changes the next one
	}
	m := p.recent
	if ok && m.ok && m.v == v && !since.Before(m.since) {
		return Restarted(slices.DeleteFunc(slices.Clone(m.events), func(e world.Entry) bool { return e.Time.Before(since) })), nil
	}
	events, err := systemEvents(ctx, p.Log, since)
	if err != nil {
		return nil, err
	}
	p.recent = restartMemo{ok: ok, v: v, since: since, events: events}
	return Restarted(events), nil
}

// RecentRestarts reads from the log the restarts of each agent since
// since (Restarted over its [event:system] lines), Level 1's and Level
// 2's alike: what the start limit counts.
func RecentRestarts(ctx context.Context, l world.Store, since time.Time) (map[string][]time.Time, error) {
	events, err := systemEvents(ctx, l, since)
	return Restarted(events), err
}

// systemEvents returns the log's well-formed [event:system] entries
// stamped since since, in order.
func systemEvents(ctx context.Context, l world.Store, since time.Time) ([]world.Entry, error) {
	var entries []world.Entry
	err := l.Select(ctx, world.Filter{Kind: world.KindEvent, Sources: []world.Source{world.SourceSystem}, Since: since}, func(r *world.Record) error {
		if r.Err == nil {
			entries = append(entries, r.Entry)
		}
		return nil
	})
	return entries, err
}

// onlyBoardRestarts turns the restart of an agent that is not a board
// task (a 'cra solve' whose process died) into a failure that says so:
// only the board can start a run again.
func (p *Pass) onlyBoardRestarts(ctx context.Context, actions []Action) []Action {
	for i, a := range actions {
		r, ok := a.(Restart)
		if !ok {
			continue
		}
		onBoard, err := p.onBoard(ctx, r.ID)
		if err != nil {
			// One task file that cannot be read (a hand edit broke its
			// YAML) stops its own restart, which fails on it and says so,
			// not every other action of the pass.
			continue
		}
		if !onBoard {
			actions[i] = Fail{ID: r.ID, Reason: "run died: " + r.Detail,
				Need: "it is not a board task, so nothing restarts it: look at what it left (its branch cra/" + r.ID + "), then run it again"}
		}
	}
	return actions
}

func (p *Pass) onBoard(ctx context.Context, id string) (bool, error) {
	if p.Board == nil {
		return false, nil
	}
	return p.Board.Has(ctx, id)
}

// fail blocks a board task, or fails another agent in the log.
func (p *Pass) fail(ctx context.Context, f Fail) error {
	onBoard, err := p.onBoard(ctx, f.ID)
	if err != nil {
		return err
	}
	if onBoard {
		return p.Board.BlockRun(ctx, f.ID, f.Run, f.Reason, f.Need)
	}
	if _, err := p.Log.Agent(ctx, world.StatusFailed, f.ID, f.Reason, f.Need); err != nil {
		return fmt.Errorf("log the failure of %s: %w", f.ID, err)
	}
	return nil
}

func (p *Pass) say(format string, args ...any) {
	if p.Out != nil {
		fmt.Fprintf(p.Out, format+"\n", args...)
	}
}

// repairFolders has the board put back the task files the log places
// elsewhere (Board.RepairFolders): a task whose move failed after its log
// line does not wait for the daemon's next start. A task whose run may
// still go is left to it: the processor holds it (Held), or its run's
// process or starter, or a claim's starter, is alive. A dry run repairs
// nothing.
func (p *Pass) repairFolders(ctx context.Context) error {
	if p.Board == nil || p.DryRun {
		return nil
	}
	runs := statedir.At(p.StateDir).Runs()
	live := func(id string) bool {
		if p.Held != nil && p.Held(id) {
			return true
		}
		if path, err := RunFile(runs, id); err == nil {
			if run, err := LoadIdentity(path); err == nil {
				if alive, err := run.Alive(ctx); err != nil || alive || run.StarterAlive(ctx) {
					return true
				}
			}
		}
		if path, err := ClaimFile(runs, id); err == nil {
			if c, err := LoadClaim(path); err == nil && c.StarterAlive(ctx) {
				return true
			}
		}
		return false
	}
	moved, err := p.Board.RepairFolders(ctx, live)
	for _, m := range moved {
		p.say("repaired: %s", m)
	}
	if err != nil {
		return fmt.Errorf("repair task folders: %w", err)
	}
	return nil
}
