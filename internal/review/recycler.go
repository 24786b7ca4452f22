package review

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/supervise"
	"github.com/cra-dev/cra/internal/verdict"
)

// CallReview is the call_type of a review's model calls in raw.sqlite.
const CallReview = "review"

// Recycler is seed 004's recycler and seed 002's Level 2 in one: on each
// tick it resumes the tasks a person answered, stops live runs that are
// stale or looping, reviews one finished run (evidence first, the model
// second), and tells a person what ended (Notify). The daemon runs its
// Loop; 'cra recycle --once' one Tick.
type Recycler struct {
	// Board is the repository's board; required.
	Board *board.Board
	// Root is the repository (the processor's Root); StateDir its
	// .clean_room/. Both required.
	Root, StateDir string
	// Fetch, when set, brings a task's branch and working copy up to
	// date before its run is reviewed: on a fleet the run may have been
	// another host's, its branch pushed to the shared remote (issue 34
	// item 5). An error leaves the evidence to say what it lacks; one
	// wrapping board.ErrForeignBranch (the branch is not the commit the
	// run recorded) is the review's blocker, and no evidence is taken
	// from the branch; one wrapping board.ErrBranchAway (the run's work
	// is on a remote that cannot be read now) leaves the task unjudged,
	// held and tried again.
	Fetch func(ctx context.Context, id string) error
	// Config loads config.toml; it is called on every tick, so changed
	// settings take effect at the next one (seed 004 step 1). A file that
	// no longer loads leaves the last good settings in force, with a
	// warning.
	Config func() (*config.Config, error)
	// Recorder records every review call in raw.sqlite; required for
	// reviews.
	Recorder *llm.Recorder
	// Executable is the cra binary that confines the validation commands
	// (sandbox.Wrap's launcher); "" is os.Executable().
	Executable string
	// NewClient builds a model client; nil is llm.New.
	NewClient func(llm.ModelConfig) (llm.Client, error)
	// Stop ends a stale run's process group; nil is supervise.Stop.
	Stop func(ctx context.Context, k supervise.Kill, grace time.Duration) (bool, error)
	// History keeps the reviews, every task's history of them; nil is
	// the files under StateDir (verdict.Files). A fleet whose board is
	// in PostgreSQL keeps them in its database, where every host that
	// may lead the recycler reads them.
	History verdict.HistoryStore
	// Remote is the fleet's runs on other hosts (issue 34 item 5): Level
	// 2 judges those from their hosts' heartbeats and stops them by
	// revoking their leases. nil: every run is this host's.
	Remote RemoteRuns
	// Notices is the queue of notifications not told yet and its lock;
	// nil is FileNotices(StateDir). A fleet's is its database's, which
	// every host that leads shares (issue 34 item 1).
	Notices NoticeQueue
	// Policy is Level 1's restart policy: Level 2's restarts count
	// towards its start limit. The zero value is the default policy.
	Policy supervise.Policy
	// Out gets a line per action a person should see; nil discards.
	Out io.Writer
	// Logger gets diagnostics; nil discards.
	Logger *slog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time

	// wake has a value when a run finished since the last tick (Wake).
	wake     chan struct{}
	wakeOnce sync.Once

	mu       sync.Mutex
	cfg      *config.Config        // the last config that loaded
	held     map[string]time.Time  // tasks whose decision failed, left alone until then
	skipped  map[string]time.Time  // tasks not eligible, with their file's time
	skipFor  string                // the enabled_for those were judged under
	lastTick time.Time             // the last review tick, for Loop
	future   supervise.FutureClamp // Level 2's times stamped after now

	// notifyApart: Loop sends the notifications from a goroutine of
	// their own, so that a notifier that hangs holds no review up.
	notifyApart atomic.Bool
	sayMu       sync.Mutex
}

func (r *Recycler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Recycler) say(format string, args ...any) {
	if r.Out != nil {
		r.sayMu.Lock()
		defer r.sayMu.Unlock()
		fmt.Fprintf(r.Out, format+"\n", args...)
	}
}

func (r *Recycler) warn(rep *Report, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	rep.Warnings = append(rep.Warnings, msg)
	r.say("warning: %s", msg)
}

