package board

import (
	"os"
	"syscall"

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
type folderStatter struct {
	dir  *os.File
	path string
}

func openFolderStatter(path string) folderStatter {
	dir, err := os.Open(path)
	if err != nil {
		return folderStatter{path: path} // each file is then statted by its path
	}
	return folderStatter{dir, path}
}

func (f folderStatter) close() {
	if f.dir != nil {
		f.dir.Close()
	}
}

// lstat returns the stat of the folder's file name and what it is. It
// is safe for concurrent use.
func (f folderStatter) lstat(name string) (fileStat, entryKind) {
	if f.dir == nil {
		return lstatPath(f.path, name)
	}
	var s unix.Stat_t
	if err := unix.Fstatat(int(f.dir.Fd()), name, &s, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fileStat{}, entryMissing
	}
	switch s.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return fileStat{Size: s.Size, MtimeNS: s.Mtim.Nano(), CtimeNS: s.Ctim.Nano(), Ino: s.Ino}, entryRegular
	case unix.S_IFLNK:
		return fileStat{}, entrySymlink
	}
	return fileStat{}, entryOther
}
