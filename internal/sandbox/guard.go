package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// A cra daemon's API changes the board: a confined process that reached
// it could move its own task to completed-finalized, close it or merge
// it, as a person would (DESIGN.md, "Trust"). So every daemon of this
// user records its TCP port here while it listens (Guard), and Wrap keeps
// every confined process from connecting to any port recorded, whichever
// repository's daemon it is.
//
// Beside its own port, a fleet worker guards its PostgreSQL's when the
// database listens on this host's loopback: with trust authentication
// there, an agent reaching the port could write its own verdict into the
// world log.
//
// The record is a directory of one file per port and process that guards
// it, named <port>.<pid> and holding the pid (a record of an older cra is
// named by the port alone), under the user's cache directory
// ($XDG_CACHE_HOME/cra/guarded-ports, else ~/.cache/…). It is outside
// every working copy, so a confined process can read it but not change
// it (Landlock lets it chmod a record, which Guarded then guards
// unread). A daemon killed with -9 leaves its file behind; a file whose pid is
// gone is removed the next time it is read.

// guardDir is where the guarded ports are recorded; the environment is
// the calling process's (the daemon's, and the runner's that confines).
func guardDir() (string, error) {
	dir, _, err := guardDirs()
	return dir, err
}

// guardDirs is guardDir and the user's cache directory it is in.
func guardDirs() (dir, cache string, err error) {
	cache, err = os.UserCacheDir()
	if err != nil {
		return "", "", fmt.Errorf("find the user's cache directory to record the daemon's port in: %w (set $HOME or $XDG_CACHE_HOME)", err)
	}
	return filepath.Join(cache, "cra", "guarded-ports"), cache, nil
}

// Guard records that no confined process may connect to TCP port, a
// daemon's listener or its database's, until release is called (the
// daemon stops). Each process's record is its own, so that two daemons
// guarding one database's port do not drop each other's.
func Guard(port int) (release func(), err error) {
	if port <= 0 || port > 65535 {
		return nil, fmt.Errorf("guard port %d: not a TCP port", port)
	}
	dir, err := guardDir()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("record the daemon's port for the sandbox: %w", err)
	}
	pid := strconv.Itoa(os.Getpid())
	path := filepath.Join(dir, strconv.Itoa(port)+"."+pid)
	if err := os.WriteFile(path, []byte(pid+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("record the daemon's port for the sandbox: %w", err)
	}
	var once sync.Once
	return func() { once.Do(func() { os.Remove(path) }) }, nil
}

// Guarded returns the ports recorded by daemons that still run, sorted.
// A record is kept while its pid lives even if another process has that
// pid now: guarding one port too many costs nothing.
func Guarded() ([]int, error) {
	dir, err := guardDir()
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the daemons' ports in %s: %w", dir, err)
	}
	var ports []int
	for _, e := range entries {
		name, _, _ := strings.Cut(e.Name(), ".")
		port, err := strconv.Atoi(name)
		if err != nil || port <= 0 || port > 65535 {
			continue // not ours
		}
		path := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue // its daemon let go since the listing
		}
		if err != nil {
			// Landlock does not confine chmod: a confined process may
			// have made the record unreadable (chmod 000). Guard it.
			ports = append(ports, port)
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid <= 0 {
			// Half written: guard it all the same.
			ports = append(ports, port)
			continue
		}
		if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
			os.Remove(path) // a daemon killed with -9
			continue
		}
		ports = append(ports, port)
	}
	slices.Sort(ports)
	return slices.Compact(ports), nil
}
