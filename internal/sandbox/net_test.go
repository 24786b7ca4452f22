//go:build linux

package sandbox

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// probeEnv makes the test binary, run as a confined command, try every
// way to a port it was kept off (netProbe) instead of running tests.
const probeEnv = "CRA_SANDBOX_NET_PROBE"

// netProbe tries to reach the guarded port and the open one, and to
// signal its parent, and prints one line per way: "NAME: ok" or
// "NAME: <errno>".
func netProbe() {
	guarded, _ := strconv.Atoi(os.Getenv(probeEnv + "_GUARDED"))
	open, _ := strconv.Atoi(os.Getenv(probeEnv + "_OPEN"))
	lo := &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}
	report := func(name string, err error) {
		if err == nil {
			fmt.Printf("%s: ok\n", name)
			return
		}
		fmt.Printf("%s: %v\n", name, err)
	}
	connect := func(domain, proto int, sa unix.Sockaddr) error {
		fd, err := unix.Socket(domain, unix.SOCK_STREAM, proto)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Connect(fd, sa)
	}
	fds, _ := os.ReadDir("/proc/self/fd")
	leaked := 0
	for _, fd := range fds {
		if link, _ := os.Readlink("/proc/self/fd/" + fd.Name()); strings.Contains(link, "landlock") {
			leaked++
		}
	}
	fmt.Printf("ruleset descriptors: %d\n", leaked)
	at := func(port int) *unix.SockaddrInet4 { a := *lo; a.Port = port; return &a }
	report("tcp guarded", connect(unix.AF_INET, 0, at(guarded)))
	report("tcp6 guarded", connect(unix.AF_INET6, 0, &unix.SockaddrInet6{Port: guarded, Addr: [16]byte{15: 1}}))
	report("tcp open", connect(unix.AF_INET, 0, at(open)))
	report("mptcp guarded", connect(unix.AF_INET, unix.IPPROTO_MPTCP, at(guarded)))
	report("smc", func() error {
		fd, err := unix.Socket(unix.AF_SMC, unix.SOCK_STREAM, 0)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}())
	report("fastopen guarded", func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Sendto(fd, []byte("GET / HTTP/1.0\r\n\r\n"), unix.MSG_FASTOPEN, at(guarded))
	}())
	report("sendmsg fastopen guarded", func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		_, err = unix.SendmsgN(fd, []byte("GET / HTTP/1.0\r\n\r\n"), nil, at(guarded), unix.MSG_FASTOPEN)
		return err
	}())
	report("io_uring", func() error {
		var params [120]byte
		fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params)), 0)
		if e != 0 {
			return e
		}
		unix.Close(int(fd))
		return nil
	}())
	report("signal parent", unix.Kill(os.Getppid(), 0))
	if name := os.Getenv(probeEnv + "_ABSTRACT"); name != "" {
		report("abstract unix", connect(unix.AF_UNIX, 0, &unix.SockaddrUnix{Name: "@" + name}))
	}
	for _, where := range []string{"in", "out"} {
		if path := os.Getenv(probeEnv + "_PATH_" + where); path != "" {
			report("path unix "+where, connect(unix.AF_UNIX, 0, &unix.SockaddrUnix{Name: path}))
		}
	}
	os.Exit(0)
}

// confine wraps cmd as the launcher would (this test binary standing for
// cra), writable only in a temp directory of the test's.
func confine(t *testing.T, cmd *exec.Cmd) { confineTo(t, cmd, t.TempDir()) }

// confineTo wraps cmd as confine does, writable only in dir.
func confineTo(t *testing.T, cmd *exec.Cmd, dir string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := Wrap(cmd, exe, Spec{Write: []string{dir}}); err != nil {
		t.Fatal(err)
	}
}

// runProbe runs the test binary as netProbe with env added, confined
// (Wrap) or not, and returns what it printed.
func runProbe(t *testing.T, confined bool, env ...string) string {
	t.Helper()
	dir := ""
	if confined {
		dir = t.TempDir()
	}
	return probeIn(t, dir, env...)
}

// probeIn runs netProbe as runProbe does, confined to writing dir, or
// unconfined where dir is "".
func probeIn(t *testing.T, dir string, env ...string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(append(os.Environ(), probeEnv+"=1"), env...)
	if dir != "" {
		confineTo(t, cmd, dir)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("probe: %v\n%s", err, out)
	}
	return string(out)
}

// serveUnix listens on the Unix socket addr ('@name' is abstract) until
// the test ends, closing every connection it accepts.
func serveUnix(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	acceptAll(t, ln)
}

// acceptAll closes every connection ln accepts, until the test ends and
// closes ln.
func acceptAll(t *testing.T, ln net.Listener) {
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
}

