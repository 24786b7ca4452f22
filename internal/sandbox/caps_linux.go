//go:build linux

package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/psx"
)

// keptCaps are the capabilities an agent confined as root keeps: those a
// build or a package manager run as root may use on its own files
// (Docker's default set, without CAP_MKNOD, CAP_NET_RAW, CAP_SETUID,
// CAP_SETGID and CAP_SETFCAP). Every other one goes, for each reaches past the
// confinement: CAP_SETUID lets root become postgres, whom Debian's
// default pg_hba.conf ('local all postgres peer') lets in as a superuser
// to write the fleet's tables, or any user a service trusts by its
// peer's uid (Landlock does not confine connecting to a Unix socket's
// path); CAP_SYS_ADMIN and CAP_PERFMON let a Landlock-confined process
// read another's /proc/PID/environ (the daemon's secrets) on the kernels
// tested here, CAP_NET_RAW builds TCP past the port rules, CAP_MKNOD
// makes a disk's device node, CAP_DAC_READ_SEARCH opens files by handle
// past the path rules, CAP_SETFCAP gives a file capabilities another
// user's exec then gains, CAP_SYS_MODULE loads kernel code,
// CAP_SYS_PTRACE traces.
var keptCaps = map[int]bool{
	unix.CAP_CHOWN:            true,
	unix.CAP_DAC_OVERRIDE:     true,
	unix.CAP_FOWNER:           true,
	unix.CAP_FSETID:           true,
	unix.CAP_KILL:             true, // where Landlock's signal scope holds against it (kept)
	unix.CAP_SETPCAP:          true,
	unix.CAP_NET_BIND_SERVICE: true,
	unix.CAP_SYS_CHROOT:       true,
	unix.CAP_AUDIT_WRITE:      true,
}

// kept reports whether an agent confined as root keeps capability c on a
// kernel of Landlock ABI abi: keptCaps, less CAP_KILL where no signal
// scope (ABI 6) keeps it off the processes of other users (PostgreSQL's
// server, a reviewer run as another user).
func kept(c, abi int) bool {
	if c == unix.CAP_KILL && abi < scopeABI {
		return false
	}
	return keptCaps[c]
}

// dropCapabilities takes from this process, on every thread, what an
// agent it becomes must not hold: the ambient capabilities always, and,
// when it runs as root (whose exec is given its bounding set), every
// capability outside keptCaps from the bounding and inheritable sets. A
// process of another user gains none at exec: Restrict sets
// no_new_privs, so neither a setuid binary nor file capabilities raise
// it. As root, a drop the kernel refuses is an error: the agent would
// keep what reaches past its confinement.
func dropCapabilities() error {
	// Ambient capabilities (Linux 4.3) pass exec for any user.
	if err := llsys.AllThreadsPrctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && err != unix.EINVAL {
		return fmt.Errorf("drop the ambient capabilities: %w", err)
	}
	if os.Geteuid() != 0 {
		return nil
	}
	bounding, err := capSet("CapBnd")
	if err != nil {
		return err
	}
	abi := ABI()
	for c := 0; c <= lastCap(); c++ {
		if bounding&(1<<c) == 0 || kept(c, abi) {
			continue
		}
		if err := llsys.AllThreadsPrctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return fmt.Errorf("drop capability %d from the bounding set as root: %w (run cra as a normal user, or give it CAP_SETPCAP)", c, err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read this process's capabilities: %w", err)
	}
	changed := false
	for i := range data {
		for b := 0; b < 32; b++ {
			if c := i*32 + b; data[i].Inheritable&(1<<b) != 0 && !kept(c, abi) {
				data[i].Inheritable &^= 1 << b
				changed = true
			}
		}
	}
	if changed {
		if _, _, e := psx.Syscall3(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
			return fmt.Errorf("drop inheritable capabilities as root: %w", e)
		}
	}
	return nil
}

// capSet reads one capability set of this process (CapBnd, CapInh,
// CapEff, ...) from /proc/self/status.
func capSet(name string) (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("read this process's capabilities: %w", err)
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte(name+":")); ok {
			n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 16, 64)
			if err != nil {
				return 0, fmt.Errorf("read this process's %s %q: %w", name, v, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("read this process's capabilities: no %s in /proc/self/status", name)
}

// lastCap is the kernel's highest capability number.
func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 63
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 || n > 63 {
		return 63
	}
	return n
}
