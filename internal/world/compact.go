package world

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/cra-dev/cra/internal/atomicfile"
	"github.com/cra-dev/cra/internal/statedir"
)

// CompactOptions tune Compact.
type CompactOptions struct {
	// EventsBefore, when set, also drops events older than it whose
	// identifier is no agent's. Events of unsettled agents are always kept.
	EventsBefore time.Time
}

// CompactStats says what Compact did.
type CompactStats struct {
	Lines    int64  `json:"lines"`    // lines before
	Kept     int64  `json:"kept"`     // lines after
	Dropped  int64  `json:"dropped"`  // lines moved to the archive (empty lines are just dropped)
	Verified int    `json:"verified"` // verified agents whose history was dropped
	Archive  string `json:"archive"`  // file the dropped lines were appended to
}

// Compact rewrites the log without the history of verified agents: of each
// verified agent it keeps the start entry (its criteria) and the verified
// entry (its latest state), and drops its other entries and the events with
// its id. It also drops the agent entries the fold skips (Skipped): the
// part of the log a compaction writes is vouched for, and a fold reads a
// start followed by a verified there as the compacted history it is. It
// never drops the latest state of any agent, nor any other line of an
// agent that is not verified, nor a malformed line. Dropped lines are
// appended to world.log.archive first, so nothing is lost (DESIGN.md
// principle 5). Appends wait meanwhile; read markers are moved to the same
// places in the new file, and the side index is rebuilt on next use.
//
// A compaction killed at any moment loses nothing and duplicates nothing:
// before the archive grows, a journal (world.log.compacting) records its
// length and the identity of the log being compacted. The next compaction
// reads it first: if the log was not replaced, the archive is cut back to
// that length (its lines are still in the log); if it was, the archive is
// complete, and the read markers still at their places in the old file
// are moved to theirs in the new one, which the journal records before the
// rename. A torn last line of the archive is cut, and temp files of a
// killed run are removed. Check runs the same recovery when it finds a
// journal, so a marker is never left naming the file compaction replaced.
func (l *Log) Compact(ctx context.Context, opts CompactOptions) (_ CompactStats, err error) {
	stats := CompactStats{Archive: l.sd.WorldArchive()}
	lk, err := lockFile(ctx, l.sd.WorldLock(), true)
	if err != nil {
		return stats, err
	}
	defer lk.Close()
	if err := l.recoverCompaction(); err != nil {
		return stats, err
	}
	src, fi, err := l.open()
	if err != nil {
		return stats, err
	}
	defer src.Close()

	// Pass 1: every agent's final state, from the log itself, and the
	// entries its fold skips.
	st := l.freshState(fi)
	skipped := map[int64]bool{}
	if err := st.catchUp(ctx, src, nil, func(r *Record, _ *TransitionError) { skipped[r.Offset] = true }); err != nil {
		return stats, err
	}
	keepAgentLine := func(off int64, e Entry) bool {
		if skipped[off] {
			return false
		}
		a := st.byID[e.ID]
		if a == nil || a.Status != StatusVerified {
			return true
		}
		return e.Kind == KindAgent && (off == a.Off || off == a.StartOff)
	}
	for _, a := range st.byID {
		if a.Status == StatusVerified {
			stats.Verified++
		}
	}

	markers, err := l.markersOf(src, fi)
	if err != nil {
		return stats, err
	}
	// The notes of earlier compactions that resume in this file: a
	// follower still on an older file goes on where they move to.
	oldDev, oldIno := fileID(fi)
	notes := readCompactedNotes(l.sd.WorldCompacted())
	resumes := &markedPlaces{}
	var carried []compacted
	for _, n := range notes {
		if n.Dev == oldDev && n.Ino == oldIno && n.FromIno != 0 {
			carried = append(carried, n)
			resumes.old = append(resumes.old, n.Pos)
		}
	}
	resumes.moved = slices.Clone(resumes.old)
	resumes.done = make([]bool, len(resumes.old))

	// Pass 2: copy what is kept, archive what is not.
	tmp, err := os.CreateTemp(l.dir, "."+FileName+".compact*")
	if err != nil {
		return stats, fmt.Errorf("compact world log: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename there is nothing to remove
	defer tmp.Close()
	arch, err := os.OpenFile(stats.Archive, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return stats, fmt.Errorf("open world log archive: %w", err)
	}
	defer arch.Close()
	jrn, err := l.beginCompaction(arch, fi)
	if err != nil {
		return stats, err
	}
	l.step("journaled")
	defer func() {
		if err != nil {
			// Stopped before the log was replaced: undo the archive now.
			err = errors.Join(err, l.recoverCompaction())
		}
	}()
	kept, dropped := bufio.NewWriterSize(tmp, 1<<20), bufio.NewWriterSize(arch, 1<<20)
	var newPos Position
	lr := newLineReader(src, Position{})
	for i := 0; ; i++ {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return stats, err
			}
		}
		line, start, tooLong, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return stats, fmt.Errorf("read world log: %w", err)
		}
		markers.move(start, newPos)
		resumes.move(start, newPos)
		stats.Lines++
		if len(line) == 0 {
			continue
		}
		keep := true
		if !tooLong {
			if e, perr := ParseLine(line); perr == nil {
				if e.Kind == KindAgent || st.byID[e.ID] != nil {
					keep = keepAgentLine(start.Offset, e)
				} else if !opts.EventsBefore.IsZero() && e.Time.Before(opts.EventsBefore) {
					keep = false
				}
			}
		}
		w := dropped
		size := lr.pos.Offset - start.Offset // the line whole, with its newline
		if keep {
			w = kept
			stats.Kept++
			newPos.Offset += size
			newPos.Line++
		} else {
			stats.Dropped++
		}
		if tooLong {
			// The reader cut it to MaxLineBytes; the file has it whole.
			if _, err := io.Copy(w, io.NewSectionReader(src, start.Offset, size)); err != nil {
				return stats, fmt.Errorf("read world log: %w", err)
			}
			continue
		}
		w.Write(line)
		w.WriteByte('\n')
	}
	markers.move(lr.pos, newPos)
	resumes.move(lr.pos, newPos)
	// A line being written when compaction began cannot be: appends wait
	// on the lock. A torn piece without newline is kept as it is.
	if rest := fi.Size() - lr.pos.Offset; rest > 0 {
		buf := make([]byte, rest)
		if _, err := src.ReadAt(buf, lr.pos.Offset); err != nil {
			return stats, fmt.Errorf("read world log: %w", err)
		}
		kept.Write(buf)
	}

	if err := dropped.Flush(); err != nil {
		return stats, fmt.Errorf("write world log archive: %w", err)
	}
	if err := arch.Sync(); err != nil {
		return stats, fmt.Errorf("sync world log archive: %w", err)
	}
	l.step("archived")
	if err := kept.Flush(); err != nil {
		return stats, fmt.Errorf("write compacted world log: %w", err)
	}
	if err := tmp.Chmod(fi.Mode().Perm()); err != nil {
		return stats, fmt.Errorf("write compacted world log: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return stats, fmt.Errorf("sync compacted world log: %w", err)
	}
	nfi, err := tmp.Stat()
	if err != nil {
		return stats, fmt.Errorf("stat compacted world log: %w", err)
	}
	// The journal learns the new file and where the read markers go in it
	// before the rename: a compaction killed after the rename leaves the
	// markers naming the old file, and recovery moves them from here.
	dev, ino := fileID(nfi)
	if err := l.journalMarkers(jrn, dev, ino, markers); err != nil {
		return stats, err
	}
	l.step("marked")
	// Followers learn where appends resume from this note: it is written
	// before the rename, so one that sees the new file finds it. (Should
	// the rename never happen, it names a file that never was the log.)
	// The notes of earlier compactions whose file this was now resume in
	// the new one too: a follower still on an older file, two compactions
	// behind, goes on where the lines appended after it are.
	next := []compacted{{FromDev: oldDev, FromIno: oldIno, Dev: dev, Ino: ino, Pos: newPos}}
	for i, n := range carried {
		if len(next) == maxCompactedNotes {
			break
		}
		n.Dev, n.Ino, n.Pos = dev, ino, resumes.moved[i]
		next = append(next, n)
	}
	note, _ := json.Marshal(next)
	if err := atomicfile.Write(l.sd.WorldCompacted(), note, 0o644); err != nil {
		return stats, err
	}
	if err := os.Rename(tmp.Name(), l.path); err != nil {
		return stats, fmt.Errorf("replace world log: %w", err)
	}
	syncDir(l.dir) // the rename must be durable before the journal goes
	l.step("replaced")

	// The views of the old file: the index goes (rebuilt on next use) and
	// markers move, before the journal, which holds their moves, goes.
	l.mu.Lock()
	l.cache.release()
	l.cache = nil
	l.mu.Unlock()
	if err := os.Remove(l.sd.WorldIndex()); err != nil && !os.IsNotExist(err) {
		return stats, fmt.Errorf("remove world log index: %w", err)
	}
	if err := markers.save(tmp, dev, ino, l.Now().UTC()); err != nil {
		return stats, err
	}
	l.step("moved")
	if err := os.Remove(l.sd.WorldCompacting()); err != nil {
		return stats, fmt.Errorf("end world log compaction: %w", err)
	}
	return stats, nil
}

