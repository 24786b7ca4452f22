package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/fleet/runner"
	"github.com/cra-dev/cra/internal/pgstore"
	"github.com/cra-dev/cra/internal/sandbox"
	"github.com/cra-dev/cra/internal/supervise"
	"github.com/cra-dev/cra/internal/world"
)

// worker is this host's part of a fleet whose board is in PostgreSQL
// (issue 34 items 3 and 5): the leases of the runs it holds, which its
// processor claims and a pgstore.Keeper renews, and the shared duties it
// runs while it leads.
type worker struct {
	db      *pgstore.Fleet
	unguard func() // lets go of the database's ports (guardDatabase)
	host    string
	version string // the heartbeat's, at most 64 bytes
	lease   time.Duration
	started time.Time
	board   *board.Board
	now     func() time.Time

	mu   sync.Mutex
	p    *runner.Processor
	held map[string]pgstore.Lease // by task
	// gone are the held runs whose leases this host lost: not renewed,
	// but released once their copies stopped (a revoked lease frees its
	// task only then).
	gone map[string]bool
	// unleased holds when the leader's sweep first saw each task active
	// with no lease: seen on two sweeps, it is restarted.
	unleased map[string]time.Time
}

// openWorker opens the fleet's tables of the board's PostgreSQL as host
// [fleet] host.
func (f *Fleet) openWorker(ctx context.Context) (*worker, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.worker != nil {
		return f.worker, nil
	}
	fs, err := f.ws.Config.FleetSettings()
	if err != nil {
		return nil, err
	}
	url, err := fs.DatabaseURL(f.getenv)
	if err != nil {
		return nil, err
	}
	db, err := pgstore.OpenFleet(ctx, url)
	if err != nil {
		return nil, err
	}
	// With [board] sandbox = "off" agents run unconfined: nothing fences
	// them, whatever the kernel can.
	fenced := sandbox.KernelFences()
	if f.ws.Config.SandboxOff() {
		fenced = sandbox.Fences{}
	}
	unguard, err := guardDatabase(ctx, url, f.out, fenced)
	if err != nil {
		db.Close()
		return nil, err
	}
	version := f.version
	if version == "" {
		version = "dev"
	}
	if len(version) > 64 {
		version = version[:64]
	}
	f.worker = &worker{db: db, unguard: unguard, host: fs.Host, version: version, lease: fs.Lease, started: f.now(), board: f.Board, now: f.now,
		held: map[string]pgstore.Lease{}, gone: map[string]bool{}, unleased: map[string]time.Time{}}
	return f.worker, nil
}

func (w *worker) close() {
	w.db.Close()
	w.unguard()
}

