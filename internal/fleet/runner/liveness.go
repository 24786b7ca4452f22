package runner

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/cra-dev/cra/internal/agentcli"
	"github.com/cra-dev/cra/internal/procgroup"
)

// DefaultAliveEvery is how often a run's liveness is sampled.
const DefaultAliveEvery = 5 * time.Second

// maxAliveWalk bounds the files of a working copy one sample stats: a
// huge checkout costs a bounded walk, and files past the bound go unseen.
const maxAliveWalk = 20000

// liveness watches a run for the signs that it is alive beyond its log
// (issue 29 item 4): output bytes, the events its output reader parsed,
// files written in its working copy, the CPU time of its process group.
// Whenever one moved since the last sample, it sets the time of the
// run's alive file (statedir.Run.Alive) to now, which Level 2 reads: a
// quiet agent that thinks, computes or writes files is not stale.
type liveness struct {
	path   string // the alive file
	pgid   int
	work   string // the working copy
	out    *capture
	reader *agentcli.Reader // nil for a profile without one

	bytes, events, cpu int64
	files              time.Time
}

// newLiveness makes the alive file, stamped now: the run just started.
func newLiveness(path string, pgid int, work string, out *capture, reader *agentcli.Reader) (*liveness, error) {
	l := &liveness{path: path, pgid: pgid, work: work, out: out, reader: reader}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		return nil, err
	}
	l.moved() // the baseline
	return l, nil
}

// watch samples every interval until ctx ends.
func (l *liveness) watch(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if l.moved() {
				now := time.Now()
				os.Chtimes(l.path, now, now)
			}
		}
	}
}

// moved samples the signs and reports whether any moved since the last
// sample.
func (l *liveness) moved() bool {
	moved := false
	if n := l.out.Total(); n != l.bytes {
		l.bytes, moved = n, true
	}
	if l.reader != nil {
		if n := l.reader.Events(); n != l.events {
			l.events, moved = n, true
		}
	}
	if n, ok := procgroup.CPU(l.pgid); ok && n != l.cpu {
		l.cpu, moved = n, true
	}
	if m := newestFile(l.work); m.After(l.files) {
		l.files, moved = m, true
	}
	return moved
}

// newestFile is the latest modification time of the files and
// directories under root, .git left out, within maxAliveWalk entries.
func newestFile(root string) time.Time {
	var newest time.Time
	n := 0
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if n++; n > maxAliveWalk {
			return filepath.SkipAll
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if fi, err := d.Info(); err == nil && fi.ModTime().After(newest) {
			newest = fi.ModTime()
		}
		return nil
	})
	return newest
}
