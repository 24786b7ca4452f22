//go:build unix

package server

import (
	"fmt"
	"os"
	"syscall"
)

// fileID names the file fi describes by its device and inode: a
// compaction renames a new file over world.log, so the name stays and
// the identity changes.
func fileID(fi os.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%x-%x", uint64(st.Dev), uint64(st.Ino))
}
