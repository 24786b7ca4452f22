package review

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/atomicfile"
	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/flock"
	"github.com/cra-dev/cra/internal/jsonl"
	"github.com/cra-dev/cra/internal/notify"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/world"
)

// NotifyMarker is the world log's read marker of notifications: each
// ending is told once, whoever wrote it (the recycler, Level 1, a
// restarted daemon catching up).
const NotifyMarker = "notify"

// notifyReady sets the notifications' marker at the log's end when there
// is none yet, and reports whether there was one.
func (r *Recycler) notifyReady(ctx context.Context) (bool, error) {
	has, err := hasMarker(ctx, r.Board.Log, NotifyMarker)
	if err != nil || has {
		return has, err
	}
	_, err = r.Board.Log.CheckThen(ctx, NotifyMarker, func(*world.Record) error { return nil }, nil)
	return false, err
}

// hasMarker reports whether log has the read marker name: the file's
// (world.Log) or PostgreSQL's (pgstore.Log), whose fleet's leader runs
// the recycler.
func hasMarker(ctx context.Context, log world.Store, name string) (bool, error) {
	switch l := log.(type) {
	case interface{ HasMarker(string) (bool, error) }:
		return l.HasMarker(name)
	case interface {
		HasMarker(context.Context, string) (bool, error)
	}:
		return l.HasMarker(ctx, name)
	}
	return false, fmt.Errorf("the world log (%T) keeps no read markers, which notifications need", log)
}

// notifyLock is the lock file of the notifications' marker.
const notifyLock = statedir.NotifyLock

// The outputs the recycler starts a needs-you failure with.
const needsPerson = "needs a person: "

// notifyPending is the file of the notifications not told yet: the
// ones just read from the log, and those whose notifier failed, with
// when to try again.
const notifyPending = statedir.NotifyPending

// pendingNotice is a line of notifyPending.
type pendingNotice struct {
	notify.Event
	Attempts int       `json:"attempts,omitempty"`
	Next     time.Time `json:"next,omitempty"` // not before; zero: now
	// CommandTold and WebhookTold: that channel has told it; a retry
	// tries the other only, so that a person is not told twice.
	CommandTold bool `json:"command_told,omitempty"`
	WebhookTold bool `json:"webhook_told,omitempty"`
}

// Retries of a notification whose notifier failed: after 30 s, doubling
// up to about 2 hours, until NotifyGiveUp after the ending, then it is
// reported as given up.
const (
	notifyRetry  = 30 * time.Second
	NotifyGiveUp = 24 * time.Hour
)

// Notify tells a person, through [notify] command and webhook, of each
// task ending logged since the last call: verified, blocked, or waiting
// for a person (needs-you). A person's own moves are not told back. A
// notifier that fails is reported in rep and never holds anything up;
// its notification is tried again, after 30 s and then twice as long
// each time up to about 2 hours, for NotifyGiveUp (a webhook down, a
// network blip), through the channel that failed only: the
// endings read from the log are kept in the queue r.Notices (a host's
// notify-pending.jsonl, or a fleet's database) before the log's marker
// moves past them, and leave it once told or given up. The
// first call in a repository starts at the log's end: what ended before
// notifications were set up is not told.
func (r *Recycler) Notify(ctx context.Context, cfg *config.Config, rep *Report) error {
	has, err := r.notifyReady(ctx)
	if err != nil || !has {
		return err
	}
	set := cfg.NotifySettings()
	n := &notify.Notifier{Command: set.Command, Webhook: set.Webhook, Timeout: set.Timeout}
	if set.TokenEnv != "" {
		n.Token, n.TokenEnv = os.Getenv(set.TokenEnv), set.TokenEnv
	}
	// One reader of the marker at a time: the daemon's loop and a 'cra
	// recycle --once' (or, on a fleet, two hosts that both think they
	// lead) must not both read the same lines and both tell them. The one
	// that finds the lock taken leaves the lines to the other.
	q := r.noticeQueue()
	unlock, ok, err := q.LockNotices(ctx)
	if err != nil || !ok {
		return err
	}
	defer unlock()
	_, err = r.Board.Log.CheckThen(ctx, NotifyMarker, func(rec *world.Record) error {
		ev, ok := noticeOf(rec)
		if !ok || !n.Configured() {
			return nil
		}
		// Kept before the marker moves on: a crash in between tells it
		// twice rather than never.
		line, err := json.Marshal(pendingNotice{Event: ev})
		if err != nil {
			return err
		}
		return q.AppendNotice(ctx, line)
	}, nil)
	if err != nil {
		return err
	}
	pending, err := readPending(ctx, q)
	if err != nil || len(pending) == 0 {
		return err
	}
	now := r.now()
	var left []pendingNotice
	for _, p := range pending {
		if !n.Configured() {
			break // notifications were turned off: nobody to tell
		}
		if now.Before(p.Next) {
			left = append(left, p)
			continue
		}
		ev := p.Event
		ev.Title = ev.TaskID
		if t, _, err := r.Board.Store.Get(ctx, ev.TaskID); err == nil {
			ev.Title = t.Title
		}
		no := Notice{Event: ev}
		var err error
		if n.Command != "" && !p.CommandTold {
			cmd := *n
			cmd.Webhook = ""
			cerr := cmd.Notify(ctx, ev)
			p.CommandTold = cerr == nil
			err = cerr
		}
		if n.Webhook != "" && !p.WebhookTold {
			hook := *n
			hook.Command = ""
			herr := hook.Notify(ctx, ev)
			p.WebhookTold = herr == nil
			err = errors.Join(err, herr)
		}
		switch {
		case err == nil:
			r.say("notified: %s %s", ev.Event, ev.TaskID)
		case ctx.Err() != nil:
			left = append(left, p) // not a failure of the notifier's
			no.Err = err.Error()
		case now.Sub(ev.Time) >= NotifyGiveUp:
			no.Err = err.Error()
			r.warn(rep, "notify %s %s: %v; given up after %d tries since %s", ev.Event, ev.TaskID, err, p.Attempts+1, ev.Time.Format(time.RFC3339))
		default:
			no.Err = err.Error()
			p.Attempts++
			p.Next = now.Add(notifyRetry << min(p.Attempts-1, 8)) // at most about 2 h apart
			left = append(left, p)
			r.warn(rep, "notify %s %s: %v; tried again from %s", ev.Event, ev.TaskID, err, p.Next.Format(time.RFC3339))
		}
		rep.Notified = append(rep.Notified, no)
	}
	return writePending(ctx, q, left)
}

