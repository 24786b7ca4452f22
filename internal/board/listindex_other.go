//go:build !linux

package board

import (
	"io/fs"
	"os"
	"time"
)

// statOf is the stat the list index keeps of a task file; without a
// portable ctime and inode, the mtime stands for the ctime.
func statOf(fi os.FileInfo) fileStat {
	return fileStat{Size: fi.Size(), MtimeNS: fi.ModTime().UnixNano(), CtimeNS: fi.ModTime().UnixNano()}
}

// folderStatter stats the files of one folder by their paths.
type folderStatter struct{}

func openFolderStatter(string) folderStatter { return folderStatter{} }

func (folderStatter) close() {}

// lstat returns the stat of d's file and its mtime; ok is false when it
// cannot be statted or is no longer a regular file.
func (folderStatter) lstat(d fs.DirEntry) (fileStat, time.Time, bool) {
	info, err := d.Info()
	if err != nil || !info.Mode().IsRegular() {
		return fileStat{}, time.Time{}, false
	}
	return statOf(info), info.ModTime(), true
}
