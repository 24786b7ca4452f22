package cli

import (
	"context"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/cra-dev/cra/internal/pgtest"
)

// TestPostgresScripts runs the scenarios in testdata/pgscript against a
// real PostgreSQL: a cluster of the test's own, a new database for each
// script, its URL in CRA_DATABASE_URL as a person exports it.
func TestPostgresScripts(t *testing.T) {
	c := pgtest.New(t)
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/pgscript",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			url, err := c.NewDatabase(context.Background())
			if err != nil {
				return err
			}
			env.Setenv("CRA_DATABASE_URL", url)
			env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			env.Setenv("GIT_CONFIG_GLOBAL", "/dev/null")
			env.Setenv("HOME", env.WorkDir)
			env.Setenv("GORACE", "atexit_sleep_ms=0")
			return nil
		},
	})
}
