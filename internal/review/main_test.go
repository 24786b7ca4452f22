package review

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/cra-dev/cra/internal/pgtest"
	"github.com/cra-dev/cra/internal/sandbox"
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
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(max(testParallel, runtime.GOMAXPROCS(0))))
	}
	pgtest.Main(m)
}

// testParallel is how many tests run at once by default (see TestMain).
const testParallel = 4