// config returns the settings of this tick: the file as it is now, or
// the last good one.
func (r *Recycler) config(rep *Report) (*config.Config, error) {
	cfg, err := r.Config()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		if cfg == nil {
			cfg = &config.Config{}
		}
		r.cfg = cfg
		return cfg, nil
	}
	if r.cfg == nil {
		return nil, err
	}
	r.warn(rep, "%v (the recycler keeps the settings it last read)", err)
	return r.cfg, nil
}

// Tick does one round: resume answered tasks, Level 2, one review,
// notifications (which Loop sends apart). An error is one the tick could not work around (the
// board or the log unreadable); a task that cannot be decided is a
// warning, and stays where it was (seed 004, Failure Handling).
func (r *Recycler) Tick(ctx context.Context) (*Report, error) {
	rep := &Report{}
	r.mu.Lock()
	r.lastTick = r.now()
	r.mu.Unlock()
	cfg, err := r.config(rep)
	if err != nil {
		return rep, err
	}
	// What this tick ends is told at its end, also on the first tick.
	if _, err := r.notifyReady(ctx); err != nil {
		return rep, err
	}
	if err := r.resumeAnswered(ctx, rep); err != nil {
		return rep, err
	}
	set := cfg.RecyclerSettings()
	switch {
	case set.EnabledFor.Off():
		rep.Disabled = "recycler.enabled_for is off"
	default:
		if err := r.level2(ctx, set, rep); err != nil {
			return rep, err
		}
		if err := r.reviewNext(ctx, cfg, rep); err != nil {
			return rep, err
		}
	}
	if r.notifyApart.Load() {
		return rep, nil
	}
	if err := r.Notify(ctx, cfg, rep); err != nil {
		return rep, err
	}
	return rep, nil
}

// QuickEvery is how often Loop resumes answered tasks and sends
// notifications between its ticks: a person's answer is taken at once.
const QuickEvery = 2 * time.Second

// Loop runs Tick every recycler.interval_seconds (read on each tick)
// until ctx ends, and every QuickEvery in between resumes the tasks a
// person answered. Notifications go every QuickEvery too, from a
// goroutine of their own: a webhook that hangs for its timeout, once per
// ending, holds no review, no Level 2 and no answer up. A tick's error is
// reported on Out and the loop goes on.
func (r *Recycler) Loop(ctx context.Context) error {
	// What the first tick ends is told too.
	if _, err := r.notifyReady(ctx); err != nil && ctx.Err() == nil {
		r.say("warning: recycler: %v", err)
	}
	r.notifyApart.Store(true)
	defer r.notifyApart.Store(false)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.notifyLoop(ctx)
	}()
	defer func() { <-done }()
	t := time.NewTicker(QuickEvery)
	defer t.Stop()
	for {
		r.mu.Lock()
		last, cfg := r.lastTick, r.cfg
		r.mu.Unlock()
		interval := cfg.RecyclerSettings().Interval // nil: the default
		var err error
		if last.IsZero() || r.now().Sub(last) >= interval {
			_, err = r.Tick(ctx)
		} else {
			err = r.quick(ctx)
		}
		if err != nil && ctx.Err() == nil {
			r.say("warning: recycler: %v", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-r.wakeCh():
			// A run finished: review now, one at a time, in board
			// order; the interval's tick stays as the sweep.
			if _, err := r.Tick(ctx); err != nil && ctx.Err() == nil {
				r.say("warning: recycler: %v", err)
			}
		}
	}
}

func (r *Recycler) wakeCh() chan struct{} {
	r.wakeOnce.Do(func() { r.wake = make(chan struct{}, 1) })
	return r.wake
}

// Wake asks Loop for a tick now: a run finished and waits for its review
// (issue 30: prompt reviews). It never blocks; wakes that come while one
// is pending are one.
func (r *Recycler) Wake() {
	select {
	case r.wakeCh() <- struct{}{}:
	default:
	}
}

// quick is the work of Loop between ticks.
func (r *Recycler) quick(ctx context.Context) error {
	return r.resumeAnswered(ctx, &Report{})
}

