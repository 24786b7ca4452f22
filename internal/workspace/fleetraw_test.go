package workspace

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/statedir"
)

// fleetRawChild names, in a child's environment, the repository whose
// merged raw copy it makes and then holds until it is killed.
const fleetRawChild = "CRA_TEST_FLEET_RAW_CHILD"

// TestFleetCorpusRemovesDeadCopies: the merged raw copy of a process
// killed before its Close (train-plan --raw under kill -9) is removed by
// the next FleetCorpus, while the copy of a process still reading its own
// is left alone, however old.
func TestFleetCorpusRemovesDeadCopies(t *testing.T) {
	ctx := context.Background()
	if repo := os.Getenv(fleetRawChild); repo != "" {
		fleetRawChildMain(ctx, t, repo)
		return
	}
	repo := indexedRepo(t, nil)
	ws, err := Open(ctx, repo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	c, err := ws.Corpus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "raw.sqlite")
	if err := c.Snapshot(ctx, other); err != nil {
		t.Fatal(err)
	}

	// A child (this test binary) makes its merged copy and holds it.
	child := exec.Command(os.Args[0], "-test.run=^TestFleetCorpusRemovesDeadCopies$")
	child.Env = append(os.Environ(), fleetRawChild+"="+repo+"|"+other)
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	hold, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	dir, ok := strings.CutPrefix(strings.TrimSpace(line), "copy ")
	if err != nil || !ok {
		t.Fatalf("the child said %q, %v", line, err)
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(dir, old, old); err != nil {
		t.Fatal(err)
	}

	merged := func() {
		t.Helper()
		f, err := ws.FleetCorpus(ctx, []string{other})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	merged()
	if _, err := os.Stat(statedir.At(dir).Raw()); err != nil {
		t.Fatalf("the live child's copy was removed: %v", err)
	}

	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the killed child left nothing (%v): the test no longer reproduces a leftover", err)
	}
	merged()
	left, err := filepath.Glob(statedir.At(ws.StateDir).FleetRawCopies())
	if err != nil || len(left) != 0 {
		t.Errorf("merged copies left after the next run: %v, %v", left, err)
	}
}

// fleetRawChildMain is the child of TestFleetCorpusRemovesDeadCopies:
// it makes a merged copy, says where, and waits to be killed.
func fleetRawChildMain(ctx context.Context, t *testing.T, arg string) {
	repo, other, _ := strings.Cut(arg, "|")
	ws, err := Open(ctx, repo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := ws.FleetCorpus(ctx, []string{other})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("copy %s\n", f.dir)
	// Until killed; or, should the parent die first, until its end of
	// stdin closes.
	io.Copy(io.Discard, os.Stdin)
}
