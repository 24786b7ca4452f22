package world

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/atomicfile"
)

// Agent is an agent's current state, replayed from the log.
type Agent struct {
	ID     string    `json:"id"`
	Status Status    `json:"status"`
	Since  time.Time `json:"since"`  // time of the latest status entry
	Output string    `json:"output"` // output of the latest status entry
	Need   string    `json:"need,omitempty"`
	// Criteria is the need: of the agent's start entry, its success
	// criteria, kept for the whole lifecycle (seed 002 phase 4).
	Criteria string `json:"criteria,omitempty"`
	// LastSeen is the time of the latest entry with the agent's id, events
	// included: silence is measured from it.
	LastSeen time.Time `json:"last_seen"`
	// Retries counts retry entries since the start; for a verified agent
	// whose history was compacted, only those kept.
	Retries int `json:"retries"`
	// UserAnswered says an [event:user] for a failed agent came after its
	// failure, so it may retry.
	UserAnswered bool `json:"user_answered,omitempty"`
}

// agentState is an agent in the side index: its status and the offsets of
// the lines that hold the rest.
type agentState struct {
	ID        string
	Status    Status
	Since     int64 // unix ms of the latest status entry
	Off       int64 // offset of the latest status entry
	StartOff  int64 // offset of the latest start entry; -1 if none
	Seen      int64 // unix ms of the latest entry with this id
	UserAfter bool  // an [event:user] came after the failed entry
	Retries   int
}

// indexEvery is how much log a replay may read before the side index is
// written again: appends stay cheap, and a reader never replays much.
const indexEvery = 1 << 20

// state is the agents' states after the lines before Pos. It is a view of
// the log: it describes the file (Dev, Ino) whose bytes before Pos.Offset
// end with Tail, and is rebuilt from the log when that no longer holds.
type state struct {
	Dev, Ino uint64
	Pos      Position
	Tail     []byte

	byID    map[string]*agentState
	savedAt int64 // Pos.Offset of the copy on disk; -1 when none
}

func newState(fi os.FileInfo) *state {
	dev, ino := fileID(fi)
	return &state{Dev: dev, Ino: ino, byID: map[string]*agentState{}, savedAt: -1}
}

// describes reports whether s is a state of f (whose info is fi): same
// file, long enough, and the same bytes before s.Pos.
func (s *state) describes(f *os.File, fi os.FileInfo) bool {
	dev, ino := fileID(fi)
	if s.Dev != dev || s.Ino != ino || fi.Size() < s.Pos.Offset {
		return false
	}
	tail, err := tailAt(f, s.Pos.Offset)
	return err == nil && bytes.Equal(tail, s.Tail)
}

// apply folds entry e, whose line starts at off, into s. It follows the log
// as written, legal or not: the log is the truth, the lifecycle is checked
// when writing.
func (s *state) apply(off int64, e Entry) {
	ms := e.Time.UnixMilli()
	a := s.byID[e.ID]
	if e.Kind == KindEvent {
		if a == nil {
			return
		}
		a.Seen = max(a.Seen, ms)
		if e.Source == SourceUser && a.Status == StatusFailed {
			a.UserAfter = true
		}
		return
	}
	if a == nil {
		a = &agentState{ID: e.ID, StartOff: -1}
		s.byID[e.ID] = a
	}
	switch e.Status {
	case StatusStart:
		a.StartOff, a.Retries = off, 0
	case StatusRetry:
		a.Retries++
	}
	a.Status, a.Since, a.Off, a.UserAfter = e.Status, ms, off, false
	a.Seen = max(a.Seen, ms)
}

// catchUp replays the complete lines of f after s.Pos. An agent entry the
// lifecycle would have refused (a hand-edited log) is folded all the same,
// and told to broken when set.
func (s *state) catchUp(ctx context.Context, f *os.File, malformed func(*Record), broken func(*Record, *TransitionError)) error {
	pos, err := scanFile(ctx, f, s.Pos, nil, func(r *Record) error {
		if r.Err != nil {
			if malformed != nil {
				malformed(r)
			}
			return nil
		}
		if e := r.Entry; broken != nil && e.Kind == KindAgent && !e.Legacy {
			from, userAfter := Status(""), false
			if a := s.byID[e.ID]; a != nil {
				from, userAfter = a.Status, a.UserAfter
			}
			var te *TransitionError
			if errors.As(checkTransition(e.ID, from, userAfter, e.Status), &te) {
				broken(r, te)
			}
		}
		s.apply(r.Offset, r.Entry)
		return nil
	})
	if err != nil {
		return err
	}
	if pos != s.Pos {
		if s.Tail, err = tailAt(f, pos.Offset); err != nil {
			return err
		}
		s.Pos = pos
	}
	return nil
}

