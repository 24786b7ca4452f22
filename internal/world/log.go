package world

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/cra-dev/cra/internal/statedir"
)

// File names inside the state directory (statedir names their paths).
const (
	FileName      = statedir.WorldLogFile   // the log
	lockName      = statedir.WorldLockFile  // flock(2) target; never renamed
	indexName     = statedir.WorldIndexFile // side index: agent states and byte offsets
	compactedName = statedir.WorldCompacted // where appends resume after a compaction
	archiveName   = statedir.WorldArchive   // lines compaction dropped
)

// atomicWriteMax is the longest entry appended under a shared lock. Up to
// PIPE_BUF (4096 on Linux) one O_APPEND write lands whole; a longer one
// may not on every file system, so it takes the lock exclusively.
const atomicWriteMax = 4096

// SyncPolicy says when an append is fsynced.
type SyncPolicy int

// Sync policies. The zero value, SyncAgent, makes lifecycle changes durable
// before the caller moves a view (DESIGN.md principle 1) and leaves events,
// which are many and cheap, to the page cache.
const (
	SyncAgent  SyncPolicy = iota // fsync after agent entries
	SyncAlways                   // fsync after every entry
	SyncNever                    // leave it to the operating system
)

// ParseSyncPolicy reads "agent", "always" or "never".
func ParseSyncPolicy(s string) (SyncPolicy, error) {
	switch s {
	case "agent":
		return SyncAgent, nil
	case "always":
		return SyncAlways, nil
	case "never":
		return SyncNever, nil
	}
	return 0, fmt.Errorf("fsync policy %q is not one of agent, always, never", s)
}

func (p SyncPolicy) String() string {
	switch p {
	case SyncAlways:
		return "always"
	case SyncNever:
		return "never"
	}
	return "agent"
}

// Log is the world log of one state directory. It holds no open file
// between calls, so it needs no Close; it is safe for concurrent use, and
// any number of processes may append to the same log at once.
type Log struct {
	// Sync is when appends are fsynced; Open sets SyncAgent.
	Sync SyncPolicy
	// Now stamps new entries and measures silence; Open sets time.Now.
	Now func() time.Time
	// UseIndex keeps agent states in the side index world.log.idx, so
	// that agent appends, Current and Limbo read only the part of the log
	// written since. Without it every call replays the whole log. Open
	// sets true.
	UseIndex bool
	// Malformed, when set, is called with each malformed line met while
	// replaying the log for agent states (queries hand them to their
	// callback instead).
	Malformed func(*Record)
	// Broken, when set, is called with each agent entry met while
	// replaying that the lifecycle forbids where it stands (a
	// hand-written verified with no finish and review before it, say):
	// the fold skips it, so that no state comes from it, and the reader
	// is told. Skipped lists them later too.
	Broken func(*Record, *TransitionError)

	dir  string
	sd   statedir.Dir
	path string

	// crashAt, in tests, is called at each step of a compaction, where a
	// test process may kill itself.
	crashAt func(step string)

	mu    sync.Mutex // guards cache
	cache *state
}

// Path returns the path of the world log in stateDir.
func Path(stateDir string) string { return statedir.At(stateDir).WorldLog() }

// Open returns the world log in stateDir (<repo>/.clean_room, made by
// workspace.EnsureStateDir), creating an empty log if there is none.
func Open(stateDir string) (*Log, error) {
	path := Path(stateDir)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open world log: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("open world log: %w", err)
	}
	return &Log{Now: time.Now, UseIndex: true, dir: stateDir, sd: statedir.At(stateDir), path: path}, nil
}

// Path returns the log file's path.
func (l *Log) Path() string { return l.path }

// Event appends [now][event:source][id] output. Events are facts: no
// lifecycle applies, and an [event:user] for a failed agent is what allows
// its retry.
func (l *Log) Event(ctx context.Context, source Source, id, output string) (Entry, error) {
	return l.Append(ctx, Entry{Kind: KindEvent, Source: source, ID: id, Output: output})
}

// Agent appends [now][agent:status][id] output | need: need, after
// checking the transition against the agent's current status; an illegal
// one returns a *TransitionError and writes nothing. need is the success
// criteria on start (kept with the agent, see Agent.Criteria) and what a
// person must do on failed; it may be empty.
func (l *Log) Agent(ctx context.Context, status Status, id, output, need string) (Entry, error) {
	return l.Append(ctx, Entry{Kind: KindAgent, Status: status, ID: id, Output: output, Need: need})
}

// Verify closes finished agent id as verified: it logs [event:review][id]
// review, the review of its run the lifecycle asks for (see Next), then
// [agent:verified][id] output. A person's move to completed-finalized
// and 'cra solve' on passing validation verify this way (the recycler
// logs its review with its verdict, board.Decide); an agent never does.
// An agent not at finish is a *TransitionError, and nothing is written.
func (l *Log) Verify(ctx context.Context, id, review, output string) (Entry, error) {
	a, _, err := l.Lookup(ctx, id)
	if err != nil {
		return Entry{}, err
	}
	if a.Status != StatusFinish {
		return Entry{}, &TransitionError{ID: id, From: a.Status, To: StatusVerified}
	}
	if _, err := l.Event(ctx, SourceReview, id, review); err != nil {
		return Entry{}, err
	}
	return l.Agent(ctx, StatusVerified, id, output, "")
}

