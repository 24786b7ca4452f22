package crashtest

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/pgtest"
)

// waitFor polls cond every 100ms until it holds, failing after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v", what, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startOf returns the first start record of task on host, if any.
func startOf(recs []record, task, host string) (record, bool) {
	for _, r := range recs {
		if r.kind == "start" && r.task == task && r.host == host {
			return r, true
		}
	}
	return record{}, false
}

// TestCutOffHostStopsItsRuns: a host whose connection to PostgreSQL is
// cut for longer than the lease (a proxy between its daemon and the
// server closes every connection and refuses new ones) loses its run to
// another host, which restarts the task with the reason logged; the
// cut-off host stops its own copy of the run (its agent ends by a
// signal, before the other host's copy starts) and, once back, finishes
// nothing: the log has one finish, the other host's, its run's branch on
// the remote is the other host's work, and no two copies ran at once.
// The cut ends while the other host's copy still runs (8 s): a copy the
// cut-off host committed and pushed once back would be on the remote,
// and the other host's push refused.
func TestCutOffHostStopsItsRuns(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	// The task's agent runs a minute on h1 and briefly on h2.
	w.extra = append(w.extra, "FLEETTEST_LONG_ON=h1")
	u, err := url.Parse(w.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	px := newProxy(t, filepath.Join(pgtest.Shared(t).Dir(), ".s.PGSQL.5432"))
	cut := w.addHost("h1", fmt.Sprintf("postgres://%s@%s%s?sslmode=disable", pgtest.Superuser, px.addr(), u.Path))
	other := w.addHost("h2", w.dbURL)
	cut.mustCra("fleet", "init")
	id := strings.TrimSpace(cut.mustCra("task", "add", "long 1", "--agent", "long"))

	cut.start()
	var first record
	waitFor(t, 90*time.Second, "h1 starts the task's run", func() bool {
		var ok bool
		first, ok = startOf(w.readRecords(), id, "h1")
		return ok
	})
	other.start()
	time.Sleep(2 * time.Second) // h2 beats and campaigns while h1 is connected
	px.pause()
	cutAt := time.Now()
	t.Logf("h1 cut off from PostgreSQL at %s, its run %d (pid %d) running", cutAt.Format("15:04:05.000"), first.run, first.pid)

	var taken record
	waitFor(t, 2*time.Minute, "h2 takes the run over", func() bool {
		var ok bool
		taken, ok = startOf(w.readRecords(), id, "h2")
		return ok
	})
	t.Logf("h2 started run %d at %s, %v after the cut", taken.run, taken.at.Format("15:04:05.000"), taken.at.Sub(cutAt).Round(time.Millisecond))
	// The cut lasts longer than the lease whatever the takeover took.
	if d := lease + 3*time.Second - time.Since(cutAt); d > 0 {
		time.Sleep(d)
	}
	px.resume()
	t.Logf("h1 back at %s", time.Now().Format("15:04:05.000"))

	c := w.conn()
	w.waitQuiet(c, 10*time.Second, 2*time.Minute)
	// h1's copy must be gone, however it ended; were it left running it
	// ends by itself within about a minute and a half, which the checks
	// below then see.
	waitFor(t, 100*time.Second, "h1's copy of the run ends", func() bool {
		_, gone := w.watch.goneAt(first.pid)
		return gone
	})
	// A little longer: h1, back, would log or push what it finished.
	time.Sleep(3 * time.Second)
	if cut.exited() || other.exited() {
		t.Errorf("a daemon exited on its own (h1 %v, h2 %v)", cut.exited(), other.exited())
	}
	for _, h := range w.hosts {
		h.stop()
	}
	w.checkDaemonLogs()

	recs := w.readRecords()
	spans := w.spans(recs, time.Now())
	w.checkNoOverlap(spans)
	for _, s := range spans {
		if s.pid != first.pid {
			continue
		}
		if s.how == "end" || s.how == "open" {
			t.Errorf("h1's copy of run %d was not stopped: %v", s.run, s)
		}
		if !s.end.Before(taken.at) {
			t.Errorf("h1's copy of run %d ended at %s, after h2's copy started at %s", s.run, s.end.Format("15:04:05.000"), taken.at.Format("15:04:05.000"))
		}
		t.Logf("h1's copy: %v", s)
	}

	lines := w.checkExport(c, other)
	runs, problems := runsOf(lines)
	for _, p := range problems {
		t.Error(p)
	}
	finishes := 0
	for n, r := range runs[id] {
		finishes += r.finishes
		if r.finishes > 1 {
			t.Errorf("run %d of %s finished %d times in the log", n, id, r.finishes)
		}
	}
	if r := runs[id][first.run]; r == nil || r.finishes != 0 || len(r.restarts) == 0 {
		t.Errorf("run %d of %s (h1's, cut off): %+v in the log, want no finish and a restart with its reason", first.run, id, r)
	} else {
		t.Logf("run %d of %s restarted: %q", first.run, id, r.restarts)
	}
	if r := runs[id][taken.run]; r == nil || r.finishes != 1 {
		t.Errorf("run %d of %s (h2's): %+v in the log, want one finish", taken.run, id, r)
	}
	if finishes != 1 {
		t.Errorf("%s: %d finishes in the log, want 1 (h2's run)", id, finishes)
	}
	// The branch on the remote is h2's work: h1 pushed nothing of its
	// stopped copy.
	work := w.git(w.root, "--git-dir", w.remote, "show", "refs/heads/cra/"+id+":work-"+id+".txt")
	if want := fmt.Sprintf("%s run %d on h2", id, taken.run); strings.TrimSpace(work) != want {
		t.Errorf("cra/%s on the remote holds %q, want h2's work: %q", id, work, want)
	}
}
