package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/cra-dev/cra/internal/corpus"
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
}

// Close closes the merged copy and removes it.
func (f *FleetCorpus) Close() error {
	if f.db == nil {
		return nil // this host's corpus: the workspace closes it
	}
	err := f.db.Close()
	return errors.Join(err, os.RemoveAll(f.dir))
}

// FleetCorpus merges the raw databases at paths (other hosts'
// .clean_room/raw.sqlite, copied here) with this host's into a temporary
// copy under the state directory. This host's file is read, never
// written; a file that is not a raw database of this cra is an error
// naming it, and nothing is left behind.
func (w *Workspace) FleetCorpus(ctx context.Context, paths []string) (*FleetCorpus, error) {
	c, err := w.Corpus(ctx)
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return &FleetCorpus{Corpus: c}, nil
	}
	dir, err := os.MkdirTemp(w.StateDir, statedir.FleetRawPrefix)
	if err != nil {
		return nil, fmt.Errorf("make the merged raw database's directory: %w", err)
	}
	fail := func(err error) (*FleetCorpus, error) {
		os.RemoveAll(dir)
		return nil, err
	}
	sd := statedir.At(dir)
	if err := c.Snapshot(ctx, sd.Raw()); err != nil {
		return fail(err)
	}
	db, err := store.NewFactory(sd).Open(ctx, store.Raw, "", false)
	if err != nil {
		return fail(err)
	}
	f := &FleetCorpus{Corpus: corpus.New(db), db: db, dir: dir}
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
