package board

import (
	"io/fs"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// statOf is the stat the list index keeps of a task file: with the
// inode and ctime, a file replaced by another of the same size and mtime
// (a backup restored with its times) is still told apart.
func statOf(fi os.FileInfo) fileStat {
	st := fileStat{Size: fi.Size(), MtimeNS: fi.ModTime().UnixNano(), CtimeNS: fi.ModTime().UnixNano()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.CtimeNS = sys.Ctim.Nano()
		st.Ino = sys.Ino
	}
	return st
}

// folderStatter stats the files of one folder relative to the folder's
// descriptor: a listing stats every file, and resolving each one's whole
// path again cost as much as the rest of a listing from the index.
type folderStatter struct{ dir *os.File }

func openFolderStatter(path string) folderStatter {
	dir, err := os.Open(path)
	if err != nil {
		return folderStatter{} // each file is then statted by its path
	}
	return folderStatter{dir}
}

func (f folderStatter) close() {
	if f.dir != nil {
		f.dir.Close()
	}
}

// lstat returns the stat of d's file, in the folder, and its mtime;
// ok is false when it cannot be statted or is no longer a regular file.
func (f folderStatter) lstat(d fs.DirEntry) (st fileStat, mtime time.Time, ok bool) {
	if f.dir == nil {
		info, err := d.Info()
		if err != nil || !info.Mode().IsRegular() {
			return fileStat{}, time.Time{}, false
		}
		return statOf(info), info.ModTime(), true
	}
	var s unix.Stat_t
	if err := unix.Fstatat(int(f.dir.Fd()), d.Name(), &s, unix.AT_SYMLINK_NOFOLLOW); err != nil || s.Mode&unix.S_IFMT != unix.S_IFREG {
		return fileStat{}, time.Time{}, false
	}
	st = fileStat{Size: s.Size, MtimeNS: s.Mtim.Nano(), CtimeNS: s.Ctim.Nano(), Ino: s.Ino}
	return st, time.Unix(s.Mtim.Unix()), true
}
