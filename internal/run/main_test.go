package run

import (
	"os"
	"testing"

	"github.com/cra-dev/cra/internal/sandbox"
)

// TestMain makes the test binary its own sandbox launcher, as cra is:
// solve confines its validation commands through it.
func TestMain(m *testing.M) {
	sandbox.Main(os.Args)
	os.Exit(m.Run())
}
