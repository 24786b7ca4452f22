//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// ABI returns the kernel's Landlock ABI version, 0 without Landlock.
func ABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil || v < 1 {
		return 0
	}
	return v
}

// scopeABI is the first Landlock ABI that scopes abstract Unix sockets
// and signals to the confinement (Restrict).
const scopeABI = 6

// unixABI is the first Landlock ABI that fences connecting to a Unix
// socket by its path (LANDLOCK_ACCESS_FS_RESOLVE_UNIX).
const unixABI = 9

// ScopesAbstractSockets reports whether a confined process is kept off
// the abstract Unix sockets of processes outside its confinement (a
// PostgreSQL that listens on '@name', say): Landlock ABI 6 and later.
func ScopesAbstractSockets() bool { return ABI() >= scopeABI }

// FencesPathSockets reports whether a confined process is kept off the
// Unix sockets, named by a path, that a process outside its confinement
// listens on outside the directories it may write (a tmux server's
// /tmp/tmux-UID/default, docker.sock, a PostgreSQL's socket directory):
// Landlock ABI 9 and later. Before it, any such server of this user
// is a way out of the sandbox.
func FencesPathSockets() bool { return ABI() >= unixABI }

// Restrict confines this process and its future children to spec: read
// everywhere, write only spec's directories and the device files;
// (Landlock ABI 6 and later) send no signal to and reach no abstract
// Unix socket of a process outside the confinement: an agent cannot stop
// cra, its reviewer or another task's run; and (ABI 9 and later)
// connect to no Unix socket by its path outside spec's directories, where
// a server of this user would run its commands unconfined.
func Restrict(spec Spec) error {
	if ABI() == 0 {
		return ErrUnavailable
	}
	rules := []landlock.Rule{
		landlock.RODirs("/"),
		landlock.RWDirs(spec.writable()...).WithResolveUnix(),
		landlock.RWFiles(devices...).IgnoreIfMissing(),
		landlock.RWDirs(deviceDirs...).IgnoreIfMissing(),
	}
	// The newest rights this package knows, down to what the kernel
	// has: every ABI restricts writes, the later ones more of them
	// (truncate, ioctl on devices), the scopes and connecting to a
	// Unix socket by its path. The network is restricted apart
	// (restrictNet), by port.
	cfg := landlock.Config{HandledAccessFS: landlock.V9.HandledAccessFS, Scoped: landlock.V9.Scoped}
	if err := cfg.BestEffort().Restrict(rules...); err != nil {
		return fmt.Errorf("confine the process: %w", err)
	}
	return nil
}

// Launch is the launcher's body: it confines this process to spec, with
// the capabilities of root cut down (dropCapabilities), then replaces it
// with argv (looked up on PATH), environment unchanged. It
// returns only when one of them fails.
func Launch(spec Spec, argv []string) error {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return fmt.Errorf("sandbox-exec: %w", err)
	}
	if err := dropCapabilities(); err != nil {
		return fmt.Errorf("confine the process: %w", err)
	}
	if err := Restrict(spec); err != nil {
		return err
	}
	if spec.netFD != 0 {
		if err := restrictNet(spec.netFD); err != nil {
			return err
		}
	}
	return syscall.Exec(path, argv, os.Environ())
}