// notifyLoop sends the notifications every QuickEvery until ctx ends.
func (r *Recycler) notifyLoop(ctx context.Context) {
	t := time.NewTicker(QuickEvery)
	defer t.Stop()
	for {
		rep := &Report{}
		cfg, err := r.config(rep)
		if err == nil {
			err = r.Notify(ctx, cfg, rep)
		}
		if err != nil && ctx.Err() == nil {
			r.say("warning: notify: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// resumeAnswered sends back to pending every task the log has failed with
// a person's answer after the failure (seed 002 Phase 5: Level 2 watches
// for [event:user] and retries). 'cra answer' does it at once; this picks
// up answers written any other way.
func (r *Recycler) resumeAnswered(ctx context.Context, rep *Report) error {
	agents, err := r.Board.Log.AnsweredFailed(ctx)
	if err != nil {
		return err
	}
	for _, a := range agents {
		if on, err := r.Board.Has(ctx, a.ID); err != nil || !on {
			continue
		}
		if _, err := r.Board.Resume(ctx, a.ID); err != nil {
			if !errors.Is(err, board.ErrChanged) {
				r.warn(rep, "resume %s after its answer: %v", a.ID, err)
			}
			continue
		}
		rep.Resumed = append(rep.Resumed, a.ID)
		r.say("resumed %s: a person answered", a.ID)
	}
	return nil
}

// holdFor is how long a task whose decision could not be written is left
// alone, so that one broken file does not take every tick.
const holdFor = 5 * time.Minute

// reviewNext reviews the first eligible task: completed/ first, then
// failed/ (seed 004 step 2), unless the breaker is open.
func (r *Recycler) reviewNext(ctx context.Context, cfg *config.Config, rep *Report) error {
	now := r.now()
	b, err := readBreaker(r.StateDir, now, cfg.RecyclerSettings().BreakerCooldown)
	if err != nil {
		r.warn(rep, "%v", err)
	}
	if now.Before(b.PausedUntil) {
		rep.PausedUntil = b.PausedUntil
		return nil
	}
	if _, err := llm.NewRouter(cfg, nil).Resolve(ctx, llm.RoleSummarizer, ""); err != nil {
		rep.Disabled = fmt.Sprintf("the recycler has no model to review with: %v", err)
		return nil
	}
	t, folder, err := r.next(ctx, cfg.RecyclerSettings(), now)
	if err != nil || t == nil {
		return err
	}
	rv, err := r.review(ctx, cfg, t, folder)
	if err != nil {
		r.hold(t.ID, now)
		r.warn(rep, "review %s: %v (it stays in %s)", t.ID, err, folder)
		return nil
	}
	rep.Review = rv
	return nil
}

func (r *Recycler) hold(id string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held == nil {
		r.held = map[string]time.Time{}
	}
	r.held[id] = now.Add(holdFor)
}

// next finds the first eligible task (seed 004 steps 2 and 3): in
// completed/, then failed/, by id; processor_auto_requeue true; a type
// enabled_for covers. A task found not eligible is remembered with its
// file's time and not read again until the file changes, so a tick reads
// one file in the common case, however many wait.
func (r *Recycler) next(ctx context.Context, set config.RecyclerSettings, now time.Time) (*board.Task, board.Folder, error) {
	paths, _ := r.Board.Store.(interface {
		Path(string, board.Folder) string
	})
	r.mu.Lock()
	if key := set.EnabledFor.String(); key != r.skipFor {
		r.skipped, r.skipFor = nil, key // new settings: judge every task again
	}
	r.mu.Unlock()
	for _, f := range []board.Folder{board.Completed, board.Failed} {
		ids, err := r.Board.Store.IDs(ctx, f)
		if err != nil {
			return nil, "", err
		}
		for _, id := range ids {
			r.mu.Lock()
			until, held := r.held[id]
			seen, skipped := r.skipped[id]
			r.mu.Unlock()
			if held && now.Before(until) {
				continue
			}
			var mod time.Time
			if paths != nil {
				if fi, err := os.Stat(paths.Path(id, f)); err == nil {
					mod = fi.ModTime()
				}
			}
			if skipped && !mod.IsZero() && mod.Equal(seen) {
				continue
			}
			t, folder, err := r.Board.Store.Get(ctx, id)
			if err != nil || folder != f || !t.ProcessorAutoRequeue || set.EnabledFor.Off() {
				if err != nil && !errors.Is(err, board.ErrNotFound) {
					r.say("warning: skipped: %v", err)
				}
				r.mu.Lock()
				if r.skipped == nil {
					r.skipped = map[string]time.Time{}
				}
				r.skipped[id] = mod
				r.mu.Unlock()
				continue
			}
			return t, f, nil
		}
	}
	return nil, "", nil
}
