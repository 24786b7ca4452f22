// Package atomicfile writes a file whole or not at all (DESIGN.md
// principle 5, "nothing is lost"): the data goes to a temp file in the
// target's directory, is fsynced and renamed over the target, and the
// directory is fsynced, best effort, so that the rename outlives a crash.
// A reader sees the old content or the new, never part of it: config.toml,
// plans, the world log's state and the files an edit changes are written
// this way.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Write writes data to a temp file in path's directory, fsyncs it
// and renames it over path, so a reader sees the old or the new content,
// never a partial one. It creates path's directory when missing, gives the
// file perm, and leaves no temp file behind when it fails.
func Write(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	cleanup := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return cleanup(err)
	}
	if err := f.Chmod(perm); err != nil {
		return cleanup(err)
	}
	if err := f.Sync(); err != nil {
		return cleanup(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	SyncDir(dir) // best effort: make the rename durable
	return nil
}

// WriteNew writes data to path, a new file in a directory that is not in
// place yet (a temporary one, renamed into place once complete), and
// fsyncs it, so that the rename that publishes the directory never
// publishes an empty or partial file after a crash.
func WriteNew(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// SyncDir fsyncs the directory dir, best effort, so that the entries
// created or renamed in it outlive a crash.
func SyncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