// markedPlaces are the read markers of one log file, to be moved to the
// same lines in its compacted copy.
type markedPlaces struct {
	paths []string
	old   []Position
	moved []Position
	done  []bool
}

// markerMove is a read marker's place in the log being compacted and in
// its compacted copy, as the journal records it.
type markerMove struct {
	Name     string
	Old, New Position
}

// markersOf reads the markers that are valid for f.
func (l *Log) markersOf(f *os.File, fi os.FileInfo) (*markedPlaces, error) {
	mp := &markedPlaces{}
	dir := l.sd.Markers()
	names, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("read markers: %w", err)
	}
	for _, de := range names {
		if CheckMarkerName(de.Name()) != nil {
			continue // temp files of an atomic write
		}
		path := filepath.Join(dir, de.Name())
		m, err := readMarker(path)
		if err != nil || m == nil || !m.valid(f, fi) {
			continue // a stale marker stays stale
		}
		mp.paths = append(mp.paths, path)
		mp.old = append(mp.old, m.Pos)
	}
	mp.moved = slices.Clone(mp.old)
	mp.done = make([]bool, len(mp.old))
	return mp, nil
}

// move records that the line at old in the old file goes to now in the new
// one (or, when dropped, that the next kept line does).
func (mp *markedPlaces) move(old, now Position) {
	for i, p := range mp.old {
		if !mp.done[i] && p.Offset <= old.Offset {
			mp.moved[i], mp.done[i] = now, true
		}
	}
}

