package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The test binary is its own launcher (Main), as cra is.
func TestMain(m *testing.M) {
	Main(os.Args)
	if os.Getenv(probeEnv) != "" {
		netProbe()
	}
	if os.Getenv(setuidEnv) != "" {
		setuidProbe()
	}
	os.Exit(m.Run())
}

// requireLandlock fails, naming the fix, where the kernel lacks Landlock:
// the machines cra is tested on have it, and a sandbox test that skipped
// would hide that runs are not confined.
func requireLandlock(t *testing.T) {
	t.Helper()
	if ABI() == 0 {
		t.Fatalf("Landlock is missing on this kernel, so agent runs cannot be confined: boot a Linux 5.13+ kernel with CONFIG_SECURITY_LANDLOCK=y and landlock in lsm= (cat /sys/kernel/security/lsm), or set [board] sandbox = \"off\" where that cannot be")
	}
}

// TestConfined: a confined shell writes its own directory and /dev/null,
// reads everywhere, and cannot write beside it, above it, or through a
// symlink that leads out; its children are confined too.
func TestConfined(t *testing.T) {
	requireLandlock(t)
	root := t.TempDir()
	work := filepath.Join(root, "work")
	state := filepath.Join(root, "state")
	for _, d := range []string{work, state} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(state, "world.log"), []byte("truth\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(state, filepath.Join(work, "escape")); err != nil {
		t.Fatal(err)
	}
	script := `
echo mine > work/own && echo "own: ok"
echo x > /dev/null && echo "devnull: ok"
cat state/world.log >/dev/null && echo "read: ok"
echo forged >> state/world.log 2>/dev/null && echo "state: WROTE"
echo forged >> work/escape/world.log 2>/dev/null && echo "symlink: WROTE"
touch state/new 2>/dev/null && echo "create: WROTE"
rm -f state/world.log 2>/dev/null; [ -e state/world.log ] || echo "remove: WROTE"
mv state/world.log work/ 2>/dev/null && echo "rename: WROTE"
sh -c 'echo child >> state/world.log' 2>/dev/null && echo "child: WROTE"
exit 0`
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = root
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := Wrap(cmd, exe, Spec{Write: []string{work}}); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("confined shell: %v\n%s", err, out)
	}
	got := string(out)
	for _, want := range []string{"own: ok", "devnull: ok", "read: ok"} {
		if !strings.Contains(got, want) {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	if strings.Contains(got, "WROTE") {
		t.Errorf("a confined shell changed what it may not:\n%s", got)
	}
	data, err := os.ReadFile(filepath.Join(state, "world.log"))
	if err != nil || string(data) != "truth\n" {
		t.Errorf("world.log: got %q %v, want it unchanged", data, err)
	}
}

// TestWrapRefusesAMissingDirectory: a directory to write that does not
// exist is an error, not a confinement away from the working copy.
func TestWrapRefusesAMissingDirectory(t *testing.T) {
	cmd := exec.Command("true")
	err := Wrap(cmd, "/bin/cra", Spec{Write: []string{filepath.Join(t.TempDir(), "nope")}})
	if err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("got %v, want an error naming the directory", err)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		write []string
		argv  []string
		bad   string
	}{
		{name: "dirs and command", args: []string{"--write", "/a", "--write=/b", "--", "sh", "-c", "x"}, write: []string{"/a", "/b"}, argv: []string{"sh", "-c", "x"}},
		{name: "no dirs", args: []string{"--", "true"}, argv: []string{"true"}},
		{name: "no command", args: []string{"--write", "/a", "--"}, bad: "no command"},
		{name: "no separator", args: []string{"--write", "/a"}, bad: "usage"},
		{name: "unknown flag", args: []string{"--read", "/a", "--", "x"}, bad: "unexpected"},
		{name: "net ruleset", args: []string{"--write", "/a", "--net", "3", "--", "x"}, write: []string{"/a"}, argv: []string{"x"}},
		{name: "net not a number", args: []string{"--net", "three", "--", "x"}, bad: "want the number of an open file"},
		{name: "net a standard stream", args: []string{"--net", "1", "--", "x"}, bad: "3 or more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, argv, err := Parse(tc.args)
			if tc.bad != "" {
				if err == nil || !strings.Contains(err.Error(), tc.bad) {
					t.Errorf("got %v, want an error with %q", err, tc.bad)
				}
				return
			}
			if err != nil || strings.Join(spec.Write, ",") != strings.Join(tc.write, ",") || strings.Join(argv, " ") != strings.Join(tc.argv, " ") {
				t.Errorf("got %v %v %v, want %v %v", spec.Write, argv, err, tc.write, tc.argv)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add("--write\x00/a\x00--\x00sh")
	f.Add("--\x00")
	f.Add("--net\x003\x00--\x00sh")
	f.Fuzz(func(t *testing.T, joined string) {
		spec, argv, err := Parse(strings.Split(joined, "\x00"))
		if err == nil && len(argv) == 0 {
			t.Errorf("no error and no command for %q (%v)", joined, spec)
		}
	})
}

// TestConfinedRootKeepsFewCapabilities: an agent confined as root (cra
// in a container, or under sudo) cannot read the environment of a
// process outside its confinement, where the daemon keeps its secrets,
// and holds no capability outside keptCaps in any set, the bounding set
// included (root's next exec would get it back). As another user it
// holds none at all.
func TestConfinedRootKeepsFewCapabilities(t *testing.T) {
	requireLandlock(t)
	secret := fmt.Sprintf("cra-secret-%d", os.Getpid())
	daemon := exec.Command("sleep", "300")
	daemon.Env = append(os.Environ(), "CRA_TEST_SECRET="+secret)
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { daemon.Process.Kill(); daemon.Wait() })
	script := fmt.Sprintf(`grep -c %s /proc/%d/environ 2>&1; grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status`, secret, daemon.Process.Pid)
	cmd := exec.Command("sh", "-c", script)
	confine(t, cmd)
	out, _ := cmd.CombinedOutput() // grep fails when it cannot read
	got := string(out)
	if !strings.Contains(got, "Permission denied") {
		t.Errorf("a confined process read the environment of one outside (uid %d):\n%s", os.Geteuid(), got)
	}
	var keptMask uint64
	for c := range 64 {
		if kept(c, ABI()) {
			keptMask |= 1 << c
		}
	}
	sets := 0
	for _, line := range strings.Split(got, "\n") {
		name, hex, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "Cap") {
			continue
		}
		sets++
		v, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if name == "CapBnd" && os.Geteuid() != 0 {
			continue // another user's exec gains nothing from it (no_new_privs)
		}
		if extra := v &^ keptMask; extra != 0 {
			t.Errorf("confined as uid %d, %s holds capabilities %#x outside keptCaps", os.Geteuid(), name, extra)
		}
	}
	if sets != 5 {
		t.Errorf("read %d capability sets, want 5:\n%s", sets, got)
	}
}

// setuidEnv makes the test binary, run as a confined command, try to
// become another user (setuidProbe).
const setuidEnv = "CRA_TEST_SETUID_PROBE"

// setuidProbe tries to take nobody's user and group ids, prints what
// came of it ("became nobody" or the error) and exits.
func setuidProbe() {
	err := syscall.Setgid(65534)
	if err == nil {
		err = syscall.Setuid(65534)
	}
	if err != nil {
		fmt.Println("setuid:", err)
	} else {
		fmt.Println("became nobody")
	}
	os.Exit(0)
}

// TestConfinedRootStaysRoot: an agent confined as root cannot take
// another user's ids. Landlock confines what it writes, not whom it
// talks to: as postgres it would pass a 'local all postgres peer' line
// (Debian's default pg_hba.conf) and write the fleet's tables as a
// superuser, and as another user reach any service that trusts its
// peer's uid. (As another user, changing ids needs root anyway.)
func TestConfinedRootStaysRoot(t *testing.T) {
	requireLandlock(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), setuidEnv+"=1")
	confine(t, cmd)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "setuid:") {
		t.Errorf("confined as uid %d, the probe changed user or failed (%v):\n%s", os.Geteuid(), err, out)
	}
}

// TestKeptCapsFollowTheABI: CAP_KILL stays only where Landlock scopes
// signals (ABI 6); what sets users, file capabilities or devices never
// does.
func TestKeptCapsFollowTheABI(t *testing.T) {
	for _, tc := range []struct {
		c, abi int
		want   bool
	}{
		{unix.CAP_KILL, 5, false},
		{unix.CAP_KILL, 6, true},
		{unix.CAP_CHOWN, 1, true},
		{unix.CAP_SETUID, 7, false},
		{unix.CAP_SETFCAP, 7, false},
		{unix.CAP_MKNOD, 7, false},
		{unix.CAP_SYS_ADMIN, 7, false},
	} {
		if got := kept(tc.c, tc.abi); got != tc.want {
			t.Errorf("kept(%d, ABI %d) = %v, want %v", tc.c, tc.abi, got, tc.want)
		}
	}
}
