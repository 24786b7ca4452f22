package runner

import (
	"os"
	"testing"

	"github.com/cra-dev/cra/internal/sandbox"
	"github.com/cra-dev/cra/internal/testpar"
)

// testParallel is how many of the package's tests run at once when
// -parallel is not given: each waits on the runs it starts (a confined
// agent, git, a commit) most of its time, so GOMAXPROCS at a time left
// the cores idle. The tests that set the environment (t.Setenv, also
// through fakeAgents) and
// TestRunTimeoutStopsTheGroup, whose agent must start within its 15 s
// timeout, stay sequential and run first, alone.
const testParallel = 4

// TestMain makes the test binary its own sandbox launcher, as cra is:
// the processor confines the agents it runs through it.
func TestMain(m *testing.M) {
	sandbox.Main(os.Args)
	testpar.Default(testParallel)
	os.Exit(m.Run())
}