// guardDatabase keeps confined agents off the database at url where the
// sandbox can: its TCP ports on this host's loopback are guarded
// (sandbox.Guard) until unguard is called. Where it cannot, and the
// database lets this OS user in with no password, out is told: an agent
// of this user on a Unix socket (the URL's, or any of a server on this
// host, which listens there whatever address the URL names), or on
// another host's address it can reach, could then write the world log
// as the daemon does. fenced says what the sandbox keeps agents off
// (sandbox.KernelFences; nothing with [board] sandbox = "off"): the
// guarded ports, a server's '@name' socket (Landlock ABI 6), a socket
// named by a path (ABI 9) are then no way in.
func guardDatabase(ctx context.Context, url string, out io.Writer, fenced sandbox.Fences) (unguard func(), err error) {
	reach, err := pgstore.ReachOf(url)
	if err != nil {
		return nil, err
	}
	var releases []func()
	unguard = func() {
		for _, r := range releases {
			r()
		}
	}
	for _, port := range reach.LoopbackPorts {
		release, err := sandbox.Guard(port)
		if err != nil {
			unguard()
			return nil, fmt.Errorf("keep agents off the database's port %d: %w", port, err)
		}
		releases = append(releases, release)
	}
	if out == nil {
		return unguard, nil
	}
	// The ways in that no sandbox rule fences and that ask no password:
	// the Unix sockets the URL names, the other sockets of a server on
	// this host (it listens there whatever address the URL names), and
	// the address of a server elsewhere.
	var sockets []string
	open, err := pgstore.OpensWithoutPassword(ctx, url)
	if err != nil {
		fmt.Fprintf(out, "warning: could not check whether the fleet's PostgreSQL lets an agent of this OS user in without a password: %v\n", err)
	}
	if open && !fenced.PathSockets {
		sockets = append(sockets, reach.Sockets...)
	}
	if len(reach.LoopbackPorts) > 0 || len(reach.Sockets) > 0 {
		more, err := pgstore.PasswordlessSockets(ctx, url)
		if err != nil && !errors.Is(err, pgstore.ErrUnreachable) {
			fmt.Fprintf(out, "warning: could not check whether the fleet's PostgreSQL lets an agent of this OS user in through a Unix socket without a password: %v\n", err)
		}
		for _, dir := range more {
			// An abstract socket is fenced where the kernel scopes them
			// (Landlock ABI 6), a socket's path where it fences those
			// (ABI 9): a confined agent cannot connect to it.
			if abstract := strings.HasPrefix(dir, "@"); abstract && fenced.AbstractSockets || !abstract && fenced.PathSockets {
				continue
			}
			if !slices.Contains(sockets, dir) {
				sockets = append(sockets, dir)
			}
		}
	}
	var ways []string
	if open && len(reach.LoopbackPorts) > 0 && !fenced.Ports {
		ports := make([]string, len(reach.LoopbackPorts))
		for i, p := range reach.LoopbackPorts {
			ports[i] = strconv.Itoa(p)
		}
		ways = append(ways, "its port "+strings.Join(ports, ", "))
	}
	if len(sockets) > 0 {
		ways = append(ways, "its Unix socket in "+strings.Join(sockets, ", "))
	}
	if open && len(reach.LoopbackPorts) == 0 && len(reach.Sockets) == 0 {
		ways = append(ways, "its address")
	}
	if len(ways) > 0 {
		fmt.Fprintf(out, "warning: the fleet's PostgreSQL lets this OS user in without a password (trust or peer authentication), and the sandbox cannot keep agents off %s%s: an agent running as this user could write its own verdict into the world log. Use password authentication (scram-sha-256) with the password only in the URL's variable, or run the agents as another OS user\n",
			strings.Join(ways, " or "), unconfined(fenced))
	}
	return unguard, nil
}

// unconfined says why no fence holds, where none does.
func unconfined(fenced sandbox.Fences) string {
	if fenced == (sandbox.Fences{}) {
		return " (agents run unconfined: [board] sandbox = \"off\")"
	}
	return ""
}

// runFor makes p the processor whose runs the worker's leases hold.
func (w *worker) runFor(p *runner.Processor) {
	w.mu.Lock()
	w.p = p
	w.mu.Unlock()
	p.Leases, p.Host, p.PreferFor = w, w.host, w.lease/4
}

// Claim takes up to n of ids for this host (runner.Leases).
func (w *worker) Claim(ctx context.Context, ids []string, n int) ([]string, error) {
	ls, err := w.db.ClaimPending(ctx, w.host, ids, n, w.lease)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		w.held[l.TaskID] = l
		out = append(out, l.TaskID)
	}
	return out, nil
}

// Release ends this host's lease on task id's run (runner.Leases).
func (w *worker) Release(ctx context.Context, id string) error {
	w.mu.Lock()
	l, ok := w.held[id]
	delete(w.held, id)
	delete(w.gone, id)
	w.mu.Unlock()
	if !ok {
		return nil
	}
	// A lease taken over is another host's run now, and releases
	// nothing; a revoked one frees its task.
	_, err := w.db.Release(ctx, w.host, l.RunID)
	return err
}

// Holds reports whether the database still gives this host the lease
// of task id's run, unrevoked (runner.Leases).
func (w *worker) Holds(ctx context.Context, id string) (bool, error) {
	w.mu.Lock()
	l, ok := w.held[id]
	ok = ok && !w.gone[id]
	w.mu.Unlock()
	if !ok {
		return false, nil
	}
	ls, err := w.mine(ctx)
	if err != nil {
		return false, err
	}
	for _, x := range ls {
		if x.TaskID == id && x.RunID == l.RunID && x.Revoked == "" {
			return true, nil
		}
	}
	return false, nil
}

// Held returns the leases of the runs this host holds and has not lost,
// each with its run's last output (the leader's Level 2 reads it), for
// the keeper.
func (w *worker) Held() []pgstore.Lease {
	w.mu.Lock()
	p := w.p
	out := make([]pgstore.Lease, 0, len(w.held))
	for id, l := range w.held {
		if !w.gone[id] {
			out = append(out, l)
		}
	}
	w.mu.Unlock()
	if p != nil {
		for i := range out {
			out[i].LastOutput, _ = p.LastOutput(out[i].TaskID)
		}
	}
	return out
}

