//go:build unix

package train

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/dataset"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
)

// curateChildEnv names the state directory TestCurateChild curates in;
// unset, that test is skipped.
const curateChildEnv = "CRA_TEST_CURATE_CHILD"

// TestCurateChild is the child process of killedCurate: it curates
// the plan of the state directory curateChildEnv names.
func TestCurateChild(t *testing.T) {
	dir := os.Getenv(curateChildEnv)
	if dir == "" {
		t.Skip("the child process of killedCurate")
	}
	ctx := context.Background()
	db, err := store.NewFactory(statedir.At(dir)).Open(ctx, store.Raw, "", false)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p, err := ReadPlan(filepath.Join(dir, "plan.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Curate(ctx, corpus.New(db), Layout{Root: filepath.Join(dir, "training")}, p, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// killedCurate runs TestCurateChild over a raw database holding one
// logged run and its plan, while a write transaction held here stops the
// child at its record, its files written, and kills it (SIGKILL) as soon
// as written says the datasets directory shows what the test is after.
// It returns the corpus, the layout and the plan, the transaction rolled
// back.
func killedCurate(t *testing.T, written func(l Layout) bool) (*corpus.Corpus, Layout, *Plan) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := store.NewFactory(statedir.At(dir)).Open(ctx, store.Raw, "", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c := corpus.New(db)
	logRun(t, c, "A", "implement", true, dataset.Scope)
	p := recordedPlan(t, c)
	text, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plan.toml"), text, 0o644); err != nil {
		t.Fatal(err)
	}
	l := Layout{Root: filepath.Join(dir, "training")}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestCurateChild$")
	cmd.Env = append(os.Environ(), curateChildEnv+"="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for !written(l) {
		select {
		case err := <-exited:
			t.Fatalf("the child ended (%v) before it wrote what the test waits for", err)
		default:
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	return c, l, p
}

// TestCurateKilled: a curate-data killed (SIGKILL) in the middle of its
// write leaves no partial plan-* directory, only a hidden temporary one;
// the next run removes it, and records and reports its own dataset alone.
func TestCurateKilled(t *testing.T) {
	ctx := context.Background()
	// Killed as soon as it writes anything, in the middle of its write.
	c, l, p := killedCurate(t, func(l Layout) bool {
		entries, _ := os.ReadDir(l.Datasets())
		return len(entries) > 0
	})
	planID := p.ID
	// Any plan-* directory is whole: the child, had it gone on, would
	// have recorded it as it is.
	runs, _ := filepath.Glob(filepath.Join(l.Datasets(), "plan-*"))
	for _, d := range runs {
		for _, f := range []string{PlanSnapshot, filepath.Join(dataset.BaseModel(p.Stage), p.Stage, dataset.TrainFile)} {
			if _, err := os.Stat(filepath.Join(d, f)); err != nil {
				t.Errorf("the killed run left %s without %s, which looks like a finished run's: %v", d, f, err)
			}
		}
	}
	leftovers, _ := filepath.Glob(filepath.Join(l.Datasets(), tempPrefix+"*"))

	res, err := Curate(ctx, c, l, p, time.Date(2024, 3, 6, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range leftovers {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("the killed run's %s is still there: %v", d, err)
		}
	}
	want := filepath.Join(l.Datasets(), "plan-"+strconv.FormatInt(planID, 10)+"-20240306T000000Z")
	if !strings.HasPrefix(res.Dir, want+string(filepath.Separator)) {
		t.Errorf("got the dataset at %s, want it under %s", res.Dir, want)
	}
	rows, err := c.Datasets(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].ID != res.DatasetID || rows[0].Path != res.Dir {
		t.Errorf("recorded: got %+v, want the one dataset at %s", rows, res.Dir)
	}
}

// TestCurateKilledAtRecord: a run killed after it placed its directory
// and before its record (here blocked by a write transaction) leaves a
// complete directory no row names; the next run removes it, and what it
// records itself carries no pending mark.
func TestCurateKilledAtRecord(t *testing.T) {
	ctx := context.Background()
	var placed []string
	c, l, p := killedCurate(t, func(l Layout) bool { // placed, and blocked at its record
		placed, _ = filepath.Glob(filepath.Join(l.Datasets(), "plan-*"))
		return len(placed) > 0
	})

	res, err := Curate(ctx, c, l, p, time.Date(2024, 3, 6, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range placed {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s, placed by the killed run and never recorded, is still there: %v", filepath.Base(d), err)
		}
	}
	run := filepath.Dir(filepath.Dir(res.Dir))
	if _, err := os.Stat(filepath.Join(run, dataset.PendingFile)); !os.IsNotExist(err) {
		t.Errorf("the recorded run %s keeps its pending mark: %v", filepath.Base(run), err)
	}
}