// Begin records that agent id begins a run, the way 'cra solve' does: for
// an agent with no entry it appends start, with output and need (the
// task's success criteria), then active; for an agent at start or retry,
// only active. Any other status is a *TransitionError naming it: the agent
// is already running, or its run has ended.
func (l *Log) Begin(ctx context.Context, id, output, need string) error {
	a, ok, err := l.Lookup(ctx, id)
	if err != nil {
		return err
	}
	if !ok {
		if _, err := l.Agent(ctx, StatusStart, id, output, need); err != nil {
			return err
		}
	} else if a.Status != StatusStart && a.Status != StatusRetry {
		return &TransitionError{ID: id, From: a.Status, To: StatusActive}
	}
	_, err = l.Agent(ctx, StatusActive, id, output, "")
	return err
}

// Append writes e as one line and returns it as written. A zero Time is
// set to Now; the source of an event must be one of Sources; an agent
// entry must be a legal transition. The write is a single write(2) on an
// O_APPEND descriptor under the log's lock: shared for events up to
// atomicWriteMax bytes, exclusive for longer ones and for agent entries,
// whose check and write must not be split by another agent entry.
func (l *Log) Append(ctx context.Context, e Entry) (Entry, error) {
	e, line, err := Prepare(e, l.Now)
	if err != nil {
		return Entry{}, err
	}

	exclusive := e.Kind == KindAgent || len(line) > atomicWriteMax
	for {
		done, err := l.appendLocked(ctx, e, line, exclusive)
		if err != nil {
			return Entry{}, err
		}
		if done {
			return e, nil
		}
		exclusive = true // the log ends mid-line: repair it alone
	}
}

// Prepare is what every backend does to an entry before its lifecycle
// check: a zero Time set to now(), the time cut to milliseconds in UTC,
// the source of an event checked against Sources, and the line rendered,
// with its newline, within MaxLineBytes. It returns the entry as it will
// be written and its line.
func Prepare(e Entry, now func() time.Time) (Entry, []byte, error) {
	if e.Time.IsZero() {
		e.Time = now()
	}
	e.Time = e.Time.UTC().Truncate(time.Millisecond)
	e.Legacy = false
	if e.Kind == KindEvent && !e.Source.Known() {
		return Entry{}, nil, fmt.Errorf("unknown event source %q: use one of %s", e.Source, joinSources(Sources()))
	}
	line, err := appendLine(nil, e)
	if err != nil {
		return Entry{}, nil, err
	}
	line = append(line, '\n')
	if len(line) > MaxLineBytes {
		return Entry{}, nil, fmt.Errorf("entry for %s is %d bytes, over the log's limit of %d: write the output to a file and log its path", e.ID, len(line), MaxLineBytes)
	}
	return e, line, nil
}

// appendLocked writes line under the lock. It returns false, writing
// nothing, when the log does not end with a newline and the lock is
// shared: then another writer may be mid-write, and only under the
// exclusive lock is a missing newline surely a torn line, which the entry
// then starts with a newline of its own, so that the torn piece stays a
// malformed line apart instead of spoiling this one.
func (l *Log) appendLocked(ctx context.Context, e Entry, line []byte, exclusive bool) (bool, error) {
	lk, err := lockFile(ctx, l.sd.WorldLock(), exclusive)
	if err != nil {
		return false, err
	}
	defer lk.Close()
	f, err := os.OpenFile(l.path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return false, fmt.Errorf("open world log: %w", err)
	}
	defer f.Close()
	clean, err := endsWithNewline(f)
	if err != nil {
		return false, err
	}
	if !clean {
		if !exclusive {
			return false, nil
		}
		line = append([]byte{'\n'}, line...)
	}

	if e.Kind == KindAgent {
		l.mu.Lock()
		defer l.mu.Unlock()
		st, err := l.loadState(ctx, f)
		if err != nil {
			return false, err
		}
		a, err := st.get(e.ID)
		if err != nil {
			return false, err
		}
		var from Status
		var user, reviewed bool
		if a != nil {
			from, user, reviewed = a.Status, a.UserAfter, a.Reviewed
		}
		if err := checkTransition(e.ID, from, user, reviewed, e.Status); err != nil {
			return false, err
		}
	}
	if _, err := f.Write(line); err != nil {
		return false, fmt.Errorf("append to world log: %w", err)
	}
	if l.Sync == SyncAlways || (l.Sync == SyncAgent && e.Kind == KindAgent) {
		if err := f.Sync(); err != nil {
			return false, fmt.Errorf("sync world log: %w", err)
		}
	}
	return true, nil
}

// endsWithNewline reports whether f is empty or ends with a newline.
func endsWithNewline(f *os.File) (bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("append to world log: %w", err)
	}
	if fi.Size() == 0 {
		return true, nil
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], fi.Size()-1); err != nil {
		return false, fmt.Errorf("append to world log: %w", err)
	}
	return last[0] == '\n', nil
}

// LogEvent appends one event to the world log in stateDir. It is the
// one-call form for commands that log a fact and go on.
func LogEvent(ctx context.Context, stateDir string, source Source, id, output string) error {
	l, err := Open(stateDir)
	if err != nil {
		return err
	}
	_, err = l.Event(ctx, source, id, output)
	return err
}

// NoteEvent is LogEvent for events that must not fail the command that
// reports them, such as 'cra index' and 'cra retrieve' saying what they
// did: a failure to log is written to warn as one warning line, shown and
// not silent (DESIGN.md principle 3). Lifecycle entries are never noted
// this way: a command must fail when its Agent entry cannot be written.
func NoteEvent(ctx context.Context, warn io.Writer, stateDir string, source Source, id, output string) {
	if err := LogEvent(ctx, stateDir, source, id, output); err != nil {
		fmt.Fprintf(warn, "warning: not recorded in the world log: %v\n", err)
	}
}

func joinSources(ss []Source) string {
	b := make([]byte, 0, 96)
	for i, s := range ss {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, s...)
	}
	return string(b)
}
