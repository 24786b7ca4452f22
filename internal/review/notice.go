package review

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/flock"
	"github.com/cra-dev/cra/internal/notify"
	"github.com/cra-dev/cra/internal/world"
)

// NotifyMarker is the world log's read marker of notifications: each
// ending is told once, whoever wrote it (the recycler, Level 1, a
// restarted daemon catching up).
const NotifyMarker = "notify"

// notifyReady sets the notifications' marker at the log's end when there
// is none yet, and reports whether there was one.
func (r *Recycler) notifyReady(ctx context.Context) (bool, error) {
	l := r.Board.Log
	has, err := l.HasMarker(NotifyMarker)
	if err != nil || has {
		return has, err
	}
	_, err = l.Check(ctx, NotifyMarker, func(*world.Record) error { return nil })
	return false, err
}

// Notice is a notification sent, and why it failed if it did.
type Notice struct {
	notify.Event
	Err string `json:"error,omitempty"`
}

// notifyLock is the lock file of the notifications' marker.
const notifyLock = "notify.lock"

// The outputs the recycler starts a needs-you failure with.
const needsPerson = "needs a person: "

// Notify tells a person, through [notify] command and webhook, of each
// task ending logged since the last call: verified, blocked, or waiting
// for a person (needs-you). A person's own moves are not told back. A
// notifier that fails is reported in rep and never holds anything up.
// The first call in a repository starts at the log's end: what ended
// before notifications were set up is not told.
func (r *Recycler) Notify(ctx context.Context, cfg *config.Config, rep *Report) error {
	has, err := r.notifyReady(ctx)
	if err != nil || !has {
		return err
	}
	// One reader of the marker at a time: the daemon's loop and a 'cra
	// recycle --once' must not both read the same lines and both tell
	// them. The one that finds the lock taken leaves the lines to the
	// other.
	lk, ok, err := flock.TryLock(filepath.Join(r.StateDir, notifyLock))
	if err != nil || !ok {
		return err
	}
	var events []notify.Event
	_, err = r.Board.Log.Check(ctx, NotifyMarker, func(rec *world.Record) error {
		e := rec.Entry
		if rec.Err != nil || e.Kind != world.KindAgent || strings.HasPrefix(e.Output, "moved by a person") {
			return nil
		}
		ev := notify.Event{TaskID: e.ID, Need: e.Need, Time: e.Time}
		switch e.Status {
		case world.StatusVerified:
			ev.Status, ev.Event = "verified", "verified"
		case world.StatusFailed:
			if board.WaitsForNoOne(e.Output) {
				return nil // a collapsed duplicate, a dropped directive
			}
			ev.Status, ev.Event = "failed", "blocked"
			if strings.HasPrefix(e.Output, needsPerson) {
				ev.Event = "needs-you"
			}
		default:
			return nil
		}
		events = append(events, ev)
		return nil
	})
	lk.Close()
	if err != nil || len(events) == 0 {
		return err
	}
	set := cfg.NotifySettings()
	n := &notify.Notifier{Command: set.Command, Webhook: set.Webhook, Timeout: set.Timeout}
	if set.TokenEnv != "" {
		n.Token = os.Getenv(set.TokenEnv)
	}
	if !n.Configured() {
		return nil
	}
	for _, ev := range events {
		ev.Title = ev.TaskID
		if t, _, err := r.Board.Store.Get(ctx, ev.TaskID); err == nil {
			ev.Title = t.Title
		}
		no := Notice{Event: ev}
		if err := n.Notify(ctx, ev); err != nil {
			no.Err = err.Error()
			r.warn(rep, "notify %s %s: %v", ev.Event, ev.TaskID, err)
		} else {
			r.say("notified: %s %s", ev.Event, ev.TaskID)
		}
		rep.Notified = append(rep.Notified, no)
	}
	return nil
}
