package world

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

// Filter selects entries. Zero fields select everything; a list matches
// any of its values; all fields must match.
type Filter struct {
	Kind     Kind
	Statuses []Status // agent entries with one of these statuses
	Sources  []Source // events from one of these sources
	IDs      []string // exact identifiers
	Since    time.Time
	Until    time.Time // exclusive
	// Text is a substring of the line as written, the way grep sees it:
	// escaped, so a newline in an output is matched as `\n`.
	Text string
}

// Match reports whether e passes every field but Text, which needs the
// line as written.
func (f *Filter) Match(e Entry) bool {
	if f.Kind != "" && e.Kind != f.Kind {
		return false
	}
	if len(f.Statuses) > 0 && (e.Kind != KindAgent || !slices.Contains(f.Statuses, e.Status)) {
		return false
	}
	if len(f.Sources) > 0 && (e.Kind != KindEvent || !slices.Contains(f.Sources, e.Source)) {
		return false
	}
	if len(f.IDs) > 0 && !slices.Contains(f.IDs, e.ID) {
		return false
	}
	if !f.Since.IsZero() && e.Time.Before(f.Since) {
		return false
	}
	if !f.Until.IsZero() && !e.Time.Before(f.Until) {
		return false
	}
	return true
}

// matcher is a Filter with the byte patterns that reject most lines of the
// current format before they are parsed.
type matcher struct {
	f     Filter
	text  []byte
	kinds [][]byte // allowed prefixes of the kind field, "[agent:" or "[event:bash]"
	ids   [][]byte // allowed identifier fields, "[T-1]"
}

func newMatcher(f Filter) *matcher {
	m := &matcher{f: f, text: []byte(f.Text)}
	switch {
	case len(f.Statuses) > 0 && len(f.Sources) > 0:
		m.kinds = [][]byte{} // an entry is an agent or an event, not both
	case len(f.Statuses) > 0:
		for _, s := range f.Statuses {
			m.kinds = append(m.kinds, []byte("[agent:"+string(s)+"]"))
		}
	case len(f.Sources) > 0:
		for _, s := range f.Sources {
			m.kinds = append(m.kinds, []byte("[event:"+string(s)+"]"))
		}
	case f.Kind != "":
		m.kinds = [][]byte{[]byte("[" + string(f.Kind) + ":")}
	}
	for _, id := range f.IDs {
		m.ids = append(m.ids, appendEscaped([]byte("["), id, true))
	}
	return m
}

