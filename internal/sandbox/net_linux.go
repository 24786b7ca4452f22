//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// netABI is the first Landlock ABI that can confine connect(2) by TCP
// port (Linux 6.7).
const netABI = 4

// Landlock allows, it cannot deny: a ruleset that keeps connect(2) off a
// few ports allows every other port, one rule each. Adding 65,535 rules
// takes a quarter of a second, so the runner builds the ruleset once per
// set of ports and hands the launcher its file descriptor, and the
// launcher's restriction with it costs some 70 ms (BenchmarkLaunch).
// Only the latest set is kept: a ruleset holds some megabytes of the
// kernel's memory, and daemons come and go. One replaced is closed by
// its finalizer once no command waiting to start holds it.
var netRulesets struct {
	sync.Mutex
	key  string
	file *os.File
}

// netRuleset returns a Landlock ruleset that handles TCP connect only and
// allows every port but ports, to hand to launchers.
func netRuleset(ports []int) (*os.File, error) {
	key := fmt.Sprint(ports)
	netRulesets.Lock()
	defer netRulesets.Unlock()
	if netRulesets.file != nil && netRulesets.key == key {
		return netRulesets.file, nil
	}
	if abi := ABI(); abi < netABI {
		return nil, fmt.Errorf("this kernel's Landlock (ABI %d) cannot keep a confined process off cra serve's port %s: a daemon's API on loopback could then be asked to verify an agent's own task. Use Linux 6.7 or later (ABI %d), or stop cra serve while agents run", abi, joinPorts(ports), netABI)
	}
	if err := seccompSupported(); err != nil {
		return nil, err
	}
	fd, err := ll.LandlockCreateRuleset(&ll.RulesetAttr{HandledAccessNet: ll.AccessNetConnectTCP}, 0)
	if err != nil {
		return nil, fmt.Errorf("make the network ruleset: %w", err)
	}
	attr := &ll.NetPortAttr{AllowedAccess: ll.AccessNetConnectTCP}
	for port := 1; port <= 65535; port++ {
		if _, denied := slices.BinarySearch(ports, port); denied {
			continue
		}
		attr.Port = uint64(port)
		if err := ll.LandlockAddNetPortRule(fd, attr, 0); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("make the network ruleset: port %d: %w", port, err)
		}
	}
	f := os.NewFile(uintptr(fd), "landlock-net-ruleset")
	netRulesets.key, netRulesets.file = key, f
	return f, nil
}

func joinPorts(ports []int) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ", ")
}

// restrictNet applies the network ruleset the launcher was handed and
// closes it (the command must not inherit it), then keeps the process
// from the sockets Landlock's TCP rules do not see (seccomp). Both bind
// the calling thread only, which is locked from here on and is the one
// that execs: the other threads end with the exec. (Restricting every
// thread would merge the 65,535 rules into a domain per thread.)
func restrictNet(fd int) error {
	runtime.LockOSThread() // never unlocked: this thread execs
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("confine the process's network: no_new_privs: %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, 0); err != nil {
		return fmt.Errorf("confine the process's network: %w", err)
	}
	unix.Close(fd)
	return installSeccomp()
}
