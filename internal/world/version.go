package world

import (
	"os"
	"time"
)

// Version identifies the log's bytes as they stand: an append grows the
// file, a compaction replaces it and a rewrite in place stamps it, so two
// equal versions taken at different times mean nothing was written in
// between. A reader that asks the same question every few seconds (an idle
// daemon's Level 1 pass) keeps its answer while the version holds.
type Version struct {
	dev, ino    uint64
	size, mtime int64
}

// versionSlack is how recent a change may be for Version to be trusted: a
// rewrite of the same size within a file system's timestamp granularity
// would keep the mtime.
const versionSlack = time.Second

// Version returns the log file's version; ok is false when the file cannot
// be statted or changed within versionSlack of now, and the caller then
// reads the log.
func (l *Log) Version() (v Version, ok bool) {
	fi, err := os.Stat(l.path)
	if err != nil {
		return Version{}, false
	}
	// The file system's clock, not the log's stamping clock (Now), which
	// a test or a replay may set anywhere.
	if time.Since(fi.ModTime()) < versionSlack {
		return Version{}, false
	}
	v.dev, v.ino = fileID(fi)
	v.size, v.mtime = fi.Size(), fi.ModTime().UnixNano()
	return v, true
}
