//go:build !linux

package board

import "os"

// statOf is the stat the list index keeps of a task file; without a
// portable ctime and inode, the mtime stands for the ctime.
func statOf(fi os.FileInfo) fileStat {
	return fileStat{Size: fi.Size(), MtimeNS: fi.ModTime().UnixNano(), CtimeNS: fi.ModTime().UnixNano()}
}
