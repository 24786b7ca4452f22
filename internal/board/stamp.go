package board

import (
	"errors"
	iofs "io/fs"
	"os"
	"time"
)

// Stamp tells a board unchanged since an earlier look without reading
// its tasks: the stat of each folder and of the world log. Every write
// of the store renames a file into a folder, or out of it (Put writes a
// temp file and renames it over the task's, Move renames, Delete
// removes), which changes the folder's mtime and ctime; every lifecycle
// change appends to the log, which changes its size. So equal stamps
// mean that no task was added, moved, rewritten or removed through the
// board, and that the log holds the same lines: what a loop that reads
// the whole board on every pass (the supervisors' triggers, Level 1's
// folder repair) may skip while the board sits idle. A file rewritten in
// place by hand, without a rename, leaves its folder's stat alone: such
// a loop sees it at the board's next change.
type Stamp struct {
	folders [6]fileStat
	log     fileStat
}

// Stamp returns the board's stamp now, and false when it cannot tell: a
// store or a log that is not files, a folder or the log that cannot be
// statted, or a folder changed within racySlack of now (Board.Now),
// whose stat a second change in the same tick of the file system's clock
// would leave as it is (a stamp taken then would hide that change).
func (b *Board) Stamp() (Stamp, bool) {
	fs, ok := b.Store.(folderStamper)
	if !ok {
		return Stamp{}, false
	}
	var log any = b.Log
	lp, ok := log.(interface{ Path() string })
	if !ok {
		return Stamp{}, false
	}
	now := time.Now
	if b.Now != nil {
		now = b.Now
	}
	var st Stamp
	if st.folders, ok = fs.folderStamp(now().UnixNano()); !ok {
		return Stamp{}, false
	}
	fi, err := os.Stat(lp.Path())
	if err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return Stamp{}, false
	}
	if err == nil {
		st.log = statOf(fi)
	}
	return st, true
}

// folderStamper is a store whose folders have a Stamp: FileStore, and
// what embeds one.
type folderStamper interface {
	folderStamp(now int64) ([6]fileStat, bool)
}

// folderStamp returns the stat of each folder (zero for one not made
// yet, which changes when it is), and false when one cannot be statted
// or changed within racySlack of now (Unix ns).
func (s *FileStore) folderStamp(now int64) ([6]fileStat, bool) {
	var out [6]fileStat
	for i, f := range Folders() {
		fi, err := os.Stat(s.sd.TaskFolder(string(f)))
		if errors.Is(err, iofs.ErrNotExist) {
			continue
		}
		if err != nil {
			return out, false
		}
		out[i] = statOf(fi)
		if max(out[i].CtimeNS, out[i].MtimeNS)+int64(racySlack) >= now {
			return out, false
		}
	}
	return out, true
}
