//go:build !linux

package board

import "os"

// statOf is the stat the list index keeps of a task file; without a
// portable ctime and inode, the mtime stands for the ctime.
func statOf(fi os.FileInfo) fileStat {
	return fileStat{Size: fi.Size(), MtimeNS: fi.ModTime().UnixNano(), CtimeNS: fi.ModTime().UnixNano()}
}

// folderStatter stats the files of one folder by their paths.
type folderStatter struct{ path string }

func openFolderStatter(path string) folderStatter { return folderStatter{path} }

func (folderStatter) close() {}

// lstat returns the stat of the folder's file name and what it is.
func (f folderStatter) lstat(name string) (fileStat, entryKind) {
	return lstatPath(f.path, name)
}
