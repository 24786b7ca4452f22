package world

import (
	"errors"
	"fmt"
	"os"
)

// HasMarker reports whether the read marker name exists: a reader that
// must not replay the whole log on its first Check (a notifier) sets it
// at the end first.
func (l *Log) HasMarker(name string) (bool, error) {
	if err := CheckMarkerName(name); err != nil {
		return false, err
	}
	_, err := os.Stat(l.markerPath(name))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("read marker: %w", err)
}
