package index

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/cra-dev/cra/internal/store"
)

// DefaultWatchAge is how long a Watch trusts its last full comparison.
const DefaultWatchAge = 30 * time.Second

// Watch answers Changes for a reader that asks again and again, such as
// an MCP server checking the index before each call. A full comparison
// runs git and reads every indexed file's row (on Django about a third
// of a CPU-second; on a copy, whose every mtime differs from the
// index's, it hashes every file); after one, the Watch keeps its answer
// (the index current, or the files that differ) and the stat of every
// file it listed, of the directories holding them and of the index's
// files, and the next call that finds none of them moved answers from
// memory (a few thousand lstat calls). A file
// edited, added beside others, deleted or renamed moves one of them. A
// new file in a directory that held no listed file (empty, or ignored
// files only) moves nothing kept, so a full comparison runs at least
// every MaxAge all the same.
type Watch struct {
	b    *Builder
	root string // the repository whose index it is
	dir  string // whose files are compared: root, or a copy of it
	// MaxAge bounds the trust in the last full comparison; 0 means
	// DefaultWatchAge.
	MaxAge time.Duration
	// now is time.Now; tests set it.
	now func() time.Time

	mu    sync.Mutex
	at    time.Time  // of the last full comparison
	last  *Changeset // its answer
	stats map[string]fileStamp
	full  int // full comparisons run, for tests
}

// fileStamp is what a stat says of a file or directory.
type fileStamp struct {
	size  int64
	mtime int64
	dir   bool
}

// Watch returns a Watch of the files of dir (absolute) against the
// builder's index of the repository at root: dir is root, or a copy of
// it (ChangesIn).
func (b *Builder) Watch(root, dir string) *Watch {
	return &Watch{b: b, root: root, dir: dir, now: time.Now}
}

// Changes is Builder.Changes, answered from the kept stats when nothing
// they cover moved (see Watch).
func (w *Watch) Changes(ctx context.Context) (*Changeset, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	age := w.MaxAge
	if age <= 0 {
		age = DefaultWatchAge
	}
	if w.stats != nil && w.now().Sub(w.at) < age && w.unmoved() {
		return w.last.clone(), nil
	}
	w.stats, w.last = nil, nil
	w.full++
	at, start := w.now(), time.Now().UnixNano()
	d, cands, err := w.b.changes(ctx, w.root, w.dir)
	if err != nil {
		return d, err
	}
	// A stale answer holds too while nothing moved: a caller that
	// re-indexes writes the index, which moves its files' stamps.
	w.stats, w.at, w.last = w.stamps(cands, start), at, d.clone()
	return d, nil
}

// clone is a copy of d that shares no list with it.
func (d *Changeset) clone() *Changeset {
	return &Changeset{Added: slices.Clone(d.Added), Changed: slices.Clone(d.Changed), Deleted: slices.Clone(d.Deleted), Reextract: d.Reextract}
}

// moved is a stamp no stat returns: kept for a path that changed while
// the comparison ran, it makes the next call compare in full.
var moved = fileStamp{mtime: -1}

// stamps stats the listed files (as the listing saw them), every
// directory from theirs up to the root, and the index's database files.
// A directory or database file that changed since start, when the
// comparison began, may hold a change the comparison missed: it is kept
// as moved.
func (w *Watch) stamps(cands []candidate, start int64) map[string]fileStamp {
	out := make(map[string]fileStamp, len(cands)+len(cands)/8+3)
	stamp := func(p string) {
		st := stampOf(p)
		if st.mtime >= start {
			st = moved
		}
		out[p] = st
	}
	for _, c := range cands {
		out[c.abs] = fileStamp{size: c.size, mtime: c.mtime}
		for dir := filepath.Dir(c.abs); len(dir) > len(w.dir); dir = filepath.Dir(dir) {
			if _, ok := out[dir]; ok {
				break
			}
			stamp(dir)
		}
	}
	stamp(w.dir)
	db, _ := w.b.factory.Path(store.Curated, "")
	stamp(db)
	// An empty write-ahead log holds no write: the comparison's own
	// read-only open makes one (SQLite creates it), and a writer's
	// frames make it grow, or reach the database when it closes.
	if st := stampOf(db + "-wal"); st.size == 0 {
		out[db+"-wal"] = fileStamp{}
	} else {
		stamp(db + "-wal")
	}
	return out
}

// unmoved reports whether every kept stat is unchanged.
func (w *Watch) unmoved() bool {
	db, _ := w.b.factory.Path(store.Curated, "")
	for p, old := range w.stats {
		st := stampOf(p)
		if p == db+"-wal" && !st.dir && st.size == 0 {
			st = fileStamp{} // an empty write-ahead log, as stamps keeps it
		}
		if st != old {
			return false
		}
	}
	return true
}

// stampOf stats p; a missing file is the zero stamp.
func stampOf(p string) fileStamp {
	st, err := os.Lstat(p)
	if err != nil {
		return fileStamp{}
	}
	if st.IsDir() {
		return fileStamp{mtime: st.ModTime().UnixNano(), dir: true}
	}
	return fileStamp{size: st.Size(), mtime: st.ModTime().UnixNano()}
}
