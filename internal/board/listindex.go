package board

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/cra-dev/cra/internal/atomicfile"
)

// indexVersion is the list index's format; an index of another version
// is rebuilt from the files. 5: results.commit kept and the files' bytes
// not (two changes each called 4 for a while on main).
const indexVersion = 5

// racySlack is how long after a file last changed (its ctime) a reading
// of it is trusted: a file written again within the same tick of the
// file system's clock, at the same size, keeps its times, so a reading
// taken that close to a change is read again by the next listing (git's
// racily clean entries).
const racySlack = time.Second

// listIndex is a folder's list index, tasks/.index.<folder>: each
// readable task file's id, stat (size, mtime, ctime, inode) and parsed
// task, so that List decodes one file and stats each task instead
// of parsing every YAML file: 10,000 files took 2 s. The files stay the
// truth, and the index is only a cache of what they said: an entry whose
// file's stat differs, or that was taken within racySlack of the file's
// last change, is read from the file again; a file without an entry is
// read; an entry without a file is dropped; a missing or damaged index,
// or one of another version, is rebuilt from the files. Writes (Put,
// Move, Delete) leave the index alone, so adding a task costs the same on
// any board; the next listing reads what they changed and writes the
// index back. Each folder has its own, so that listing one folder (the
// processor's pending tasks) costs what that folder holds, whatever the
// finished folders hold.
type listIndex struct {
	Version int
	Entries map[string]*indexEntry // by task id
}

type indexEntry struct {
	Stat fileStat
	// ReadNS is when the file was read (Unix ns), before its stat was
	// taken.
	ReadNS int64
	Task   *Task
}

// fileStat is what tells a changed file from an unchanged one.
type fileStat struct {
	Size, MtimeNS, CtimeNS int64
	Ino                    uint64
}

// trusted says whether e still holds what its file says, the file
// having stat st now.
func (e *indexEntry) trusted(st fileStat) bool {
	return e != nil && e.Task != nil && e.Stat == st && st.CtimeNS+int64(racySlack) < e.ReadNS
}

// indexPath is the list index of folder f, tasks/.index.<folder>
// (statedir.Dir.TaskIndex).
func (s *FileStore) indexPath(f Folder) string { return s.sd.TaskIndex(string(f)) }

func newListIndex() *listIndex {
	return &listIndex{Version: indexVersion, Entries: map[string]*indexEntry{}}
}

// loadIndex reads folder f's list index; a missing, damaged or other
// version's index reads as empty, so that the listing rebuilds it from
// the files.
func (s *FileStore) loadIndex(f Folder) *listIndex {
	data, err := os.ReadFile(s.indexPath(f))
	if err != nil {
		return newListIndex()
	}
	ix, err := decodeIndex(data)
	if err != nil {
		return newListIndex()
	}
	dir := s.sd.TaskFolder(string(f))
	for id, e := range ix.Entries {
		if e.Task.ID != id {
			return newListIndex()
		}
		e.Task.srcDir = dir
	}
	return ix
}

// saveIndex writes folder f's list index, atomically: a reader sees the
// old one or the new one. Two listings writing at once leave either's,
// each checked against the files on the next read.
func (s *FileStore) saveIndex(f Folder, ix *listIndex) error {
	if err := atomicfile.Write(s.indexPath(f), encodeIndex(ix), 0o644); err != nil {
		return fmt.Errorf("write task list index: %w", err)
	}
	return nil
}

// RebuildIndex replaces the list indexes with ones read from every task
// file ('cra task rebuild' calls it through Board.Rebuild).
func (s *FileStore) RebuildIndex() error {
	for _, f := range Folders() {
		if err := os.Remove(s.indexPath(f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("rebuild task list index: %w", err)
		}
		ix := newListIndex()
		if _, _, err := s.listIndexed(context.Background(), ix, f); err != nil {
			return err
		}
		if err := s.saveIndex(f, ix); err != nil {
			return err
		}
	}
	return nil
}

// entryKind is what a folder's entry named like a task file is.
type entryKind uint8

const (
	// entryMissing could not be statted: gone since the folder was read.
	entryMissing entryKind = iota
	entryRegular
	// entrySymlink is listed with an error: cra never reads through one.
	entrySymlink
	// entryOther (a folder, a device) is no task file and not listed.
	entryOther
)

// lstatPath is folderStatter.lstat by the file's path.
func lstatPath(dir, name string) (fileStat, entryKind) {
	fi, err := os.Lstat(filepath.Join(dir, name))
	switch {
	case err != nil:
		return fileStat{}, entryMissing
	case fi.Mode().IsRegular():
		return statOf(fi), entryRegular
	case fi.Mode()&fs.ModeSymlink != 0:
		return fileStat{}, entrySymlink
	}
	return fileStat{}, entryOther
}