// TestNetGuard: while a daemon's port is guarded, a confined process
// cannot reach it by connect(2), over IPv6, Multipath TCP, TCP Fast
// Open or io_uring, nor signal cra; it still reaches any other port, and
// the ruleset's descriptor does not leak into it. Unguarded, the same
// port is reachable.
func TestNetGuard(t *testing.T) {
	requireLandlock(t)
	if ABI() < netABI {
		t.Fatalf("this kernel's Landlock is ABI %d: keeping agents off cra serve's port needs ABI %d (Linux 6.7 or later)", ABI(), netABI)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	guardedLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	openLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	for _, ln := range []net.Listener{guardedLn, openLn} {
		acceptAll(t, ln)
	}
	guarded, open := guardedLn.Addr().(*net.TCPAddr).Port, openLn.Addr().(*net.TCPAddr).Port
	probe := func() string {
		t.Helper()
		return runProbe(t, true, fmt.Sprintf("%s_GUARDED=%d", probeEnv, guarded), fmt.Sprintf("%s_OPEN=%d", probeEnv, open))
	}

	// Unguarded: the port is reachable, so the refusals below are the
	// guard's.
	got := probe()
	for _, want := range []string{"tcp guarded: ok", "tcp open: ok", "ruleset descriptors: 0"} {
		if !strings.Contains(got, want) {
			t.Errorf("unguarded: got\n%s\nwant %q", got, want)
		}
	}

	release, err := Guard(guarded)
	if err != nil {
		t.Fatal(err)
	}
	ports, err := Guarded()
	if err != nil || len(ports) != 1 || ports[0] != guarded {
		t.Fatalf("Guarded() = %v, %v; want [%d]", ports, err, guarded)
	}
	got = probe()
	want := []string{
		"tcp guarded: permission denied",
		"tcp6 guarded: permission denied",
		"tcp open: ok",
		"mptcp guarded: protocol not supported",
		"smc: address family not supported by protocol",
		"fastopen guarded: operation not supported",
		"sendmsg fastopen guarded: operation not supported",
		"io_uring: function not implemented",
		"ruleset descriptors: 0",
	}
	if ABI() >= 6 {
		want = append(want, "signal parent: operation not permitted")
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("guarded: got\n%s\nwant %q", got, w)
		}
	}

	release()
	if ports, err := Guarded(); err != nil || len(ports) != 0 {
		t.Errorf("after release: Guarded() = %v, %v; want none", ports, err)
	}
}

// TestAbstractSocketOutOfReach: where the kernel scopes abstract Unix
// sockets (ScopesAbstractSockets), a confined process cannot connect to
// one that a process outside listens on (a PostgreSQL on '@name' would
// be one), while the same probe unconfined can; where it does not, the
// confined probe reaches it too, which is why cra warns there.
func TestAbstractSocketOutOfReach(t *testing.T) {
	requireLandlock(t)
	name := fmt.Sprintf("cra-sandbox-test-%d", os.Getpid())
	serveUnix(t, "@"+name)
	probe := func(confined bool) string {
		t.Helper()
		return runProbe(t, confined, probeEnv+"_ABSTRACT="+name)
	}
	if got := probe(false); !strings.Contains(got, "abstract unix: ok") {
		t.Fatalf("unconfined: got\n%s\nwant the abstract socket reached", got)
	}
	want := "abstract unix: operation not permitted"
	if !ScopesAbstractSockets() {
		want = "abstract unix: ok"
	}
	if got := probe(true); !strings.Contains(got, want) {
		t.Errorf("confined, Landlock ABI %d (scopes abstract sockets: %v): got\n%s\nwant %q", ABI(), ScopesAbstractSockets(), got, want)
	}
}

// TestPathSocketOutOfReach: where the kernel fences Unix sockets named
// by a path (FencesPathSockets), a confined process cannot connect to
// one that a process outside listens on beyond the directories it may
// write (a tmux server's, docker.sock), while it still reaches one in
// them; unconfined, both are reached. Where the kernel does not, the
// confined probe reaches both, as the README says.
func TestPathSocketOutOfReach(t *testing.T) {
	requireLandlock(t)
	write, elsewhere := t.TempDir(), t.TempDir()
	in, out := filepath.Join(write, "s"), filepath.Join(elsewhere, "s")
	serveUnix(t, in)
	serveUnix(t, out)
	probe := func(dir string) string {
		t.Helper()
		return probeIn(t, dir, probeEnv+"_PATH_in="+in, probeEnv+"_PATH_out="+out)
	}
	got := probe("")
	for _, w := range []string{"path unix in: ok", "path unix out: ok"} {
		if !strings.Contains(got, w) {
			t.Fatalf("unconfined: got\n%s\nwant %q", got, w)
		}
	}
	want := []string{"path unix in: ok", "path unix out: permission denied"}
	if !FencesPathSockets() {
		want[1] = "path unix out: ok"
	}
	got = probe(write)
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("confined, Landlock ABI %d (fences path sockets: %v): got\n%s\nwant %q", ABI(), FencesPathSockets(), got, w)
		}
	}
}

