// Package sandbox confines the processes that run code an agent or a
// model wrote: an agent profile's command, and the [validation] commands
// that decide a verdict (DESIGN.md, "Trust"). A confined process reads
// everywhere and keeps the network, but writes only the directories its
// Spec names (its task's working copy, its temp directory, the caches its
// profile declares) and a few device files: never .clean_room/, another
// task's working copy, the main repository's .git or docs/knowledge/.
//
// On Linux the confinement is Landlock (landlock-lsm/go-landlock), which
// a process can only apply to itself and its future children. So cra
// confines a command by running itself as a small launcher ('cra
// sandbox-exec'), which restricts itself and then execs the command
// (Wrap builds that command line; Launch is the launcher's body). The
// restriction survives the exec and is inherited by every child, and
// cannot be lifted.
//
// Where Landlock is missing (macOS, kernels before 5.13 or built
// without it), Mode "required" refuses to run, naming the setting, and
// "off" runs unconfined with a warning.
package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Mode is [board] sandbox: whether runs must be confined.
type Mode string

const (
	// Required refuses to run a command that cannot be confined.
	Required Mode = "required"
	// Off runs commands unconfined, with a warning each time.
	Off Mode = "off"
)

// ParseMode reads a [board] sandbox value; "" is Required.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case "", Required:
		return Required, nil
	case Off:
		return Off, nil
	}
	return "", fmt.Errorf("sandbox %q: use \"required\" (the default: runs are confined, or refused where they cannot be) or \"off\" (unconfined, with a warning on every run)", s)
}

// ErrUnavailable is a kernel without Landlock.
var ErrUnavailable = errors.New("this system cannot confine a process: Landlock is missing (Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK and lsm=landlock)")

// Fences are the ways out beyond files that the sandbox closes: the
// loopback ports Guard records, and a server's Unix socket, abstract or
// named by a path, where the kernel lets it.
type Fences struct {
	// Ports: a confined process cannot connect to a guarded loopback
	// port (Landlock ABI 4; before it, Wrap refuses to run while a port
	// is guarded).
	Ports bool
	// AbstractSockets: a confined process cannot connect to an abstract
	// socket ('@name') of a process outside (ScopesAbstractSockets).
	AbstractSockets bool
	// PathSockets: nor to a socket named by a path outside the
	// directories it may write (FencesPathSockets).
	PathSockets bool
}

// KernelFences are the fences this kernel's Landlock puts up for a
// confined process. Without Landlock no process runs confined: mode
// Required refuses to run it, so every way counts as fenced, and only
// mode Off (which the caller knows, not the kernel) fences nothing.
func KernelFences() Fences {
	if ABI() == 0 {
		return Fences{Ports: true, AbstractSockets: true, PathSockets: true}
	}
	return Fences{Ports: true, AbstractSockets: ScopesAbstractSockets(), PathSockets: FencesPathSockets()}
}

// Spec is what a confined process may write.
type Spec struct {
	// Write are the directories it may write, with everything below them.
	Write []string

	// netFD is the launcher's descriptor of the ruleset that keeps its
	// connections off the guarded ports (--net), which Wrap hands it
	// when a daemon listens; 0 is none.
	netFD int
}

// devices are the device files any process expects to write.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"}

// deviceDirs are the device directories a process writes: terminals and
// POSIX shared memory (Python's multiprocessing).
var deviceDirs = []string{"/dev/pts", "/dev/shm"}

// Command is the launcher's command name: 'cra sandbox-exec'.
const Command = "sandbox-exec"

// Wrap rewrites cmd to run through the launcher exe (the cra binary)
// under spec: exe sandbox-exec --write DIR … [--net FD] -- PATH ARGS….
// The command keeps its directory, environment and files. A directory to
// write that does not exist is an error: a typo would otherwise confine
// the command away from its own working copy. While any daemon of this
// user listens (Guarded), the launcher is handed a ruleset keeping the
// command off its port, as an extra file (FD); where the kernel cannot
// do that, Wrap refuses.
func Wrap(cmd *exec.Cmd, exe string, spec Spec) error {
	if exe == "" {
		return errors.New("confine a command: the path of cra itself is unknown")
	}
	args := []string{exe, Command}
	for _, dir := range spec.Write {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return fmt.Errorf("confine a command: %w", err)
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return fmt.Errorf("confine a command: %s is not a directory it may write: make it first", abs)
		}
		if guard, cache, err := guardDirs(); err == nil && within(guard, abs) && within(abs, cache) {
			return fmt.Errorf("confine a command: it may not write %s: that holds %s, the record of the ports cra's daemons listen on, which keeps agents off their API: declare a narrower directory (e.g. ~/.cache/go-build)", abs, guard)
		}
		args = append(args, "--write", abs)
	}
	path := cmd.Path
	if cmd.Err != nil {
		return cmd.Err
	}
	ports, err := Guarded()
	if err != nil {
		return fmt.Errorf("confine a command: %w", err)
	}
	if len(ports) > 0 {
		f, err := netRuleset(ports)
		if err != nil {
			return fmt.Errorf("confine a command: %w", err)
		}
		args = append(args, "--net", strconv.Itoa(3+len(cmd.ExtraFiles)))
		cmd.ExtraFiles = append(cmd.ExtraFiles, f)
	}
	args = append(args, "--", path)
	args = append(args, cmd.Args[1:]...)
	cmd.Path, cmd.Args = exe, args
	return nil
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// usage is the launcher's command line.
const usage = "usage: cra sandbox-exec [--write DIR]… [--net FD] -- COMMAND [ARG]…"

// Parse reads the launcher's arguments: --write DIR … [--net FD] --
// COMMAND ARGS….
func Parse(args []string) (Spec, []string, error) {
	var spec Spec
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			if i+1 == len(args) {
				return spec, nil, errors.New("sandbox-exec: no command after --")
			}
			return spec, args[i+1:], nil
		case a == "--write" && i+1 < len(args):
			spec.Write = append(spec.Write, args[i+1])
			i++
		case strings.HasPrefix(a, "--write="):
			spec.Write = append(spec.Write, strings.TrimPrefix(a, "--write="))
		case a == "--net" && i+1 < len(args):
			fd, err := strconv.Atoi(args[i+1])
			if err != nil || fd < 3 {
				return spec, nil, fmt.Errorf("sandbox-exec: --net %q: want the number of an open file, 3 or more: %s", args[i+1], usage)
			}
			spec.netFD = fd
			i++
		default:
			return spec, nil, fmt.Errorf("sandbox-exec: unexpected %q: %s", a, usage)
		}
	}
	return spec, nil, errors.New("sandbox-exec: no command: " + usage)
}

// writable returns spec's directories made absolute, without duplicates.
func (s Spec) writable() []string {
	var out []string
	for _, d := range s.Write {
		if abs, err := filepath.Abs(d); err == nil && !slices.Contains(out, abs) {
			out = append(out, abs)
		}
	}
	return out
}

// Main is the launcher for a binary that is not cra (a test binary that
// runs agents): when args are [exe sandbox-exec …] it confines itself
// and execs the command, and never returns; otherwise it returns at
// once. Call it first in TestMain.
func Main(args []string) {
	if len(args) < 2 || args[1] != Command {
		return
	}
	spec, argv, err := Parse(args[2:])
	if err == nil {
		err = Launch(spec, argv)
	}
	fmt.Fprintf(os.Stderr, "cra %s: %v\n", Command, err)
	os.Exit(126)
}
