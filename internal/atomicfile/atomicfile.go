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
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: make the rename durable
		d.Close()
	}
	return nil
}
