package world

import (
	"os"
	"strings"
	"unsafe"
)

// agentLines are the side index's agent lines not parsed yet: bytes
// [at, end) of its file, whole lines sorted by id. They are read as they
// are asked for: a lookup reads a dozen blocks of at most a few KiB by
// binary search, whatever the number of agents, where reading them all
// cost 'cra task add' more on every thousand tasks of the board. The
// file stays open, so that a side index written since (renamed over it)
// does not change what the state read.
type agentLines struct {
	f       *os.File
	at, end int64
}

// lineBlock is the range find reads whole instead of halving further.
const lineBlock = 4096

// close closes the file; nil closes nothing.
func (l *agentLines) close() {
	if l != nil {
		l.f.Close()
	}
}

// all returns the lines as one text.
func (l *agentLines) all() (string, error) {
	buf := make([]byte, l.end-l.at)
	if _, err := l.f.ReadAt(buf, l.at); err != nil {
		return "", errIndexDamaged
	}
	// The agents parsed from it share its bytes, which nothing writes.
	return unsafe.String(unsafe.SliceData(buf), len(buf)), nil
}

// find returns agent id's line, "" when none is id's.
func (l *agentLines) find(id string) (string, error) {
	lo, hi := l.at, l.end // each the start of a line, or the end
	for hi-lo > lineBlock {
		s, line, err := l.lineAfter(lo+(hi-lo)/2, hi)
		if err != nil {
			return "", err
		}
		if s < 0 {
			break // no line starts in the second half: read the range
		}
		k, err := lineKey(line)
		if err != nil {
			return "", err
		}
		switch {
		case id < k:
			hi = s
		case id > k:
			lo = s + int64(len(line)) + 1
		default:
			return line, nil
		}
	}
	buf := make([]byte, hi-lo)
	if _, err := l.f.ReadAt(buf, lo); err != nil {
		return "", errIndexDamaged
	}
	return findAgentLine(string(buf), id)
}

// lineAfter returns the first line that starts after mid and before hi,
// and where it starts; -1 when none does.
func (l *agentLines) lineAfter(mid, hi int64) (int64, string, error) {
	for size := int64(512); ; size *= 2 {
		n := min(size, hi-mid)
		buf := make([]byte, n)
		if _, err := l.f.ReadAt(buf, mid); err != nil {
			return 0, "", errIndexDamaged
		}
		i := strings.IndexByte(string(buf), '\n')
		if i < 0 {
			if n == hi-mid {
				return 0, "", errIndexDamaged // the lines end with a newline
			}
			continue
		}
		s := mid + int64(i) + 1
		if s >= hi {
			return -1, "", nil
		}
		rest := buf[i+1:]
		if j := strings.IndexByte(string(rest), '\n'); j >= 0 {
			return s, string(rest[:j]), nil
		}
		if n == hi-mid {
			return 0, "", errIndexDamaged
		}
	}
}

// lineKey returns the id an agent line is for.
func lineKey(line string) (string, error) {
	key, _, ok := strings.Cut(line, "\t")
	if !ok {
		return "", errIndexDamaged
	}
	id, err := Unescape(key)
	if err != nil {
		return "", errIndexDamaged
	}
	return id, nil
}