// noticeOf is the notification of a log record, if it is a task ending
// a person hears of.
func noticeOf(rec *world.Record) (notify.Event, bool) {
	e := rec.Entry
	if rec.Err != nil || rec.Skipped != nil || e.Kind != world.KindAgent || strings.HasPrefix(e.Output, "moved by a person") {
		return notify.Event{}, false // a line the lifecycle forbids ended nothing
	}
	ev := notify.Event{TaskID: e.ID, Need: e.Need, Time: e.Time}
	switch e.Status {
	case world.StatusVerified:
		ev.Status, ev.Event = "verified", "verified"
	case world.StatusFailed:
		if board.WaitsForNoOne(e.Output) {
			return notify.Event{}, false // a collapsed duplicate, a dropped directive
		}
		ev.Status, ev.Event = "failed", "blocked"
		if strings.HasPrefix(e.Output, needsPerson) {
			ev.Event = "needs-you"
		}
	default:
		return notify.Event{}, false
	}
	return ev, true
}

// readPending returns q's notifications; a line that does not read as
// one is skipped.
func readPending(ctx context.Context, q NoticeQueue) ([]pendingNotice, error) {
	lines, err := q.Notices(ctx)
	if err != nil {
		return nil, err
	}
	var out []pendingNotice
	for _, l := range lines {
		var p pendingNotice
		if json.Unmarshal(l, &p) == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// writePending replaces q's notifications by left.
func writePending(ctx context.Context, q NoticeQueue, left []pendingNotice) error {
	lines := make([][]byte, 0, len(left))
	for _, p := range left {
		line, err := json.Marshal(p)
		if err != nil {
			return err
		}
		lines = append(lines, line)
	}
	return q.ReplaceNotices(ctx, lines)
}

// NoticeQueue keeps the notifications not told yet, each a JSON object,
// in the order read, and the lock of their one reader: the files under
// the state directory (FileNotices, one host's) or a fleet's database
// (pgstore.Log, every host's, so that a new leader tells what the old
// one left).
type NoticeQueue interface {
	// LockNotices takes the lock if no one holds it, and returns how to
	// let it go; ok is false when another reader holds it. The other
	// methods are called under the lock.
	LockNotices(ctx context.Context) (unlock func(), ok bool, err error)
	// AppendNotice adds one at the end, durably.
	AppendNotice(ctx context.Context, line []byte) error
	// Notices returns them, oldest first; none is no error.
	Notices(ctx context.Context) ([][]byte, error)
	// ReplaceNotices replaces them by left, whole or not at all.
	ReplaceNotices(ctx context.Context, left [][]byte) error
}

// noticeQueue is r.Notices, or the files of r.StateDir.
func (r *Recycler) noticeQueue() NoticeQueue {
	if r.Notices != nil {
		return r.Notices
	}
	return FileNotices(r.StateDir)
}

// FileNotices is the notification queue of one host: notify-pending.jsonl
// under the state directory it names, its lock notify.lock beside it.
type FileNotices string

// LockNotices takes the lock file's flock.
func (d FileNotices) LockNotices(context.Context) (func(), bool, error) {
	lk, ok, err := flock.TryLock(statedir.At(string(d)).NotifyLock())
	if err != nil || !ok {
		return nil, false, err
	}
	return func() { lk.Close() }, true, nil
}

// AppendNotice appends a line to the file.
func (d FileNotices) AppendNotice(_ context.Context, line []byte) error {
	return jsonl.Append(statedir.At(string(d)).NotifyPending(), json.RawMessage(line))
}

// Notices reads the file's lines; a missing file has none, a line that
// does not parse is skipped.
func (d FileNotices) Notices(context.Context) ([][]byte, error) {
	lines, _, err := jsonl.Read[json.RawMessage](statedir.At(string(d)).NotifyPending(), nil)
	out := make([][]byte, len(lines))
	for i, l := range lines {
		out[i] = l
	}
	return out, err
}

// ReplaceNotices rewrites the file, whole or not at all; none left
// removes it.
func (d FileNotices) ReplaceNotices(_ context.Context, left [][]byte) error {
	path := statedir.At(string(d)).NotifyPending()
	if len(left) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("notifications: %w", err)
		}
		return nil
	}
	var b bytes.Buffer
	for _, l := range left {
		b.Write(l)
		b.WriteByte('\n')
	}
	if err := atomicfile.Write(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("notifications: %w", err)
	}
	return nil
}