// save writes the moved markers for the new file (dev, ino).
func (mp *markedPlaces) save(f *os.File, dev, ino uint64, now time.Time) error {
	for i, path := range mp.paths {
		if err := moveMarker(f, path, mp.moved[i], dev, ino, now); err != nil {
			return err
		}
	}
	return nil
}

// moveMarker writes the marker at path to pos in f, the file (dev, ino).
func moveMarker(f *os.File, path string, pos Position, dev, ino uint64, now time.Time) error {
	tail, err := tailAt(f, pos.Offset)
	if err != nil {
		return fmt.Errorf("move marker: %w", err)
	}
	return writeMarker(path, &marker{Pos: pos, Tail: tail, Dev: dev, Ino: ino, Updated: now})
}

// step marks a step of a compaction for crash tests.
func (l *Log) step(name string) {
	if l.crashAt != nil {
		l.crashAt(name)
	}
}

// journalName is the compaction journal: present only while a compaction
// is between growing the archive and replacing the log.
const journalName = statedir.WorldCompacting

// journal is what a compaction records before the archive grows, and,
// before the log is replaced, the new file and the markers' moves.
type journal struct {
	Dev, Ino uint64 // the log being compacted
	Archive  int64  // the archive's length before
	// NewDev and NewIno name the compacted file (0: not written yet);
	// Markers are the read markers valid for the old file and their
	// places in the new one.
	NewDev, NewIno uint64       `json:",omitempty"`
	Markers        []markerMove `json:",omitempty"`
}

// beginCompaction cuts a torn last line of the archive, then records the
// journal, durably, before any line is appended to it.
func (l *Log) beginCompaction(arch *os.File, fi os.FileInfo) (*journal, error) {
	size, err := cutTornTail(arch)
	if err != nil {
		return nil, fmt.Errorf("repair world log archive: %w", err)
	}
	dev, ino := fileID(fi)
	j := &journal{Dev: dev, Ino: ino, Archive: size}
	return j, l.writeJournal(j)
}

