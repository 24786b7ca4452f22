package review

import (
	"os"
	"testing"

	"github.com/cra-dev/cra/internal/pgtest"
	"github.com/cra-dev/cra/internal/sandbox"
)

// TestMain makes the test binary its own sandbox launcher, as cra is:
// the processor confines the agents it runs through it. The PostgreSQL
// cluster of the fleet's tests starts on first use, stopped at the end.
func TestMain(m *testing.M) {
	sandbox.Main(os.Args)
	pgtest.Main(m)
}
