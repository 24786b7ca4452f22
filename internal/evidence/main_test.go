package evidence

import (
	"os"
	"os/exec"
	"testing"

	"github.com/cra-dev/cra/internal/sandbox"
	"github.com/cra-dev/cra/internal/testpar"
)

// TestMain makes the test binary its own sandbox launcher, as cra is:
// validation runs confined through it. The tests run testParallel at
// once unless -parallel says otherwise: the hostile cases spend most of
// their time waiting on the go test or pytest they confine (about 40% of
// a core each), so two at a time, GOMAXPROCS on a small machine, left
// the cores idle for most of the package's run.
func TestMain(m *testing.M) {
	sandbox.Main(os.Args)
	testpar.Default(testParallel)
	os.Exit(m.Run())
}

// testParallel is how many tests run at once by default (see TestMain).
const testParallel = 4

// confined is the sandbox a test's validation runs in: this binary as
// the launcher, and Go's build cache writable (the tests run go test).
func confined(t testing.TB) Sandbox {
	t.Helper()
	if sandbox.ABI() == 0 {
		t.Fatalf("Landlock is missing on this kernel, so validation cannot be confined: boot a Linux 5.13+ kernel with CONFIG_SECURITY_LANDLOCK=y and landlock in lsm= (cat /sys/kernel/security/lsm)")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var caches []string
	if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil && len(out) > 1 {
		caches = append(caches, string(out[:len(out)-1]))
	}
	return Sandbox{Caches: caches, Wrap: func(cmd *exec.Cmd, write []string) error {
		return sandbox.Wrap(cmd, exe, sandbox.Spec{Write: write})
	}}
}
