package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/cra-dev/cra/internal/pgstore"
	"github.com/cra-dev/cra/internal/pgtest"
)

// TestPostgresScripts runs the scenarios in testdata/pgscript against a
// real PostgreSQL: a cluster of the test's own, a new database for each
// script, its URL in CRA_DATABASE_URL as a person exports it. It runs in
// parallel with TestScripts (see there).
func TestPostgresScripts(t *testing.T) {
	t.Parallel()
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
			reapAtEnd(env)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// fleetdb acts as the hosts of a fleet would on the script's
			// database (cra serve does not run on PostgreSQL yet):
			//   fleetdb heartbeat HOST SLOTS
			//   fleetdb claim HOST N TASK...   (a lease of a minute)
			//   fleetdb expire TASK...         (the lease's time passes)
			//   fleetdb campaign HOST
			"fleetdb": fleetDB,
			// envstdout NAME sets $NAME to the last command's standard
			// output, trimmed: the id 'cra task add' printed.
			"envstdout": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 1 || neg {
					ts.Fatalf("usage: envstdout NAME")
				}
				ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile("stdout")))
			},
		},
	})
}

func fleetDB(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: fleetdb heartbeat|claim|expire|campaign ARGS...")
	}
	ctx := context.Background()
	url := ts.Getenv("CRA_DATABASE_URL")
	f, err := pgstore.OpenFleet(ctx, url)
	ts.Check(err)
	defer f.Close()
	switch args[0] {
	case "heartbeat":
		slots, err := strconv.Atoi(args[2])
		ts.Check(err)
		ts.Check(f.Heartbeat(ctx, pgstore.Host{Name: args[1], Started: time.Now(), Slots: slots, Version: "test"}))
	case "claim":
		n, err := strconv.Atoi(args[2])
		ts.Check(err)
		got, err := f.Claim(ctx, args[1], args[3:], n, time.Minute)
		ts.Check(err)
		for _, l := range got {
			fmt.Fprintf(ts.Stdout(), "%s %s %s\n", l.TaskID, l.Host, l.Reason)
		}
	case "expire":
		conn, err := pgx.Connect(ctx, url)
		ts.Check(err)
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, "UPDATE run_leases SET expires = now() - interval '5 seconds' WHERE task_id = ANY($1)", args[1:])
		ts.Check(err)
	case "campaign":
		_, _, err := f.Campaign(ctx, args[1], time.Minute)
		ts.Check(err)
	default:
		ts.Fatalf("fleetdb: no command %q", args[0])
	}
}
