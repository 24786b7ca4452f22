package review

import (
	"os"
	"testing"

	"github.com/cra-dev/cra/internal/pgtest"
	"github.com/cra-dev/cra/internal/sandbox"
	"github.com/cra-dev/cra/internal/testpar"
)

// TestMain makes the test binary its own sandbox launcher, as cra is:
// the processor confines the agents it runs through it. The PostgreSQL
// cluster of the fleet's tests starts on first use, stopped at the end.
// The parallel tests run testParallel at once unless -parallel says
// otherwise: each waits on its runs (an agent, a confined commit, the
// validation) most of its time, so two at a time, GOMAXPROCS on a small
// machine, left the cores idle. The tests that judge a run by time
// (Level 2's) stay sequential, run before the parallel ones.
func TestMain(m *testing.M) {
	sandbox.Main(os.Args)
	testpar.Default(testParallel)
	pgtest.Main(m)
}

// testParallel is how many tests run at once by default (see TestMain).
const testParallel = 4
