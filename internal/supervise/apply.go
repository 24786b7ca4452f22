package supervise

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/cra-dev/cra/internal/world"
)

// Executor carries out the actions of a pass. Restarting and failing a
// task are the board's, so they are functions; so is writing the log.
type Executor struct {
	// Restart logs event ([event:system][id] event) and starts a new run
	// of the task; required when a Restart is applied (not in a dry run).
	// When the run ended or the task moved on since the pass looked (its
	// daemon recorded the finish meanwhile), it writes nothing and returns
	// an error wrapping ErrMovedOn.
	Restart func(ctx context.Context, r Restart, event string) error
	// Fail fails the task, writing its [agent:failed] entry; required
	// when a Fail is applied (not in a dry run). Like Restart, it returns
	// an error wrapping ErrMovedOn, having written nothing, for a task
	// that moved on.
	Fail func(ctx context.Context, f Fail) error
	// Log appends "[event:system][id] output" to the world log (e.g.
	// world.Log.Event with world.SourceSystem). Nil logs nothing.
	Log func(ctx context.Context, id, output string) error
	// Stop ends a process or group; nil is the package's Stop.
	Stop func(ctx context.Context, k Kill, grace time.Duration) (bool, error)
	// Grace is passed to Stop; 0 is DefaultGrace.
	Grace time.Duration
	// DryRun describes each action on Out and takes none (issue 13:
	// cra supervise --once --dry-run).
	DryRun bool
	// Out receives one line per action: what it would do in a dry run,
	// what it did otherwise. Nil writes nothing.
	Out io.Writer
}

// ErrMovedOn is world.ErrMovedOn: a task whose run ended, or that moved
// on, between the pass's reading of the log and its restart or failure;
// the pass's decision is stale and is dropped.
var ErrMovedOn = world.ErrMovedOn

// Apply carries out actions in order. A restart's event is logged before
// the restart (the log comes first, DESIGN.md principle 1); a restart or
// failure of a task that moved on meanwhile is dropped and said; a kill is
// logged once a signal was sent, since only then is it known that the
// process was still the orphan, and a kill whose process is already gone
// is neither logged nor an error. A Wait does nothing. One action's
// failure does not stop the others; the errors are returned joined.
func (e *Executor) Apply(ctx context.Context, actions []Action) error {
	if !e.DryRun {
		if err := e.check(actions); err != nil {
			return err
		}
	}
	var errs []error
	for _, a := range actions {
		if err := ctx.Err(); err != nil {
			return errors.Join(append(errs, err)...)
		}
		if e.DryRun {
			e.say("would %s", a)
			continue
		}
		if err := e.apply(ctx, a); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// check returns an error naming a missing function an action needs.
func (e *Executor) check(actions []Action) error {
	for _, a := range actions {
		switch a.(type) {
		case Restart:
			if e.Restart == nil {
				return errors.New("supervise: Executor.Restart is nil but a pass asks for a restart")
			}
		case Fail:
			if e.Fail == nil {
				return errors.New("supervise: Executor.Fail is nil but a pass asks to fail a task")
			}
		}
	}
	return nil
}

func (e *Executor) apply(ctx context.Context, a Action) error {
	switch a := a.(type) {
	case Restart:
		err := e.Restart(ctx, a, fmt.Sprintf("restarted | reason: %s (%s)", a.Reason, a.Detail))
		if errors.Is(err, ErrMovedOn) {
			e.say("%s: not restarted: %v", a.ID, err)
			return nil
		}
		if err != nil {
			return fmt.Errorf("restart %s: %w", a.ID, err)
		}
		e.say("%s", a)
	case Fail:
		err := e.Fail(ctx, a)
		if errors.Is(err, ErrMovedOn) {
			e.say("%s: not failed: %v", a.ID, err)
			return nil
		}
		if err != nil {
			return fmt.Errorf("fail %s: %w", a.ID, err)
		}
		e.say("%s", a)
	case Kill:
		stop := e.Stop
		if stop == nil {
			stop = Stop
		}
		sent, err := stop(ctx, a, e.Grace)
		if !sent {
			if err == nil {
				e.say("%s: already gone", a)
			}
			return err
		}
		e.say("%s", a)
		lerr := e.log(ctx, strconv.Itoa(a.PID), fmt.Sprintf("killed | reason: %s (%s)", a.Reason, a.Detail))
		return errors.Join(err, lerr)
	case Wait:
	default:
		return fmt.Errorf("supervise: unknown action %T", a)
	}
	return nil
}

func (e *Executor) log(ctx context.Context, id, output string) error {
	if e.Log == nil {
		return nil
	}
	return e.Log(ctx, id, output)
}

func (e *Executor) say(format string, args ...any) {
	if e.Out != nil {
		fmt.Fprintf(e.Out, format+"\n", args...)
	}
}