// pre reports whether raw may match. It is exact for Text, and for kinds
// and identifiers on lines of the current format; other lines pass to be
// parsed.
func (m *matcher) pre(raw []byte) bool {
	if len(m.text) > 0 && !bytes.Contains(raw, m.text) {
		return false
	}
	if m.kinds == nil && m.ids == nil {
		return true
	}
	i := bytes.IndexByte(raw, ']')
	if i < 0 || i+1 >= len(raw) || raw[i+1] != '[' {
		return true // old format or malformed: let the parser decide
	}
	rest := raw[i+1:]
	if m.kinds != nil {
		ok := false
		for _, k := range m.kinds {
			if bytes.HasPrefix(rest, k) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if m.ids != nil {
		j := bytes.IndexByte(rest, ']')
		if j < 0 {
			return true
		}
		rest = rest[j+1:]
		for _, id := range m.ids {
			if bytes.HasPrefix(rest, id) && len(rest) > len(id) && rest[len(id)] == ']' {
				return true
			}
		}
		return false
	}
	return true
}

// match reports whether a parsed record matches. Malformed lines match
// when they contain Text, so that a query shows them where they matter.
func (m *matcher) match(r *Record) bool {
	if r.Err != nil {
		return true
	}
	return m.f.Match(r.Entry)
}

// Select streams the log from the start and calls fn for each entry f
// selects, in order, and for each malformed line among those it had to
// parse. Lines of the current format that cannot match are skipped before
// parsing, so a selective query reads at close to the speed of the disk.
func (l *Log) Select(ctx context.Context, f Filter, fn func(*Record) error) error {
	file, err := os.Open(l.path)
	if err != nil {
		return fmt.Errorf("open world log: %w", err)
	}
	defer file.Close()
	m := newMatcher(f)
	mk := l.marks(ctx, file)
	_, err = scanFile(ctx, file, Position{}, m.pre, func(r *Record) error {
		if !m.match(r) {
			return nil
		}
		if err := mk.mark(r); err != nil {
			return err
		}
		return fn(r)
	})
	return err
}

// Tail calls fn, oldest first, for the last n records f selects, and
// returns the end of the log's complete lines: the position Follow goes
// on from.
func (l *Log) Tail(ctx context.Context, n int, f Filter, fn func(*Record) error) (Position, error) {
	file, fi, err := l.open()
	if err != nil {
		return Position{}, err
	}
	defer file.Close()
	end, err := completeEnd(file, fi.Size())
	if err != nil {
		return Position{}, err
	}
	m := newMatcher(f)
	var recs []Record // newest first
	if n > 0 {
		err = scanBackward(ctx, file, end, func(off int64, line []byte, tooLong bool) bool {
			if !m.pre(line) {
				return true
			}
			r := parseRecord(bytes.Clone(line), Position{Offset: off}, tooLong)
			if m.match(&r) {
				recs = append(recs, r)
			}
			return len(recs) < n
		})
		if err != nil {
			return Position{}, err
		}
	}
	// Number the lines: count up to the oldest record, then between records.
	lines, at := int64(0), int64(0)
	for i := len(recs) - 1; i >= 0; i-- {
		k, err := countLinesBetween(ctx, file, at, recs[i].Offset)
		if err != nil {
			return Position{}, err
		}
		lines += k
		at = recs[i].Offset
		recs[i].Line = lines + 1
		if recs[i].Err != nil {
			recs[i].Err.Line = recs[i].Line
		}
	}
	k, err := countLinesBetween(ctx, file, at, end)
	if err != nil {
		return Position{}, err
	}
	mk := l.marks(ctx, file)
	for i := len(recs) - 1; i >= 0; i-- {
		if err := mk.mark(&recs[i]); err != nil {
			return Position{}, err
		}
		if err := fn(&recs[i]); err != nil {
			return Position{}, err
		}
	}
	return Position{Offset: end, Line: lines + k}, nil
}

// countLinesBetween counts the newlines of f in [from, to).
func countLinesBetween(ctx context.Context, f *os.File, from, to int64) (int64, error) {
	return countLines(ctx, io.NewSectionReader(f, from, to-from), to-from)
}

// followPoll is how often Follow looks for new lines.
const followPoll = 100 * time.Millisecond

// ErrReplaced is returned by Follow when the log file was replaced or cut
// short by something other than a compaction, so it cannot tell where to
// go on.
var ErrReplaced = errors.New("the world log was replaced by another file: start following again")

// Follow calls fn for each record f selects that is appended after from,
// as it comes, until ctx ends; it returns ctx's error. A compaction is
// followed across: reading goes on where the compacted log ends.
func (l *Log) Follow(ctx context.Context, from Position, f Filter, fn func(*Record) error) error {
	m := newMatcher(f)
	file, fi, err := l.open()
	if err != nil {
		return err
	}
	defer func() { file.Close() }()
	pos := from
	mk := l.marks(ctx, file)
	each := func(r *Record) error {
		if !m.match(r) {
			return nil
		}
		if err := mk.mark(r); err != nil {
			return err
		}
		return fn(r)
	}
	tick := time.NewTicker(followPoll)
	defer tick.Stop()
	for {
		cur, err := file.Stat()
		if err != nil {
			return fmt.Errorf("stat world log: %w", err)
		}
		if cur.Size() < pos.Offset {
			return ErrReplaced // cut short in place: where to go on is unknown
		}
		if cur.Size() > pos.Offset {
			pos, err = scanFile(ctx, file, pos, m.pre, each)
			if err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		now, err := os.Stat(l.path)
		if err != nil || os.SameFile(now, fi) {
			continue // a missing file is being renamed into place
		}
		// Replaced: finish the old file, then go on where compaction left
		// the new one.
		if pos, err = scanFile(ctx, file, pos, m.pre, each); err != nil {
			return err
		}
		next, nfi, err := l.open()
		if err != nil {
			return err
		}
		resume, ok := readCompacted(l.sd.WorldCompacted(), fi, nfi)
		if !ok {
			next.Close()
			return ErrReplaced
		}
		file.Close()
		file, fi, pos = next, nfi, resume
		mk = l.marks(ctx, file)
	}
}

// compacted is a note a compaction leaves: appends to the new file (Dev,
// Ino) after the compaction of (FromDev, FromIno) start at Pos. A later
// compaction carries the note over to its own new file, so that a follower
// still on the old file finds where to go on.
type compacted struct {
	FromDev uint64   `json:"from_dev,omitempty"`
	FromIno uint64   `json:"from_ino,omitempty"`
	Dev     uint64   `json:"dev"`
	Ino     uint64   `json:"ino"`
	Pos     Position `json:"pos"`
}

// maxCompactedNotes bounds the notes kept: a follower more compactions
// behind starts again (ErrReplaced).
const maxCompactedNotes = 16

// readCompactedNotes reads the notes at path: a list, or the one note of
// a log compacted by an earlier version; none when missing or malformed.
func readCompactedNotes(path string) []compacted {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var notes []compacted
	if json.Unmarshal(data, &notes) == nil {
		return notes
	}
	var one compacted
	if json.Unmarshal(data, &one) == nil {
		return []compacted{one}
	}
	return nil
}

// readCompacted returns where a follower that read the file old to its end
// goes on in the file cur, which replaced it.
func readCompacted(path string, old, cur os.FileInfo) (Position, bool) {
	oDev, oIno := fileID(old)
	dev, ino := fileID(cur)
	for _, n := range readCompactedNotes(path) {
		if n.Dev != dev || n.Ino != ino {
			continue
		}
		if n.FromIno == 0 || n.FromDev == oDev && n.FromIno == oIno {
			return n.Pos, true // (a note of an earlier version names no old file)
		}
	}
	return Position{}, false
}
