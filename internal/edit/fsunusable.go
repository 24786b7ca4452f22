//go:build !plan9

package edit

import (
	"errors"
	"syscall"
)

// fsUnusable reports whether err says the file system takes no writes at
// all (full, over quota, read-only, failing), whatever the path: no other
// path for a block would mend it.
func fsUnusable(err error) bool {
	for _, e := range []error{syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EIO} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
