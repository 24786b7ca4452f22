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

// AgentState is an agent as the log's fold keeps it: its status and where
// the lines that hold the rest are (byte offsets in the file, where the side
// index keeps it; row ids in the PostgreSQL backend, internal/pgstore).
type AgentState struct {
	ID        string
	Status    Status
	Since     int64 // unix ms of the latest status entry
	Off       int64 // offset of the latest status entry
	StartOff  int64 // offset of the latest start entry; -1 if none
	Seen      int64 // unix ms of the latest entry with this id
	UserAfter bool  // an [event:user] came after the failed entry
	Reviewed  bool  // an [event:review] came after the finish entry
	Retries   int
}

// agentState is the file's name for AgentState.
type agentState = AgentState

// Check returns why the lifecycle forbids entry e after a, an agent's
// state (nil: no entry yet), or nil when it allows it. Events are always
// allowed.
func (a *AgentState) Check(e Entry) *TransitionError {
	if e.Kind != KindAgent {
		return nil
	}
	var from Status
	var user, reviewed bool
	if a != nil {
		from, user, reviewed = a.Status, a.UserAfter, a.Reviewed
	}
	var te *TransitionError
	if errors.As(checkTransition(e.ID, from, user, reviewed, e.Status), &te) {
		return te
	}
	return nil
}

// Fold applies entry e, whose line is at at, to a, the state of the agent
// e.ID names: an agent entry the lifecycle allows (Check), or an event
// with the agent's id.
func (a *AgentState) Fold(at int64, e Entry) {
	ms := e.Time.UnixMilli()
	if e.Kind == KindEvent {
		a.Seen = max(a.Seen, ms)
		if e.Source == SourceUser && a.Status == StatusFailed {
			a.UserAfter = true
		}
		if e.Source == SourceReview && a.Status == StatusFinish {
			a.Reviewed = true
		}
		return
	}
	switch e.Status {
	case StatusStart:
		a.StartOff, a.Retries = at, 0
	case StatusRetry:
		a.Retries++
	}
	a.Status, a.Since, a.Off, a.UserAfter, a.Reviewed = e.Status, ms, at, false, false
	a.Seen = max(a.Seen, ms)
}

// InLimbo reports whether a is in limbo at now for silent (Log.Limbo).
func (a *AgentState) InLimbo(now time.Time, silent time.Duration) bool {
	return inLimbo(a, now, silent)
}

// indexEvery is how much log a replay may read before the side index is
// written again: appends stay cheap, and a reader never replays much.
const indexEvery = 1 << 16

// state is the agents' states after the lines before Pos. It is a view of
// the log: it describes the file (Dev, Ino) whose bytes before Pos.Offset
// end with Tail, and is rebuilt from the log when that no longer holds.
type state struct {
	Dev, Ino uint64
	Pos      Position
	Tail     []byte
	// Current says a line of the current format came before Pos: from
	// there on, agent entries of the old format are checked as well (a
	// log of the old format alone is read as it was written).
	Current bool
	// Vouched is where the part of the file a compaction wrote ends (0:
	// none). In it, a verified agent's start and verified entries stand
	// without the steps between, which compaction moved to the archive.
	Vouched int64
	// Skips are the latest maxSkips agent entries the fold ignored, in
	// the order met; SkipTotal counts them all.
	Skips     []skipState
	SkipTotal int

	// byID holds the agents read so far: all of them, but for a state
	// read from the side index, whose agent lines (rest) are read one at
	// a time as they are asked for (get) and all at once when all are
	// (all). A lookup, or an append, on a board of 10,000 agents parsed
	// 10,000 lines to use one: 'cra task add' grew with the board. An
	// agent in byID is newer than its line in rest.
	byID    map[string]*agentState
	rest    *agentLines
	savedAt int64 // Pos.Offset of the copy on disk; -1 when none

	// lines are the entries already read at their offsets: a line
	// before Pos never changes while the state describes the file, and
	// an idle daemon's loops ask for the same thousands of settled
	// agents every few seconds. Not saved; bounded by maxLines.
	lines map[int64]Entry
	// picks are the agents of each question asked of all of them (the
	// statuses of CurrentIn, the answered failures of AnsweredFailed) as
	// of Pos.Offset picksAt: an idle daemon's loops ask the same ones
	// every few seconds, and the fold changes only when Pos moves, so a
	// board of 10,000 settled agents is walked once, not at every pass.
	picks   map[string][]*agentState
	picksAt int64
}

