//go:build !unix || solaris || aix

package cleanup

import "github.com/cra-dev/cra/internal/flock"

// probeHeld is flock.TryLock where the system has no flock(2): it fails
// with flock.ErrUnsupported, and Running reports false.
func probeHeld(path string) (bool, error) {
	f, ok, err := flock.TryLock(path)
	if err != nil {
		return false, err
	}
	if ok {
		f.Close()
	}
	return !ok, nil
}
