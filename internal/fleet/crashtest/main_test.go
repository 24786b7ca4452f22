// Package crashtest holds the fleet's tests that need several real
// daemons (issue 34's acceptance): three 'cra serve' processes, each with
// its own clone of a repository and its own host name, sharing one
// PostgreSQL (pgtest) and one bare git remote, killed with SIGKILL and
// cut off from the database at chosen moments. The daemons are this test
// binary run again as cra (TestMain), so they are the code under test,
// built with the same flags (-race included).
//
// The package holds tests only; it runs beside internal/cli, the slowest
// package, rather than inside it.
package crashtest

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/cra-dev/cra/internal/cli"
	"github.com/cra-dev/cra/internal/pgtest"
	"github.com/cra-dev/cra/internal/sandbox"
)

// envAsCra makes this test binary act as cmd/cra: the tests set it on
// every process they start, and the daemons' own children (the sandbox
// helper) inherit it.
const envAsCra = "CRASHTEST_AS_CRA"

func TestMain(m *testing.M) {
	// The daemons confine their agents through this binary.
	sandbox.Main(os.Args)
	if os.Getenv(envAsCra) == "1" {
		// As cmd/cra: SIGINT and SIGTERM end the context.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	pgtest.Main(m)
}