// TestGuardedDropsTheDead: a daemon killed with -9 leaves its record; it
// no longer counts, and is removed.
func TestGuardedDropsTheDead(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	dir, err := guardDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "4242")
	if err := os.WriteFile(stale, []byte(strconv.Itoa(dead.Process.Pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "notaport"), []byte("1\n"), 0o600)
	release, err := Guard(4343)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ports, err := Guarded()
	if err != nil || len(ports) != 1 || ports[0] != 4343 {
		t.Errorf("Guarded() = %v, %v; want [4343]", ports, err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the dead daemon's record is still there: %v", err)
	}
	if _, err := Guard(70000); err == nil {
		t.Error("Guard(70000): no error")
	}
	// Another process guarding the same port (a second daemon on one
	// database) keeps it guarded after this one lets go.
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleeper.Process.Kill()
	pid := strconv.Itoa(sleeper.Process.Pid)
	if err := os.WriteFile(filepath.Join(dir, "4343."+pid), []byte(pid+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	release()
	if ports, err := Guarded(); err != nil || len(ports) != 1 || ports[0] != 4343 {
		t.Errorf("after one of two guards let go: Guarded() = %v, %v; want [4343]", ports, err)
	}
}

// TestFilterAssembles: every jump of the seccomp program lands.
func TestFilterAssembles(t *testing.T) {
	code, err := assemble(filter())
	if err != nil {
		t.Fatal(err)
	}
	if len(code) == 0 || code[len(code)-1].Code != syscall.BPF_RET|syscall.BPF_K {
		t.Errorf("the program does not end in a return: %v", code)
	}
	if _, err := assemble([]insn{jeq(1, "nowhere"), ret(0)}); err == nil {
		t.Error("a jump to a missing label assembled")
	}
	if _, err := assemble([]insn{at("back", ret(0)), jeq(1, "back")}); err == nil {
		t.Error("a jump backwards assembled")
	}
}

// TestWrapKeepsTheRecordOutOfReach: a directory to write in the user's
// cache directory that holds the record of the guarded ports (a
// profile's cache declared as ~/.cache) is refused: an agent would delete the record, and the next run would
// reach the daemon.
func TestWrapKeepsTheRecordOutOfReach(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	for _, dir := range []string{cache, filepath.Join(cache, "cra")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		err := Wrap(exec.Command("true"), "/bin/cra", Spec{Write: []string{dir}})
		if err == nil || !strings.Contains(err.Error(), "record of the ports") {
			t.Errorf("Write %s: got %v, want a refusal naming the record", dir, err)
		}
	}
	// A directory above the cache (a home, a test's work directory)
	// is not a cache declared too broadly: it stays allowed.
	if err := Wrap(exec.Command("true"), "/bin/cra", Spec{Write: []string{filepath.Dir(cache)}}); err != nil {
		t.Errorf("Write %s: %v", filepath.Dir(cache), err)
	}
	build := filepath.Join(cache, "go-build")
	os.MkdirAll(build, 0o755)
	if err := Wrap(exec.Command("true"), "/bin/cra", Spec{Write: []string{build}}); err != nil {
		t.Errorf("Write %s: %v", build, err)
	}
}

// TestGuardedKeepsAnUnreadableRecord: Landlock does not confine chmod,
// so a confined process may make a daemon's record unreadable to the
// daemon's user (chmod 000: it owns the file). The port stays guarded
// all the same, or the next confined process (the next run, or the
// validation of the agent's own tests) would reach the daemon's API. A
// record that cannot be read as a file at all (a directory, which root
// reads past a chmod too) is guarded as well.
func TestGuardedKeepsAnUnreadableRecord(t *testing.T) {
	requireLandlock(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	release, err := Guard(4545)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	dir, err := guardDir()
	if err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(dir, "4545."+strconv.Itoa(os.Getpid()))
	chmod := exec.Command("chmod", "000", record)
	confine(t, chmod)
	if out, err := chmod.CombinedOutput(); err != nil {
		t.Logf("the confined chmod failed (%v: %s)", err, out)
	}
	if err := os.Mkdir(filepath.Join(dir, "4646."+strconv.Itoa(os.Getpid())), 0o700); err != nil {
		t.Fatal(err)
	}
	ports, err := Guarded()
	if err != nil || !slices.Equal(ports, []int{4545, 4646}) {
		t.Errorf("Guarded() = %v, %v; want [4545 4646]", ports, err)
	}
}