// journalMarkers adds the compacted file (newDev, newIno) and the markers'
// moves to the journal, durably, before the log is replaced.
func (l *Log) journalMarkers(j *journal, newDev, newIno uint64, mp *markedPlaces) error {
	j.NewDev, j.NewIno, j.Markers = newDev, newIno, nil
	for i, path := range mp.paths {
		j.Markers = append(j.Markers, markerMove{Name: filepath.Base(path), Old: mp.old[i], New: mp.moved[i]})
	}
	return l.writeJournal(j)
}

func (l *Log) writeJournal(j *journal) error {
	b, _ := json.Marshal(j)
	if err := atomicfile.Write(l.sd.WorldCompacting(), b, 0o644); err != nil {
		return fmt.Errorf("journal world log compaction: %w", err)
	}
	return nil
}

// recoverCompaction finishes what a killed compaction left: with a journal
// whose log was not replaced, the archive goes back to its length before;
// with one whose log was replaced, the read markers still at their places
// in the old file move to theirs in the new one; then the journal and
// stale temp files go. It runs under the exclusive lock, so no other
// compaction is under way.
func (l *Log) recoverCompaction() error {
	jpath := l.sd.WorldCompacting()
	b, err := os.ReadFile(jpath)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("read world log compaction journal: %w", err)
	default:
		var j journal
		if err := json.Unmarshal(b, &j); err != nil {
			// atomicfile writes it whole: a file that does not parse is
			// not ours to guess about.
			return fmt.Errorf("world log compaction journal %s is not valid (%v): move it aside, check %s for duplicated lines, and compact again", jpath, err, archiveName)
		}
		replaced, compacted := true, false
		switch fi, err := os.Stat(l.path); {
		case err == nil:
			dev, ino := fileID(fi)
			replaced = dev != j.Dev || ino != j.Ino
			compacted = j.NewIno != 0 && dev == j.NewDev && ino == j.NewIno
		case !errors.Is(err, os.ErrNotExist):
			return fmt.Errorf("check the world log against the compaction journal: %w", err)
		}
		if !replaced {
			if err := truncateFile(l.sd.WorldArchive(), j.Archive); err != nil {
				return fmt.Errorf("undo an interrupted compaction's archive: %w", err)
			}
		}
		if compacted {
			if err := l.recoverMarkers(j); err != nil {
				return fmt.Errorf("move read markers after an interrupted compaction: %w", err)
			}
		}
		if err := os.Remove(jpath); err != nil {
			return fmt.Errorf("end world log compaction: %w", err)
		}
	}
	stale, _ := filepath.Glob(l.sd.WorldCompactTemps())
	for _, p := range stale {
		os.Remove(p)
	}
	return nil
}

// recoverMarkers moves the markers of j that still mark their old place
// in the compacted log (a marker reset or moved since is left alone).
func (l *Log) recoverMarkers(j journal) error {
	if len(j.Markers) == 0 {
		return nil
	}
	f, err := os.Open(l.path)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, mv := range j.Markers {
		if CheckMarkerName(mv.Name) != nil {
			continue
		}
		path := l.markerPath(mv.Name)
		m, err := readMarker(path)
		if err != nil {
			return err
		}
		if m == nil || m.Dev != j.Dev || m.Ino != j.Ino || m.Pos != mv.Old {
			continue
		}
		if err := moveMarker(f, path, mv.New, j.NewDev, j.NewIno, l.Now().UTC()); err != nil {
			return err
		}
	}
	return nil
}

// truncateFile cuts path to size bytes and syncs it; a missing file, or one
// already no longer than size, is left alone.
func truncateFile(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() <= size {
		return nil
	}
	if err := f.Truncate(size); err != nil {
		return err
	}
	return f.Sync()
}

// cutTornTail cuts f after its last newline, so that the next append
// starts a line, and returns its length.
func cutTornTail(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	end := size
	buf := make([]byte, 4096)
	for end > 0 {
		n := min(int64(len(buf)), end)
		if _, err := f.ReadAt(buf[:n], end-n); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			end = end - n + int64(i) + 1
			break
		}
		end -= n
	}
	if end == size {
		return size, nil
	}
	if err := f.Truncate(end); err != nil {
		return 0, err
	}
	return end, f.Sync()
}

// syncDir fsyncs a directory, best effort: a rename in it is then durable.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
