// Package flock takes advisory flock(2) locks on files, the one mechanism
// by which cra's processes take turns: appends to the world log, changes
// to the board, writers of the index, one daemon per repository. Each call
// opens its own descriptor, so goroutines of one process exclude each
// other exactly as processes do; closing the returned file releases the
// lock, and so does the death of its process, so a kill -9 leaves nothing
// to clean up.
package flock

import "errors"

// ErrUnsupported is returned where the system has no flock(2).
var ErrUnsupported = errors.New("this system has no flock(2), which cra needs to take turns between processes")
