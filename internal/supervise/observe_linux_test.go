package supervise

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestObserve(t *testing.T) {
	ctx := context.Background()
	runs := filepath.Join(t.TempDir(), "runs")
	tagged, quiet, torn, none := uniqueTask(t)+"-a", uniqueTask(t)+"-b", uniqueTask(t)+"-c", uniqueTask(t)+"-d"
	a := startChild(t, tagEnv(tagged, 1)...)
	// b's environment carries no tags, as if it could not be read: its
	// identity alone says it is the live run.
	b := startChild(t)
	save := func(task string, c *child) {
		path, err := RunFile(runs, task)
		if err != nil {
			t.Fatal(err)
		}
		if err := (Identity{PID: c.pid, StartTime: c.start, Run: 1, TaskID: task}).Save(path); err != nil {
			t.Fatal(err)
		}
	}
	save(tagged, a)
	save(quiet, b)
	tornPath, _ := RunFile(runs, torn)
	os.MkdirAll(filepath.Dir(tornPath), 0o755)
	if err := os.WriteFile(tornPath, []byte(`{"pid": 1`), 0o644); err != nil {
		t.Fatal(err)
	}
	since := time.Now().Add(-time.Hour)
	active := []Active{{ID: tagged, Run: 1, Since: since}, {ID: quiet, Run: 1, Since: since}, {ID: torn, Run: 1, Since: since}, {ID: none, Run: 1, Since: since}}
	o, err := Observe(ctx, runs, active)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Runs) != 2 || o.Runs[tagged].PID != a.pid || o.Runs[quiet].PID != b.pid {
		t.Errorf("runs: got %+v, want %s and %s", o.Runs, tagged, quiet)
	}
	if len(o.Problems) != 1 || !strings.Contains(o.Problems[0].Error(), tornPath) {
		t.Errorf("problems: got %v, want one naming %s", o.Problems, tornPath)
	}
	var found []string
	for _, p := range o.Procs {
		switch p.PID {
		case a.pid, a.kid, b.pid:
			found = append(found, p.TaskID)
		case b.kid:
			t.Errorf("b's untagged child %d was found", p.PID)
		}
	}
	if len(found) != 3 {
		t.Errorf("found %v, want a's two processes and b", found)
	}
	// Only the own processes: a and b are live, the torn and the missing
	// are restarted.
	var own []Process
	for _, p := range o.Procs {
		if p.PID == a.pid || p.PID == a.kid || p.PID == b.pid {
			own = append(own, p)
		}
	}
	got := Reconcile(Input{Active: active, Runs: o.Runs, Procs: own, Now: time.Now()})
	want := []Action{
		Restart{ID: torn, Run: 1, Reason: "not running", Detail: "run 1 has no recorded process"},
		Restart{ID: none, Run: 1, Reason: "not running", Detail: "run 1 has no recorded process"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
}
