package index

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/store"
)

// Changeset is how a repository's files differ from its index: what the next
// incremental run would add, read again and delete. Paths are
// slash-separated, relative to the repository root, sorted.
type Changeset struct {
	Added   []string `json:"added,omitempty"`
	Changed []string `json:"changed,omitempty"`
	Deleted []string `json:"deleted,omitempty"`
	// Reextract says the index was written by another extractor
	// (ExtractorVersion): the next run reads every file again, whatever
	// the lists say.
	Reextract bool `json:"reextract,omitempty"`
}

// Count is the number of files added, changed or deleted.
func (d *Changeset) Count() int { return len(d.Added) + len(d.Changed) + len(d.Deleted) }

// Stale reports whether the index no longer matches the files.
func (d *Changeset) Stale() bool { return d.Count() > 0 || d.Reextract }

// Paths lists the files of every kind, added first, then changed, then
// deleted.
func (d *Changeset) Paths() []string {
	out := make([]string, 0, d.Count())
	out = append(out, d.Added...)
	out = append(out, d.Changed...)
	return append(out, d.Deleted...)
}

// Changes compares the repository at root (absolute) with its index
// without writing anything, so a reader that may not write the state
// directory (an agent's sandboxed run) can still say what the index
// lacks. It lists the files as a run does (Builder.Run), passes the
// indexed ones through the same stat gate, and hashes those the gate
// lets through: a file touched but not changed is not stale. A new file
// the run would skip on reading (binary, unreadable) is not counted as
// added.
func (b *Builder) Changes(ctx context.Context, root string) (*Changeset, error) {
	d, _, err := b.changes(ctx, root, root)
	return d, err
}

// ChangesIn is Changes for the files of dir, a copy of the repository at
// root (a board run's working copy, a clone): what differs from root's
// index there.
func (b *Builder) ChangesIn(ctx context.Context, root, dir string) (*Changeset, error) {
	d, _, err := b.changes(ctx, root, dir)
	return d, err
}

// changes compares the files of dir with root's index, and returns the
// files it listed.
func (b *Builder) changes(ctx context.Context, root, dir string) (*Changeset, []candidate, error) {
	db, err := b.factory.Open(ctx, store.Curated, "", true)
	if err != nil {
		return nil, nil, err
	}
	defer db.Close()
	var repoID, lastRun int64
	var extractor int
	err = db.QueryRowContext(ctx, `SELECT r.id, COALESCE(s.last_run_ns, 0), COALESCE(s.extractor, 0)
		FROM repos r LEFT JOIN repo_state s ON s.repo_id = r.id WHERE r.path = ?`, root).Scan(&repoID, &lastRun, &extractor)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, fmt.Errorf("%s is not in its index: run 'cra index %s'", root, root)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read index state: %w", err)
	}
	old, err := loadExisting(ctx, db, repoID, false)
	if err != nil {
		return nil, nil, err
	}
	isGit, err := gitx.IsRepo(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	cands, _, _, err := scan(ctx, dir, isGit)
	if err != nil {
		return nil, nil, fmt.Errorf("scan %s: %w", dir, err)
	}
	d := &Changeset{Reextract: extractor != ExtractorVersion}
	present := make(map[string]bool, len(cands))
	for _, c := range cands {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		present[c.rel] = true
		e, ok := old[c.rel]
		switch {
		case !ok:
			if readable(c.abs) {
				d.Added = append(d.Added, c.rel)
			}
		case statSame(e, c, lastRun):
		case e.lang != c.lang:
			d.Changed = append(d.Changed, c.rel)
		default:
			if h, err := hashFile(c.abs); err != nil || h != e.hash {
				d.Changed = append(d.Changed, c.rel)
			}
		}
	}
	for p := range old {
		if !present[p] {
			d.Deleted = append(d.Deleted, p)
		}
	}
	sort.Strings(d.Deleted)
	return d, cands, nil
}

// readable reports whether a run would index the file: it reads, and
// its head holds no NUL byte (processOne's binary check).
func readable(abs string) bool {
	f, err := os.Open(abs)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 8000)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false
	}
	return bytes.IndexByte(head[:n], 0) < 0
}

// hashFile is a file's content hash as the index stores it.
func hashFile(abs string) (string, error) {
	data, err := os.ReadFile(abs)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}
