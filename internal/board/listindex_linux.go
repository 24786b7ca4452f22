package board

import (
	"os"
	"syscall"
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