// maxLines bounds the entries a state keeps read (some 300 bytes each).
const maxLines = 1 << 17

// entryAt is entryAt through the state's kept lines.
func (s *state) entryAt(f *os.File, off int64) (Entry, error) {
	if e, ok := s.lines[off]; ok {
		return e, nil
	}
	e, err := entryAt(f, off)
	if err != nil {
		return e, err
	}
	if s.lines == nil || len(s.lines) >= maxLines {
		s.lines = map[int64]Entry{}
	}
	s.lines[off] = e
	return e, nil
}

// skipState is an entry the fold ignored: where it is, and why.
type skipState struct {
	Off, Line int64
	Err       TransitionError
}

// maxSkips bounds the skipped entries a state remembers: a log full of
// forged lines costs the index no more than this.
const maxSkips = 1024

// newState returns the state of the empty start of the file fi, which a
// compaction wrote up to vouched.
func newState(fi os.FileInfo, vouched int64) *state {
	dev, ino := fileID(fi)
	return &state{Dev: dev, Ino: ino, Vouched: vouched, byID: map[string]*agentState{}, savedAt: -1}
}

// freshState is newState for the log's file fi, vouched for as far as the
// notes of the compaction that wrote it say.
func (l *Log) freshState(fi os.FileInfo) *state {
	return newState(fi, vouchedEnd(l.sd.WorldCompacted(), fi))
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

// errIndexDamaged is a side index whose checksum holds but whose agent
// lines do not parse or are out of order: only a hand can write one.
var errIndexDamaged = errors.New("world log side index damaged: remove .clean_room/world.log.idx, and the next command rebuilds it from the log")

// get returns agent id's state, nil when the log has none: from byID, or
// parsed from its line of the side index (found by binary search) the
// first time it is asked for.
func (s *state) get(id string) (*agentState, error) {
	if a := s.byID[id]; a != nil || s.rest == nil {
		return a, nil
	}
	line, err := s.rest.find(id)
	if err != nil || line == "" {
		return nil, err
	}
	a := new(agentState)
	if !parseAgentState(line, a) || a.ID != id {
		return nil, errIndexDamaged
	}
	s.byID[id] = a
	return a, nil
}

// findAgentLine returns the line of agent id among lines, whole agent
// lines of the side index sorted by id; "" when none is id's.
func findAgentLine(lines, id string) (string, error) {
	lo, hi := 0, len(lines) // lo and hi start lines
	for lo < hi {
		mid := lo + (hi-lo)/2
		start := lo + strings.LastIndexByte(lines[lo:mid], '\n') + 1
		end := strings.IndexByte(lines[start:hi], '\n')
		if end < 0 {
			return "", errIndexDamaged
		}
		end += start
		line := lines[start:end]
		key, _, ok := strings.Cut(line, "\t")
		if !ok {
			return "", errIndexDamaged
		}
		k, err := Unescape(key)
		if err != nil {
			return "", errIndexDamaged
		}
		switch {
		case id < k:
			hi = start
		case id > k:
			lo = end + 1
		default:
			return line, nil
		}
	}
	return "", nil
}

// all returns every agent's state, parsing the side index's lines not
// read yet.
func (s *state) all() (map[string]*agentState, error) {
	if s.rest == nil {
		return s.byID, nil
	}
	text, err := s.rest.all()
	if err != nil {
		return nil, err
	}
	n := strings.Count(text, "\n")
	if len(s.byID) == 0 {
		s.byID = make(map[string]*agentState, n)
	}
	slab := make([]agentState, n) // one allocation for the agents
	prev := ""
	for text != "" {
		var line string
		line, text, _ = strings.Cut(text, "\n")
		a := &slab[0]
		slab = slab[1:]
		if !parseAgentState(line, a) || (prev != "" && a.ID <= prev) {
			return nil, errIndexDamaged // out of order, get could not have found them
		}
		prev = a.ID
		if s.byID[a.ID] == nil {
			s.byID[a.ID] = a
		}
	}
	s.release()
	return s.byID, nil
}

// release closes the side index s reads its agent lines from, once they
// are all read or s is dropped. A nil s releases nothing.
func (s *state) release() {
	if s != nil {
		s.rest.close()
		s.rest = nil
	}
}

// apply folds entry e, whose line starts at off, into s; check has found
// it allowed. Its error is a damaged side index's.
func (s *state) apply(off int64, e Entry) error {
	a, err := s.get(e.ID)
	if err != nil {
		return err
	}
	if a == nil {
		if e.Kind == KindEvent {
			return nil
		}
		a = &agentState{ID: e.ID, StartOff: -1}
		s.byID[e.ID] = a
	}
	a.Fold(off, e)
	return nil
}

// check returns why the fold ignores entry e, whose line starts at off,
// or nil when it folds it: an agent entry stands only where the lifecycle
// allows it (Next), the same rule the writer keeps. A hand, or an agent
// that can write the file, may append any line; the fold does not let
// such a line move a task (a verified with no finish and no review after
// it, say). Two kinds of line are read as written: entries of the old
// format in a log that has no line of the current one before them (a log
// of seed 002's tools), and a verified agent's start and verified entries
// in the part a compaction wrote.
func (s *state) check(off int64, e Entry) (*TransitionError, error) {
	if e.Kind != KindAgent || (e.Legacy && !s.Current) {
		return nil, nil
	}
	a, err := s.get(e.ID)
	if err != nil {
		return nil, err
	}
	if off < s.Vouched && e.Status == StatusVerified && (a == nil || a.Status == StatusStart) {
		return nil, nil
	}
	return a.Check(e), nil
}

// skip records that the fold ignored the entry of r, for te.
func (s *state) skip(r *Record, te *TransitionError) {
	s.SkipTotal++
	if len(s.Skips) == maxSkips {
		s.Skips = slices.Delete(s.Skips, 0, 1)
	}
	s.Skips = append(s.Skips, skipState{Off: r.Offset, Line: r.Line, Err: *te})
}

// catchUp replays the complete lines of f after s.Pos. An agent entry the
// lifecycle forbids where it stands (check) is not folded: it is
// remembered among the skips and told to broken when set.
func (s *state) catchUp(ctx context.Context, f *os.File, malformed func(*Record), broken func(*Record, *TransitionError)) error {
	pos, err := scanFile(ctx, f, s.Pos, nil, func(r *Record) error {
		if r.Err != nil {
			if malformed != nil {
				malformed(r)
			}
			return nil
		}
		if !r.Entry.Legacy {
			s.Current = true
		}
		te, err := s.check(r.Offset, r.Entry)
		if err != nil {
			return err
		}
		if te != nil {
			s.skip(r, te)
			if broken != nil {
				broken(r, te)
			}
			return nil
		}
		return s.apply(r.Offset, r.Entry)
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
	return l.loadStateTelling(ctx, f, l.Malformed, l.Broken)
}

// loadStateTelling is loadState that tells the lines it replays to
// malformed and broken instead of the Log's.
func (l *Log) loadStateTelling(ctx context.Context, f *os.File, malformed func(*Record), broken func(*Record, *TransitionError)) (*state, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat world log: %w", err)
	}
	if !l.UseIndex {
		st := l.freshState(fi)
		return st, st.catchUp(ctx, f, malformed, broken)
	}
	st := l.cache
	if st == nil || !st.describes(f, fi) {
		st.release()
		st = readIndex(l.sd.WorldIndex())
		if st == nil || !st.describes(f, fi) {
			st.release()
			st = l.freshState(fi)
		}
	}
	l.cache = nil // until caught up: a failed replay must not leave half a state
	// Nothing written since: no reader (and its 256 KiB buffer) for a
	// lookup on an idle board.
	if fi.Size() > st.Pos.Offset {
		err := st.catchUp(ctx, f, malformed, broken)
		if errors.Is(err, errIndexDamaged) {
			// A side index whose lines do not hold up: the log rebuilds it.
			st.release()
			st = l.freshState(fi)
			err = st.catchUp(ctx, f, malformed, broken)
		}
		if err != nil {
			st.release()
			return nil, err
		}
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
//	cra-world-index 3
//	DEV INO OFFSET LINES TAIL-HEX CURRENT VOUCHED SKIPTOTAL AGENTBYTES
//	ID<TAB>STATUS<TAB>SINCE<TAB>OFF<TAB>START<TAB>SEEN<TAB>USER<TAB>RETRIES<TAB>REVIEWED
//	...
//	<TAB>OFF<TAB>LINE<TAB>ID<TAB>FROM<TAB>TO<TAB>WHY
//	...
//
// with identifiers escaped as in the log, so they hold no tab or newline;
// an empty TAIL-HEX is written "-", CURRENT, USER and REVIEWED are 0 or 1,
// and the skipped entries' lines start with a tab (an agent line starts
// with its id, which is never empty). WHY is "user", "review" or "-", the
// TransitionError's NeedsUser and NeedsReview. The agent lines are sorted
// by id and take AGENTBYTES bytes. A reader parses the header and the
// skipped entries, and reads an agent's line when it is asked for
// (state.get): a lookup costs the same with 10 agents or 10,000. An
// index of an earlier version is not read: the log rebuilds it.
const indexHeader = "cra-world-index 3"

// readIndex reads the side index; any problem makes it absent, since the
// log can always rebuild it. The state it returns keeps the file open
// until its agents are all read or it is released.
func readIndex(path string) *state {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	st := readIndexFile(f)
	if st == nil || st.rest == nil {
		f.Close()
	}
	return st
}

// headerMax bounds the side index's two header lines (the log's tail is
// at most tailBytes, 128 hex digits).
const headerMax = 4096

func readIndexFile(f *os.File) *state {
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	size := fi.Size()
	head := make([]byte, min(size, headerMax))
	if _, err := f.ReadAt(head, 0); err != nil {
		return nil
	}
	text := string(head)
	header, text, _ := strings.Cut(text, "\n")
	where, text, ok := strings.Cut(text, "\n")
	if header != indexHeader || !ok {
		return nil
	}
	headLen := int64(len(head) - len(text))
	st := &state{byID: map[string]*agentState{}}
	f2 := strings.Fields(where)
	if len(f2) != 9 {
		return nil
	}
	nums := []*uint64{&st.Dev, &st.Ino}
	for i, p := range nums {
		if *p, err = strconv.ParseUint(f2[i], 10, 64); err != nil {
			return nil
		}
	}
	ints := []*int64{&st.Pos.Offset, &st.Pos.Line, &st.Vouched}
	for i, k := range []int{2, 3, 6} {
		if *ints[i], err = strconv.ParseInt(f2[k], 10, 64); err != nil {
			return nil
		}
	}
	if st.Pos.Offset < 0 || st.Pos.Line < 0 {
		return nil
	}
	if f2[4] != "-" {
		if st.Tail, err = hex.DecodeString(f2[4]); err != nil {
			return nil
		}
	}
	st.Current = f2[5] == "1"
	if st.SkipTotal, err = strconv.Atoi(f2[7]); err != nil {
		return nil
	}
	agentBytes, err := strconv.ParseInt(f2[8], 10, 64)
	if err != nil || agentBytes < 0 || agentBytes > size-headLen {
		return nil
	}
	end := headLen + agentBytes
	if agentBytes > 0 {
		var last [1]byte
		if _, err := f.ReadAt(last[:], end-1); err != nil || last[0] != '\n' {
			return nil
		}
		st.rest = &agentLines{f: f, at: headLen, end: end}
	}
	skips := make([]byte, size-end)
	if _, err := f.ReadAt(skips, end); err != nil || (len(skips) > 0 && skips[len(skips)-1] != '\n') {
		return nil
	}
	for text := string(skips); text != ""; {
		var line string
		line, text, _ = strings.Cut(text, "\n")
		rest, ok := strings.CutPrefix(line, "\t")
		if !ok {
			return nil
		}
		sk, ok := parseSkip(rest)
		if !ok {
			return nil
		}
		st.Skips = append(st.Skips, sk)
	}
	st.savedAt = st.Pos.Offset
	return st
}

// cutFields splits line at tabs into exactly n fields.
func cutFields(line string, n int) ([]string, bool) {
	f := strings.Split(line, "\t")
	return f, len(f) == n
}

func parseAgentState(line string, a *agentState) bool {
	// Cut by hand, not split: a board of 10,000 tasks has as many lines,
	// read by every command.
	var f [9]string
	for i := range f {
		if i == len(f)-1 {
			f[i] = line
			if strings.IndexByte(line, '\t') >= 0 {
				return false
			}
			break
		}
		var ok bool
		if f[i], line, ok = strings.Cut(line, "\t"); !ok {
			return false
		}
	}
	*a = agentState{Status: Status(f[1]), UserAfter: f[6] == "1", Reviewed: f[8] == "1"}
	var err error
	if a.ID, err = Unescape(f[0]); err != nil || a.ID == "" || !a.Status.Valid() {
		return false
	}
	nums := [...]*int64{&a.Since, &a.Off, &a.StartOff, &a.Seen}
	for i, p := range nums {
		if *p, err = strconv.ParseInt(f[2+i], 10, 64); err != nil {
			return false
		}
	}
	if a.Retries, err = strconv.Atoi(f[7]); err != nil {
		return false
	}
	return true
}

func parseSkip(line string) (skipState, bool) {
	f, ok := cutFields(line, 6)
	if !ok {
		return skipState{}, false
	}
	var sk skipState
	var err error
	if sk.Off, err = strconv.ParseInt(f[0], 10, 64); err != nil {
		return skipState{}, false
	}
	if sk.Line, err = strconv.ParseInt(f[1], 10, 64); err != nil {
		return skipState{}, false
	}
	if sk.Err.ID, err = Unescape(f[2]); err != nil || sk.Err.ID == "" {
		return skipState{}, false
	}
	sk.Err.From, sk.Err.To = Status(f[3]), Status(f[4])
	if (sk.Err.From != "" && !sk.Err.From.Valid()) || !sk.Err.To.Valid() {
		return skipState{}, false
	}
	switch f[5] {
	case "user":
		sk.Err.NeedsUser = true
	case "review":
		sk.Err.NeedsReview = true
	case "-":
	default:
		return skipState{}, false
	}
	return sk, true
}

func boolDigit(b bool) byte {
	if b {
		return '1'
	}
	return '0'
}

// save writes s as the side index, atomically. The agent lines of the
// index s was read from that no agent in byID replaces are copied as
// they are, unparsed.
func (s *state) save(path string) error {
	agents := make([]*agentState, 0, len(s.byID))
	for _, a := range s.byID {
		agents = append(agents, a)
	}
	slices.SortFunc(agents, func(a, b *agentState) int { return cmp.Compare(a.ID, b.ID) })
	rest := ""
	if s.rest != nil {
		var err error
		if rest, err = s.rest.all(); err != nil {
			return err
		}
	}
	body := make([]byte, 0, len(rest)+len(agents)*96+len(s.Skips)*64)
	prev := ""
	for rest != "" || len(agents) > 0 {
		if rest != "" {
			line, after, _ := strings.Cut(rest, "\n")
			id, err := lineKey(line)
			if err != nil || id <= prev {
				return errIndexDamaged
			}
			if len(agents) == 0 || id < agents[0].ID {
				body = append(append(body, line...), '\n')
				rest, prev = after, id
				continue
			}
			if id == agents[0].ID {
				rest, prev = after, id // byID's is newer
			}
		}
		body = appendAgentState(body, agents[0])
		agents = agents[1:]
	}
	agentBytes := len(body)
	for _, sk := range s.Skips {
		body = append(body, '\t')
		body = strconv.AppendInt(body, sk.Off, 10)
		body = append(body, '\t')
		body = strconv.AppendInt(body, sk.Line, 10)
		body = append(body, '\t')
		body = appendEscaped(body, sk.Err.ID, true)
		body = append(body, '\t')
		body = append(body, sk.Err.From...)
		body = append(body, '\t')
		body = append(body, sk.Err.To...)
		why := "-"
		switch {
		case sk.Err.NeedsUser:
			why = "user"
		case sk.Err.NeedsReview:
			why = "review"
		}
		body = append(body, '\t')
		body = append(body, why...)
		body = append(body, '\n')
	}
	tail := hex.EncodeToString(s.Tail)
	if tail == "" {
		tail = "-"
	}
	buf := make([]byte, 0, 128+len(tail)+len(body))
	buf = fmt.Appendf(buf, "%s\n%d %d %d %d %s %c %d %d %d\n", indexHeader, s.Dev, s.Ino, s.Pos.Offset, s.Pos.Line, tail,
		boolDigit(s.Current), s.Vouched, s.SkipTotal, agentBytes)
	buf = append(buf, body...)
	if err := atomicfile.Write(path, buf, 0o644); err != nil {
		return err
	}
	s.savedAt = s.Pos.Offset
	return nil
}

// appendAgentState appends a's line of the side index.
func appendAgentState(buf []byte, a *agentState) []byte {
	buf = appendEscaped(buf, a.ID, true)
	buf = append(buf, '\t')
	buf = append(buf, a.Status...)
	for _, n := range []int64{a.Since, a.Off, a.StartOff, a.Seen} {
		buf = append(buf, '\t')
		buf = strconv.AppendInt(buf, n, 10)
	}
	buf = append(buf, '\t', boolDigit(a.UserAfter), '\t')
	buf = strconv.AppendInt(buf, int64(a.Retries), 10)
	return append(buf, '\t', boolDigit(a.Reviewed), '\n')
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
		s, err := st.get(id)
		if s == nil || err != nil {
			return err
		}
		a, err = st.agent(f, s)
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
// end ("件件有着落", seed 002). An agent whose latest entry is stamped after
// now (a clock stepped back, a line written by hand) is listed too: how
// long it has been silent cannot be told, and a time in the future must
// not hide it.
func (l *Log) Limbo(ctx context.Context, silent time.Duration) ([]Agent, error) {
	now := l.Now()
	return l.agents(ctx, func(a *agentState) bool { return inLimbo(a, now, silent) })
}

// inLimbo reports whether a is in limbo at now for silent (Limbo).
func inLimbo(a *agentState, now time.Time, silent time.Duration) bool {
	return !a.Status.Settled() && (a.Seen < now.Add(-silent).UnixMilli() || a.Seen > now.UnixMilli())
}

// CountAgents counts the agents Current (silent 0) or Limbo (silent > 0)
// would return whose entry-shaped state (kind, status, id, time of that
// status) match selects, without reading their lines: a count needs only
// the side index.
func (l *Log) CountAgents(ctx context.Context, silent time.Duration, match func(Entry) bool) (int, error) {
	now := l.Now()
	n := 0
	err := l.withState(ctx, func(_ *os.File, st *state) error {
		byID, err := st.all()
		if err != nil {
			return err
		}
		for _, a := range byID {
			if silent > 0 && !inLimbo(a, now, silent) {
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
	return l.agentsPicked(ctx, func(st *state) []*agentState {
		var picked []*agentState
		for _, a := range st.byID {
			if keep(a) {
				picked = append(picked, a)
			}
		}
		return picked
	})
}

// agentsPicked is agents of the states pick returns, which it may keep:
// they are copied before they are sorted.
func (l *Log) agentsPicked(ctx context.Context, pick func(*state) []*agentState) ([]Agent, error) {
	var out []Agent
	err := l.withState(ctx, func(f *os.File, st *state) error {
		if _, err := st.all(); err != nil {
			return err
		}
		picked := slices.Clone(pick(st))
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
			ag, err := st.agent(f, a)
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
func (st *state) agent(f *os.File, a *agentState) (Agent, error) {
	ag := Agent{
		ID: a.ID, Status: a.Status, Since: time.UnixMilli(a.Since).UTC(),
		LastSeen: time.UnixMilli(a.Seen).UTC(), Retries: a.Retries, UserAnswered: a.UserAfter,
	}
	e, err := st.entryAt(f, a.Off)
	if err != nil {
		return Agent{}, err
	}
	ag.Output, ag.Need = e.Output, e.Need
	if a.StartOff >= 0 {
		if a.StartOff != a.Off {
			if e, err = st.entryAt(f, a.StartOff); err != nil {
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
