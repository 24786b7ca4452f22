package runner

import (
	"context"
	"testing"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/gitx/gittest"
)

// TestRunHoldsNoVerdictSecrets runs a real agent that prints the
// daemon's token and the database URL it inherited: neither reaches it,
// while the rest of cra's environment does.
func TestRunHoldsNoVerdictSecrets(t *testing.T) {
	t.Setenv(envServeToken, "serve-token-0123456789abcdef0123456789")
	t.Setenv("CRA_TEST_DB_URL", "postgres://cra:secret@db.example/cra")
	t.Setenv("CRA_TEST_KEEP", "kept")
	t.Setenv("PGPASSWORD", "pg-secret")
	t.Setenv("PGSERVICEFILE", "/home/u/.pg_service.conf")
	p, _, _ := newTestProcessor(t, map[string]config.Agent{
		"peek": {Command: `echo "[$CRA_SERVE_TOKEN][$CRA_TEST_DB_URL][$CRA_TEST_KEEP][$PGPASSWORD$PGSERVICEFILE]" > env.txt`},
	}, 1)
	p.Config.Fleet = &config.Fleet{DatabaseURLEnv: "CRA_TEST_DB_URL"}
	task := addWith(t, p.Board, "peek", "peek", func(*board.Task) {})
	o, err := p.Run(context.Background(), task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !o.Completed() {
		t.Fatalf("got %s %q", o.Folder, o.Finish)
	}
	if got := gittest.Run(t, p.Root, "show", "cra/"+task.ID+":env.txt"); got != "[][][kept][]" {
		t.Fatalf("the agent saw %q, want [][][kept][]: the daemon's token, the database URL and libpq's variables must not reach it", got)
	}
}
