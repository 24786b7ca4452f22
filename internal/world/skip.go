package world

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// Skip is an agent entry the fold of the log ignores, because the
// lifecycle forbids it where it stands (a verified with no review after
// its finish, a step from a status that does not lead there). No state
// comes from it: not the current status, not a folder, not a
// notification.
type Skip struct {
	Line   int64 `json:"line"`
	Offset int64 `json:"offset"`
	// Entry is the entry as written; zero when its line could no longer
	// be read.
	Entry Entry            `json:"entry"`
	Err   *TransitionError `json:"-"`
}

// String says which line is skipped and why, on one line:
// "line 5, [agent:verified][T-1] done: agent T-1 is start: …".
func (s Skip) String() string {
	out := strings.Join(strings.Fields(s.Entry.Output), " ")
	if len(out) > 120 {
		out = strings.ToValidUTF8(out[:120], "") + "…"
	}
	return fmt.Sprintf("line %d, [agent:%s][%s] %s: %v", s.Line, s.Entry.Status, Escape(s.Entry.ID), Escape(out), s.Err)
}

// Skipped returns the latest entries the fold ignored (up to 1024, oldest
// first) and how many it ignored in all.
func (l *Log) Skipped(ctx context.Context) ([]Skip, int, error) {
	var out []Skip
	var total int
	err := l.withState(ctx, func(f *os.File, st *state) error {
		total = st.SkipTotal
		for _, sk := range st.Skips {
			te := sk.Err
			s := Skip{Line: sk.Line, Offset: sk.Off, Err: &te}
			if e, err := entryAt(f, sk.Off); err == nil {
				s.Entry = e
			}
			out = append(out, s)
		}
		return nil
	})
	return out, total, err
}

// skipMarks sets Record.Skipped on the records of one reading of the log
// file f: it folds the log as far as the records go, lazily, on the
// first agent entry met and again on one past the fold's end.
type skipMarks struct {
	l   *Log
	ctx context.Context
	f   *os.File
	at  map[int64]*TransitionError
	end int64 // the fold's end: every record before it is known
	off bool  // f is no longer the log (a compaction replaced it): marks nothing
}

func (l *Log) marks(ctx context.Context, f *os.File) *skipMarks {
	return &skipMarks{l: l, ctx: ctx, f: f, end: -1}
}

// mark sets r.Skipped when the fold ignores r's entry.
func (m *skipMarks) mark(r *Record) error {
	if m.off || r.Err != nil || r.Entry.Kind != KindAgent {
		return nil
	}
	if r.Offset >= m.end {
		if err := m.load(); err != nil || m.off {
			return err
		}
	}
	r.Skipped = m.at[r.Offset]
	return nil
}

func (m *skipMarks) load() error {
	fi, err := m.f.Stat()
	if err != nil {
		return err
	}
	if now, err := os.Stat(m.l.path); err != nil || !os.SameFile(now, fi) {
		m.off = true
		return nil
	}
	m.l.mu.Lock()
	defer m.l.mu.Unlock()
	// The reader sees malformed lines and skips in its records: the
	// fold's own telling would say them twice.
	st, err := m.l.loadStateTelling(m.ctx, m.f, nil, nil)
	if err != nil {
		return err
	}
	m.at = make(map[int64]*TransitionError, len(st.Skips))
	for _, sk := range st.Skips {
		te := sk.Err
		m.at[sk.Off] = &te
	}
	m.end = st.Pos.Offset
	return nil
}

// vouchedEnd returns how much of the file fi a compaction wrote, from the
// notes at path: 0 when none of them names fi.
func vouchedEnd(path string, fi os.FileInfo) int64 {
	dev, ino := fileID(fi)
	var end int64
	for _, n := range readCompactedNotes(path) {
		if n.Dev == dev && n.Ino == ino {
			end = max(end, n.Pos.Offset)
		}
	}
	return end
}