// loadState returns the agents' states as of the end of f, from the cache,
// the side index or a full replay, whichever still describes f. The caller
// holds l.mu.
func (l *Log) loadState(ctx context.Context, f *os.File) (*state, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat world log: %w", err)
	}
	if !l.UseIndex {
		st := newState(fi)
		return st, st.catchUp(ctx, f, l.Malformed, l.Broken)
	}
	st := l.cache
	if st == nil || !st.describes(f, fi) {
		st = readIndex(l.sd.WorldIndex())
		if st == nil || !st.describes(f, fi) {
			st = newState(fi)
		}
	}
	l.cache = nil // until caught up: a failed replay must not leave half a state
	if err := st.catchUp(ctx, f, l.Malformed, l.Broken); err != nil {
		return nil, err
	}
	l.cache = st
	if st.Pos.Offset-max(st.savedAt, 0) >= indexEvery || (st.savedAt < 0 && st.Pos.Offset > 0) {
		if err := st.save(l.sd.WorldIndex()); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// The side index is text, quick to parse and easy to inspect:
//
//	cra-world-index 1
//	DEV INO OFFSET LINES TAIL-HEX
//	ID<TAB>STATUS<TAB>SINCE<TAB>OFF<TAB>START<TAB>SEEN<TAB>USER<TAB>RETRIES
//	...
//
// with identifiers escaped as in the log, so they hold no tab or newline.
const indexHeader = "cra-world-index 1"

// readIndex reads the side index; any problem makes it absent, since the
// log can always rebuild it.
func readIndex(path string) *state {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	text := string(data)
	header, text, _ := strings.Cut(text, "\n")
	where, text, _ := strings.Cut(text, "\n")
	if header != indexHeader {
		return nil
	}
	st := &state{byID: map[string]*agentState{}}
	var tail string
	if _, err := fmt.Sscanf(where, "%d %d %d %d %s", &st.Dev, &st.Ino, &st.Pos.Offset, &st.Pos.Line, &tail); err != nil {
		if _, err := fmt.Sscanf(where, "%d %d %d %d", &st.Dev, &st.Ino, &st.Pos.Offset, &st.Pos.Line); err != nil {
			return nil
		}
	}
	if st.Tail, err = hex.DecodeString(tail); err != nil {
		return nil
	}
	for text != "" {
		var line string
		line, text, _ = strings.Cut(text, "\n")
		a, ok := parseAgentState(line)
		if !ok {
			return nil
		}
		st.byID[a.ID] = a
	}
	st.savedAt = st.Pos.Offset
	return st
}

func parseAgentState(line string) (*agentState, bool) {
	var f [8]string
	for i := range f {
		var ok bool
		if f[i], line, ok = strings.Cut(line, "\t"); !ok && i < len(f)-1 {
			return nil, false
		}
	}
	a := &agentState{Status: Status(f[1]), UserAfter: f[6] == "1"}
	var err error
	if a.ID, err = Unescape(f[0]); err != nil || a.ID == "" || !a.Status.Valid() {
		return nil, false
	}
	nums := []*int64{&a.Since, &a.Off, &a.StartOff, &a.Seen}
	for i, p := range nums {
		if *p, err = strconv.ParseInt(f[2+i], 10, 64); err != nil {
			return nil, false
		}
	}
	if a.Retries, err = strconv.Atoi(f[7]); err != nil {
		return nil, false
	}
	return a, true
}

// save writes s as the side index, atomically.
func (s *state) save(path string) error {
	agents := make([]*agentState, 0, len(s.byID))
	for _, a := range s.byID {
		agents = append(agents, a)
	}
	slices.SortFunc(agents, func(a, b *agentState) int { return cmp.Compare(a.ID, b.ID) })
	buf := make([]byte, 0, 64+len(agents)*96)
	buf = fmt.Appendf(buf, "%s\n%d %d %d %d %x\n", indexHeader, s.Dev, s.Ino, s.Pos.Offset, s.Pos.Line, s.Tail)
	for _, a := range agents {
		buf = appendEscaped(buf, a.ID, true)
		buf = append(buf, '\t')
		buf = append(buf, a.Status...)
		for _, n := range []int64{a.Since, a.Off, a.StartOff, a.Seen} {
			buf = append(buf, '\t')
			buf = strconv.AppendInt(buf, n, 10)
		}
		user := byte('0')
		if a.UserAfter {
			user = '1'
		}
		buf = append(buf, '\t', user, '\t')
		buf = strconv.AppendInt(buf, int64(a.Retries), 10)
		buf = append(buf, '\n')
	}
	if err := atomicfile.Write(path, buf, 0o644); err != nil {
		return err
	}
	s.savedAt = s.Pos.Offset
	return nil
}

// withState runs fn on the agents' states as of now, with the log open.
func (l *Log) withState(ctx context.Context, fn func(f *os.File, st *state) error) error {
	f, err := os.Open(l.path)
	if err != nil {
		return fmt.Errorf("open world log: %w", err)
	}
	defer f.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	st, err := l.loadState(ctx, f)
	if err != nil {
		return err
	}
	return fn(f, st)
}

// Lookup returns the current state of agent id, and false when the log has
// no agent entry for it.
func (l *Log) Lookup(ctx context.Context, id string) (Agent, bool, error) {
	var a Agent
	var ok bool
	err := l.withState(ctx, func(f *os.File, st *state) error {
		s := st.byID[id]
		if s == nil {
			return nil
		}
		var err error
		a, err = s.agent(f)
		ok = err == nil
		return err
	})
	return a, ok, err
}

// Current returns the latest state of every agent in the log, oldest
// status first.
func (l *Log) Current(ctx context.Context) ([]Agent, error) {
	return l.agents(ctx, func(*agentState) bool { return true })
}

// Limbo returns the agents neither verified nor failed whose latest entry
// is older than silent: those that have not moved and may never reach an
// end ("件件有着落", seed 002).
func (l *Log) Limbo(ctx context.Context, silent time.Duration) ([]Agent, error) {
	cutoff := l.Now().Add(-silent).UnixMilli()
	return l.agents(ctx, func(a *agentState) bool { return !a.Status.Settled() && a.Seen < cutoff })
}

// CountAgents counts the agents Current (silent 0) or Limbo (silent > 0)
// would return whose entry-shaped state (kind, status, id, time of that
// status) match selects, without reading their lines: a count needs only
// the side index.
func (l *Log) CountAgents(ctx context.Context, silent time.Duration, match func(Entry) bool) (int, error) {
	cutoff := l.Now().Add(-silent).UnixMilli()
	n := 0
	err := l.withState(ctx, func(_ *os.File, st *state) error {
		for _, a := range st.byID {
			if silent > 0 && (a.Status.Settled() || a.Seen >= cutoff) {
				continue
			}
			if match == nil || match(Entry{Kind: KindAgent, Status: a.Status, ID: a.ID, Time: time.UnixMilli(a.Since).UTC()}) {
				n++
			}
		}
		return nil
	})
	return n, err
}

func (l *Log) agents(ctx context.Context, keep func(*agentState) bool) ([]Agent, error) {
	var out []Agent
	err := l.withState(ctx, func(f *os.File, st *state) error {
		var picked []*agentState
		for _, a := range st.byID {
			if keep(a) {
				picked = append(picked, a)
			}
		}
		slices.SortFunc(picked, func(a, b *agentState) int {
			return cmp.Or(cmp.Compare(a.Since, b.Since), cmp.Compare(a.ID, b.ID))
		})
		out = make([]Agent, 0, len(picked))
		for i, a := range picked {
			if i%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			ag, err := a.agent(f)
			if err != nil {
				return err
			}
			out = append(out, ag)
		}
		return nil
	})
	return out, err
}

// agent reads the lines a points at and returns the full state.
func (a *agentState) agent(f *os.File) (Agent, error) {
	ag := Agent{
		ID: a.ID, Status: a.Status, Since: time.UnixMilli(a.Since).UTC(),
		LastSeen: time.UnixMilli(a.Seen).UTC(), Retries: a.Retries, UserAnswered: a.UserAfter,
	}
	e, err := entryAt(f, a.Off)
	if err != nil {
		return Agent{}, err
	}
	ag.Output, ag.Need = e.Output, e.Need
	if a.StartOff >= 0 {
		if a.StartOff != a.Off {
			if e, err = entryAt(f, a.StartOff); err != nil {
				return Agent{}, err
			}
		}
		ag.Criteria = e.Need
	}
	return ag, nil
}

// errStaleOffset is an index offset that does not start a valid line.
var errStaleOffset = errors.New("world log index points at no entry")

// entryAt reads the line that starts at off.
func entryAt(f *os.File, off int64) (Entry, error) {
	buf := make([]byte, 0, 512)
	for {
		if len(buf) > MaxLineBytes {
			return Entry{}, fmt.Errorf("%w (offset %d)", errStaleOffset, off)
		}
		chunk := make([]byte, max(512, len(buf)))
		n, err := f.ReadAt(chunk, off+int64(len(buf)))
		if i := bytes.IndexByte(chunk[:n], '\n'); i >= 0 {
			buf = append(buf, chunk[:i]...)
			break
		}
		buf = append(buf, chunk[:n]...)
		if err != nil {
			return Entry{}, fmt.Errorf("%w (offset %d)", errStaleOffset, off)
		}
	}
	e, err := ParseLine(buf)
	if err != nil {
		return Entry{}, fmt.Errorf("%w (offset %d): %v", errStaleOffset, off, err)
	}
	return e, nil
}