// lost stops this host's copy of a run whose lease it lost.
func (w *worker) lost(l pgstore.Lost) {
	w.mu.Lock()
	h, ok := w.held[l.TaskID]
	ok = ok && h.RunID == l.RunID && !w.gone[l.TaskID]
	if ok {
		w.gone[l.TaskID] = true
	}
	p := w.p
	w.mu.Unlock()
	if ok && p != nil {
		p.Lose(l.TaskID, l.Reason)
	}
}

// keeper renews this host's leases and sends its heartbeat.
func (w *worker) keeper(slots int, grace time.Duration, logger *slog.Logger) *pgstore.Keeper {
	return &pgstore.Keeper{
		Fleet: w.db,
		Host:  pgstore.Host{Name: w.host, Started: w.started, Slots: slots, Version: w.version},
		Lease: w.lease, Held: w.Held, Lost: w.lost, Logger: logger,
		// A copy stopped by its deadline has ended, its grace included,
		// before the lease runs out in the database.
		Margin: grace + 2*time.Second,
	}
}

// owned returns whether this host holds the lease of a task's run, as
// the database says now: Level 1 here acts only on those runs.
func (w *worker) owned(ctx context.Context) (func(id string) bool, error) {
	ls, err := w.mine(ctx)
	if err != nil {
		return nil, err
	}
	ids := make(map[string]bool, len(ls))
	for _, l := range ls {
		ids[l.TaskID] = true
	}
	return func(id string) bool { return ids[id] }, nil
}

// mine returns the leases the database gives this host now. Read while
// its processor holds none (at the daemon's start), they are a former
// daemon's of this host (killed), whose runs the start's Level 1 pass
// takes over.
func (w *worker) mine(ctx context.Context) ([]pgstore.Lease, error) {
	ls, err := w.db.Leases(ctx)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(ls, func(l pgstore.Lease) bool { return l.Host != w.host }), nil
}

// sweep is the leader's pass over the leases: each expired lease is
// swept and its task restarted, with the reason, as Level 1 restarts a
// run (counted by its start limit, blocked at it); a task the log has
// active while no host holds its lease, seen so on two passes (a leader
// that died between a sweep and its restart), is restarted too.
func (w *worker) sweep(ctx context.Context, policy supervise.Policy) error {
	expired, err := w.db.Sweep(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range expired {
		errs = append(errs, w.restart(ctx, e.TaskID, e.Reason, policy))
	}
	agents, err := w.board.Log.CurrentIn(ctx, world.StatusActive)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	ls, err := w.db.Leases(ctx)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	leased := map[string]bool{}
	for _, l := range ls {
		leased[l.TaskID] = true
	}
	now := w.now()
	seen := map[string]time.Time{}
	for _, a := range supervise.ActiveAgents(agents) {
		if leased[a.ID] {
			continue
		}
		first, ok := w.unleased[a.ID]
		if !ok {
			seen[a.ID] = now
			continue
		}
		reason := fmt.Sprintf("restart: run %d of %s is active in the world log, but no host has held its lease since %s at the latest",
			a.Run, a.ID, first.UTC().Format(time.RFC3339))
		errs = append(errs, w.restart(ctx, a.ID, reason, policy))
	}
	w.unleased = seen
	return errors.Join(errs...)
}

// restart sends task id, whose run no host holds any more, back to
// pending with reason, or blocks it at Level 1's start limit. A task
// that moved on meanwhile is left alone.
func (w *worker) restart(ctx context.Context, id, reason string, policy supervise.Policy) error {
	window := policy.Window
	if window <= 0 {
		window = supervise.DefaultWindow
	}
	now := w.now()
	starts, err := supervise.RecentRestarts(ctx, w.board.Log, now.Add(-window))
	if err != nil {
		return err
	}
	why := strings.TrimPrefix(reason, "restart: ")
	if policy.Next(starts[id], now).Verdict == supervise.LimitReached {
		err = w.board.BlockRun(ctx, id, 0, board.Clip("blocked by the fleet's leader: "+why+"; start limit reached", 300),
			"find why its runs keep dying (its hosts' .clean_room/runs/"+id+"/ and 'cra fleet status'), then requeue: cra task move "+id+" pending")
	} else {
		err = w.board.RestartRun(ctx, id, 0, board.Clip("restarted | reason: "+why+" (fleet)", 600), board.Clip("restarted by the fleet's leader: "+why, 300))
	}
	if errors.Is(err, world.ErrMovedOn) {
		return nil
	}
	return err
}
