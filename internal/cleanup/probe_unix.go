//go:build unix && !solaris && !aix

package cleanup

import (
	"errors"
	"os"
	"syscall"
)

// probeHeld reports whether an exclusive flock(2) is held on the file at
// path, by trying a shared one without waiting: shared probes never
// exclude one another, so two pollers cannot make each other see a pass
// that is not there. A missing file is a lock nobody holds.
func probeHeld(path string) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		return true, nil
	}
	return false, err
}
