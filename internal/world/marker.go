package world

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cra-dev/cra/internal/atomicfile"
	"github.com/cra-dev/cra/internal/lazyre"
)

// ErrStaleMarker is a read marker that no longer matches the log: the file
// was replaced or cut outside cra, so where the reader stopped is unknown.
var ErrStaleMarker = errors.New("read marker does not match the world log")

// markerPattern keeps marker names safe as file names.
var markerPattern = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// CheckMarkerName returns an error unless name can name a read marker.
func CheckMarkerName(name string) error {
	if !markerPattern().MatchString(name) {
		return fmt.Errorf("marker name %q: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// marker is where a reader stopped: a position in one file (Dev, Ino)
// whose bytes before it end with Tail.
type marker struct {
	Pos     Position  `json:"pos"`
	Tail    []byte    `json:"tail"`
	Dev     uint64    `json:"dev"`
	Ino     uint64    `json:"ino"`
	Updated time.Time `json:"updated"`
}

func (l *Log) markerPath(name string) string { return l.sd.Marker(name) }

func readMarker(path string) (*marker, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read marker: %w", err)
	}
	var m marker
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("read marker %s: %w (the marker is damaged: read from the start again with --reset)", path, err)
	}
	return &m, nil
}

func writeMarker(path string, m *marker) error {
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode marker: %w", err)
	}
	return atomicfile.Write(path, data, 0o644)
}

// valid reports whether m still marks a place in f.
func (m *marker) valid(f *os.File, fi os.FileInfo) bool {
	dev, ino := fileID(fi)
	if m.Dev != dev || m.Ino != ino || fi.Size() < m.Pos.Offset {
		return false
	}
	tail, err := tailAt(f, m.Pos.Offset)
	return err == nil && bytes.Equal(tail, m.Tail)
}

// Check calls fn for each line appended since the read marker name was
// last advanced (every line, for a new marker), malformed ones included,
// then advances the marker past them, atomically. If fn fails the marker
// stays where it was, so nothing is skipped. A marker that no longer
// matches the log returns an error wrapping ErrStaleMarker.
func (l *Log) Check(ctx context.Context, name string, fn func(*Record) error) (Position, error) {
	return l.CheckThen(ctx, name, fn, nil)
}

// CheckThen is Check that calls done, when not nil, after the last line
// and before the marker moves: a reader that buffers what fn gets
// delivers it there (flushes its output), and if done fails the marker
// stays, so that lines read but never delivered are read again.
func (l *Log) CheckThen(ctx context.Context, name string, fn func(*Record) error, done func() error) (Position, error) {
	if err := CheckMarkerName(name); err != nil {
		return Position{}, err
	}
	// A compaction killed after replacing the log leaves its journal and
	// the markers still naming the old file: finish it first.
	if _, err := os.Stat(l.sd.WorldCompacting()); err == nil {
		if err := l.recoverUnderLock(ctx); err != nil {
			return Position{}, err
		}
	}
	// A shared lock keeps compaction, which moves markers, out meanwhile.
	lk, err := lockFile(ctx, l.sd.WorldLock(), false)
	if err != nil {
		return Position{}, err
	}
	defer lk.Close()
	path := l.markerPath(name)
	m, err := readMarker(path)
	if err != nil {
		return Position{}, err
	}
	f, fi, err := l.open()
	if err != nil {
		return Position{}, err
	}
	defer f.Close()
	existed := m != nil
	if !existed {
		m = &marker{}
		m.Dev, m.Ino = fileID(fi)
	} else if !m.valid(f, fi) {
		return Position{}, fmt.Errorf("marker %q: %w (it was replaced or cut outside cra): run 'cra log check --marker %s --reset' to read from the start", name, ErrStaleMarker, name)
	}
	mk := l.marks(ctx, f)
	pos, err := scanFile(ctx, f, m.Pos, nil, func(r *Record) error {
		if err := mk.mark(r); err != nil {
			return err
		}
		return fn(r)
	})
	if err == nil && done != nil {
		err = done()
	}
	if err != nil {
		return m.Pos, err
	}
	if pos == m.Pos && existed {
		return pos, nil
	}
	if m.Tail, err = tailAt(f, pos.Offset); err != nil {
		return m.Pos, err
	}
	m.Pos, m.Updated = pos, l.Now().UTC()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return Position{}, fmt.Errorf("create markers dir: %w", err)
	}
	return pos, writeMarker(path, m)
}

// recoverUnderLock runs the recovery of a killed compaction under the
// exclusive lock (a compaction still running finishes first).
func (l *Log) recoverUnderLock(ctx context.Context) error {
	lk, err := lockFile(ctx, l.sd.WorldLock(), true)
	if err != nil {
		return err
	}
	defer lk.Close()
	return l.recoverCompaction()
}

// ResetMarker removes the read marker name, so that the next Check reads
// the log from the start. A missing marker is not an error.
func (l *Log) ResetMarker(ctx context.Context, name string) error {
	if err := CheckMarkerName(name); err != nil {
		return err
	}
	// Under the log's lock: a compaction running moves every marker at its
	// end, and would write this one back.
	lk, err := lockFile(ctx, l.sd.WorldLock(), false)
	if err != nil {
		return err
	}
	defer lk.Close()
	if err := os.Remove(l.markerPath(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reset marker: %w", err)
	}
	return nil
}

// Markers returns where each read marker of the log stands, by name. A
// marker that no longer matches the log (ErrStaleMarker's case) is an
// error naming it, as Check's: a copy of the log's readers must not move
// one silently.
func (l *Log) Markers(ctx context.Context) (map[string]Position, error) {
	lk, err := lockFile(ctx, l.sd.WorldLock(), false)
	if err != nil {
		return nil, err
	}
	defer lk.Close()
	ents, err := os.ReadDir(l.sd.Markers())
	if errors.Is(err, os.ErrNotExist) {
		return map[string]Position{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read markers: %w", err)
	}
	f, fi, err := l.open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]Position{}
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || CheckMarkerName(name) != nil {
			continue
		}
		m, err := readMarker(l.markerPath(name))
		if err != nil {
			return nil, err
		}
		if m == nil {
			continue
		}
		if !m.valid(f, fi) {
			return nil, fmt.Errorf("marker %q: %w: run 'cra log check --marker %s --reset' first", name, ErrStaleMarker, name)
		}
		out[name] = m.Pos
	}
	return out, nil
}
