//go:build !unix

package index

import (
	"context"
	"os"
)

// Without flock(2) the index is not locked: SQLite's own locking still
// keeps two writers from corrupting it, at the cost of a "database is
// locked" error for the second.
func tryLock(*os.File) (bool, error) { return true, nil }

func waitLock(context.Context, *os.File) error { return nil }
