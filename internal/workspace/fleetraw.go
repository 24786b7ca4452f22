package workspace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/flock"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
)

// Merged is what one raw database added to a FleetCorpus.
type Merged = corpus.Merged

// ErrNotRaw is a --raw file that is not a raw database of this cra.
var ErrNotRaw = corpus.ErrNotRaw

// FleetCorpus is the training loop's view of a fleet's raw databases
// (issue 34 item 8): a temporary copy of this host's raw.sqlite into
// which the other hosts' files were merged (corpus.Merge). It is read
// only; what the loop records (plans, datasets, its model calls) goes to
// this host's corpus. Close removes the copy. Without other files it is
// this host's corpus itself.
type FleetCorpus struct {
	*corpus.Corpus
	// Merged says, per file, what was copied and what was there already.
	Merged []*Merged
	db     interface{ Close() error }
	dir    string
	lock   *os.File // statedir's FleetRawLock in dir, held until Close
}

// Close closes the merged copy and removes it.
func (f *FleetCorpus) Close() error {
	if f.db == nil {
		return nil // this host's corpus: the workspace closes it
	}
	err := f.db.Close()
	err = errors.Join(err, os.RemoveAll(f.dir))
	if f.lock != nil {
		err = errors.Join(err, f.lock.Close())
	}
	return err
}

// fleetRawGrace is how old a merged copy whose lock is free must be to
// be a dead process's: the grace covers the instant between its
// directory's making and its lock's taking.
const fleetRawGrace = time.Minute

// removeDeadFleetRaw removes the merged raw copies of processes that
// died (train-plan or curate-data killed before its Close): each whose
// lock no process holds, made more than fleetRawGrace before now. A copy
// is as large as the raw databases; one left by every killed run would
// fill the disk. What cannot be removed is said on logger (nothing
// depends on it).
func removeDeadFleetRaw(sd statedir.Dir, now time.Time, logger *slog.Logger) {
	dirs, _ := filepath.Glob(sd.FleetRawCopies())
	for _, dir := range dirs {
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() || now.Sub(fi.ModTime()) < fleetRawGrace {
			continue
		}
		lock, ok, err := flock.TryLock(statedir.At(dir).FleetRawLock())
		if err != nil || !ok {
			continue // in use, or no flock(2) here to tell
		}
		err = os.RemoveAll(dir)
		lock.Close()
		if err != nil && logger != nil {
			logger.Warn("a dead process's merged raw database is left", "dir", dir, "err", err)
		}
	}
}

// FleetCorpus merges the raw databases at paths (other hosts'
// .clean_room/raw.sqlite, copied here) with this host's into a temporary
// copy under the state directory. This host's file is read, never
// written; a file that is not a raw database of this cra is an error
// naming it, and nothing is left behind. The copies that processes
// killed before their Close left are removed first (removeDeadFleetRaw).
func (w *Workspace) FleetCorpus(ctx context.Context, paths []string) (*FleetCorpus, error) {
	c, err := w.Corpus(ctx)
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return &FleetCorpus{Corpus: c}, nil
	}
	removeDeadFleetRaw(statedir.At(w.StateDir), time.Now(), w.logger)
	dir, err := os.MkdirTemp(w.StateDir, statedir.FleetRawPrefix)
	if err != nil {
		return nil, fmt.Errorf("make the merged raw database's directory: %w", err)
	}
	sd := statedir.At(dir)
	lock, ok, err := flock.TryLock(sd.FleetRawLock())
	if err == nil && !ok {
		err = errors.New("another process holds it")
	}
	if err != nil && !errors.Is(err, flock.ErrUnsupported) {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("lock the merged raw database's directory: %w", err)
	}
	fail := func(err error) (*FleetCorpus, error) {
		os.RemoveAll(dir)
		if lock != nil {
			lock.Close()
		}
		return nil, err
	}
	if err := c.Snapshot(ctx, sd.Raw()); err != nil {
		return fail(err)
	}
	db, err := store.NewFactory(sd).Open(ctx, store.Raw, "", false)
	if err != nil {
		return fail(err)
	}
	f := &FleetCorpus{Corpus: corpus.New(db), db: db, dir: dir, lock: lock}
	for _, p := range paths {
		m, err := f.Merge(ctx, p)
		if err != nil {
			db.Close()
			return fail(err)
		}
		f.Merged = append(f.Merged, m)
	}
	return f, nil
}
