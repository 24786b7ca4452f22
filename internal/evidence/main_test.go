package evidence

import (
	"os"
	"os/exec"
	"testing"

	"github.com/cra-dev/cra/internal/sandbox"
)

// TestMain makes the test binary its own sandbox launcher, as cra is:
// validation runs confined through it.
func TestMain(m *testing.M) {
	sandbox.Main(os.Args)
	os.Exit(m.Run())
}

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
