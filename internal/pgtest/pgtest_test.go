package pgtest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

// TestClusterRunsAndStops: a database of the shared cluster takes SQL;
// a cluster of the test's own is gone, process and directory, once
// stopped.
func TestClusterRunsAndStops(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, DB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT 40 + 2").Scan(&n); err != nil || n != 42 {
		t.Fatalf("SELECT 40 + 2 = %d, %v", n, err)
	}
	var listen string
	if err := conn.QueryRow(ctx, "SHOW listen_addresses").Scan(&listen); err != nil || listen != "" {
		t.Fatalf("listen_addresses = %q, %v: the test server must not listen on TCP", listen, err)
	}

	c, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pid := c.cmd.Process.Pid
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("postgres pid %d still there after Stop: kill(0) = %v", pid, err)
	}
	if _, err := os.Stat(c.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cluster dir %s still there after Stop: %v", c.Dir(), err)
	}
}

// TestBinariesMissing: with no initdb anywhere, the error says how to
// install PostgreSQL; with one only under the library glob, it is found.
func TestBinariesMissing(t *testing.T) {
	none := func(string) (string, error) { return "", exec.ErrNotFound }
	_, err := binaries(none, filepath.Join(t.TempDir(), "*", "bin"))
	if err == nil || !strings.Contains(err.Error(), "apt-get install -y postgresql") {
		t.Fatalf("binaries with none = %v, want the install hint", err)
	}
	root := t.TempDir()
	for _, v := range []string{"13", "15"} {
		bin := filepath.Join(root, v, "bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"initdb", "postgres"} {
			if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := binaries(none, filepath.Join(root, "*", "bin"))
	if want := filepath.Join(root, "15", "bin"); err != nil || got != want {
		t.Fatalf("binaries = %q, %v; want the newest, %q", got, err, want)
	}
}
