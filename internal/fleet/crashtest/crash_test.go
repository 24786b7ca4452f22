package crashtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The multi-host crash test's sizes.
const (
	crashTasks = 30
	crashKills = 10
	// crashLate of the kills restart their host only once the lease has
	// passed, so that another host takes its runs over; the others
	// restart it at once, and its own new incarnation takes them over.
	crashLate = 3
)

// seedOf returns CRASHTEST_SEED, or a new seed; the test prints it.
func seedOf(t *testing.T) uint64 {
	if s := os.Getenv("CRASHTEST_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CRASHTEST_SEED=%q: want a number", s)
		}
		return n
	}
	return uint64(time.Now().UnixNano())
}

// TestCrashManyHosts is issue 34's multi-host crash test: three hosts
// (three clones, three daemons, host names h1 to h3) share one
// PostgreSQL and one bare remote and run 30 tasks whose agents sleep,
// fail, or leave children behind, the recycler reviewing the runs with
// llmtest as its model. A random host is lost 10 times at random moments
// (SIGKILL to its daemon and to every agent it started) and started
// again, at once or after its leases ran out. Once the board is quiet:
// every task is in exactly one folder, the same in 'cra task list' and
// the database; each task that finished a run has its branch on the
// remote; no task ran twice at once (the agents record their start and
// end); each run lost with its host was restarted, with its reason
// logged; every run ended once (a finish or a restart); 'cra fleet
// status' agrees with the database and holds no lease; 'cra log export'
// is the database's world_log in order.
func TestCrashManyHosts(t *testing.T) {
	t.Parallel()
	seed := seedOf(t)
	t.Logf("seed %d (CRASHTEST_SEED=%d reproduces the kills' order and moments)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	began := time.Now()
	phase := func(what string) { t.Logf("%s after %v", what, time.Since(began).Round(100*time.Millisecond)) }

	w := newWorld(t)
	for i := 1; i <= 3; i++ {
		w.addHost(fmt.Sprintf("h%d", i), w.dbURL)
	}
	h1 := w.hosts[0]
	h1.mustCra("fleet", "init")
	modes := make([]string, 0, crashTasks)
	for i := range crashTasks {
		modes = append(modes, []string{"slow", "slow", "fail", "fork", "fork"}[i%5])
	}
	rng.Shuffle(len(modes), func(i, j int) { modes[i], modes[j] = modes[j], modes[i] })
	phase("the fleet made")
	for _, h := range w.hosts {
		h.start()
	}
	// Added through the daemons' API, a third on each host: the board is
	// one, and the runs begin as the tasks come.
	var wg sync.WaitGroup
	errs := make([]error, len(modes))
	for i, h := range w.hosts {
		base := h.api(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := i; j < len(modes); j += len(w.hosts) {
				_, errs[j] = h.addTask(base, fmt.Sprintf("%s %d", modes[j], j+1), modes[j])
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	phase("30 tasks added")

	// The kills go on while a host killed late is down: the others take
	// its runs over meanwhile, and the board is still busy for the next
	// kills.
	late := rng.Perm(crashKills)[:crashLate]
	down := map[*host]time.Time{} // a host killed late → when it restarts
	restartDue := func(now time.Time) {
		for h, at := range down {
			if !now.Before(at) {
				h.start()
				delete(down, h)
			}
		}
	}
	for i := range crashKills {
		time.Sleep(time.Duration(300+rng.IntN(2200)) * time.Millisecond)
		restartDue(time.Now())
		for len(down) == len(w.hosts) { // every host lost: the first back is next
			time.Sleep(100 * time.Millisecond)
			restartDue(time.Now())
		}
		// A host with an agent mid-run, if one has it within a few
		// seconds: a kill that catches runs is the one that tests their
		// takeover. (Any tagged process would not do: a fork agent's
		// leftover child is no run, and since each run's reaper ends a
		// killed daemon's agents, fewer runs outlive a kill to be caught
		// by the next.)
		var up, busy []*host
		for wait := 0; len(busy) == 0 && wait < 30; wait++ {
			up, busy = up[:0], busy[:0]
			for _, h := range w.hosts {
				if _, ok := down[h]; ok {
					continue
				}
				up = append(up, h)
				if h.midRun() {
					busy = append(busy, h)
				}
			}
			if len(busy) == 0 {
				time.Sleep(100 * time.Millisecond)
			}
		}
		if len(busy) == 0 {
			busy = up
		}
		h := busy[rng.IntN(len(busy))]
		pids := h.kill()
		if slices.Contains(late, i) {
			down[h] = time.Now().Add(lease + 2*time.Second)
			t.Logf("kill %d: %s lost with %d agent processes; restarted after the lease", i+1, h.name, len(pids))
			continue
		}
		t.Logf("kill %d: %s lost with %d agent processes; restarted at once", i+1, h.name, len(pids))
		h.start()
	}
	for len(down) > 0 {
		time.Sleep(100 * time.Millisecond)
		restartDue(time.Now())
	}

	phase("the kills done")
	c := w.conn()
	quiet := w.waitQuiet(c, 8*time.Second, 4*time.Minute)
	phase(fmt.Sprintf("quiet (%v)", quiet))

	// The fleet's status, while every host runs: the three hosts, and
	// the leases the database holds (none, the board being quiet).
	var st struct {
		Hosts []struct {
			Host  string `json:"host"`
			Slots int    `json:"slots"`
			Runs  []struct {
				Task string `json:"task"`
				Host string `json:"host"`
			} `json:"runs"`
		} `json:"hosts"`
		Leader *struct {
			Host string `json:"host"`
		} `json:"leader"`
		Orphans []json.RawMessage `json:"orphans"`
	}
	if err := json.Unmarshal([]byte(h1.mustCra("fleet", "status", "--json")), &st); err != nil {
		t.Fatalf("cra fleet status --json: %v", err)
	}
	after, err := readBoard(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	statusLeases := map[string]string{}
	for _, h := range st.Hosts {
		names = append(names, h.Host)
		if h.Slots != 2 {
			t.Errorf("fleet status: host %s has %d slots, want 2 (max_parallel)", h.Host, h.Slots)
		}
		for _, r := range h.Runs {
			statusLeases[r.Task] = h.Host
		}
	}
	if !slices.Equal(names, []string{"h1", "h2", "h3"}) {
		t.Errorf("fleet status: hosts %v, want [h1 h2 h3]", names)
	}
	if fmt.Sprint(statusLeases) != fmt.Sprint(after.leases) || len(after.leases) != 0 || len(st.Orphans) != 0 {
		t.Errorf("fleet status: leases %v and orphans %d; the database: %v; want none on a quiet board", statusLeases, len(st.Orphans), after.leases)
	}
	if st.Leader == nil || !slices.Contains(names, st.Leader.Host) {
		t.Errorf("fleet status: leader %+v, want one of the hosts", st.Leader)
	}

	for _, h := range w.hosts {
		h.stop()
	}
	phase("the daemons stopped")
	w.checkDaemonLogs()
	// The recycler ran, on the leader: it asked the model of runs, and
	// the reviews closed tasks.
	if n := len(w.llm.ChatRequests()); n == 0 || quiet.count("completed-finalized") == 0 {
		t.Errorf("the recycler asked the model %d times and verified %d tasks: want reviews (%v)", n, quiet.count("completed-finalized"), quiet)
	}
	recs := w.readRecords()
	w.checkNoOverlap(w.spans(recs, time.Now()))

	// Every task in exactly one folder, the same in the list and the
	// database, and no task still to run.
	var list []struct {
		ID     string `json:"id"`
		Folder string `json:"folder"`
		Runs   int    `json:"runs"`
	}
	if err := json.Unmarshal([]byte(h1.mustCra("task", "list", "--json")), &list); err != nil {
		t.Fatalf("cra task list --json: %v", err)
	}
	final, err := readBoard(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != crashTasks || len(final.folders) != crashTasks {
		t.Errorf("cra task list has %d tasks, the database %d: want %d", len(list), len(final.folders), crashTasks)
	}
	seen := map[string]bool{}
	for _, tk := range list {
		if seen[tk.ID] {
			t.Errorf("task %s is listed twice", tk.ID)
		}
		seen[tk.ID] = true
		if f := final.folders[tk.ID]; f != tk.Folder {
			t.Errorf("task %s: cra task list says %s, the database %q", tk.ID, tk.Folder, f)
		}
		if tk.Folder == "pending" || tk.Folder == "in-progress" {
			t.Errorf("task %s is %s on a quiet board", tk.ID, tk.Folder)
		}
	}

	lines := w.checkExport(c, h1)
	w.logOverhead(lines, recs)
	runs, problems := runsOf(lines)
	for _, p := range problems {
		t.Error(p)
	}
	// Each run ended once: a finish, or a restart of its task.
	finished := map[string]bool{}
	restarts := 0
	for id, rs := range runs {
		for n, r := range rs {
			restarts += len(r.restarts)
			if r.finishes > 0 {
				finished[id] = true
			}
			if r.finishes+len(r.restarts) != 1 {
				t.Errorf("run %d of %s: %d finishes and restarts %q in the log, want one of them", n, id, r.finishes, r.restarts)
				w.explain(id, lines)
			}
		}
	}
	// Each agent ran on the host its run's active line names.
	for _, r := range recs {
		if rl := runs[r.task][r.run]; r.kind == "start" && (rl == nil || rl.host != r.host) {
			t.Errorf("run %d of %s: its agent ran on %s, the log names host %+v", r.run, r.task, r.host, rl)
		}
	}
	// Each run lost with its host was restarted.
	killedRuns := map[string]bool{}
	for _, r := range recs {
		if r.kind != "start" {
			continue
		}
		w.killMu.Lock()
		_, k := w.killed[r.pid]
		w.killMu.Unlock()
		if !k {
			continue
		}
		killedRuns[fmt.Sprintf("%s/%d", r.task, r.run)] = true
		if rl := runs[r.task][r.run]; rl == nil || len(rl.restarts) == 0 {
			t.Errorf("run %d of %s died with host %s but no restart of it is logged", r.run, r.task, r.host)
			w.explain(r.task, lines)
		}
	}
	t.Logf("%d agent starts recorded, %d runs lost with their host, %d restarts logged, %d tasks finished a run", countKind(recs, "start"), len(killedRuns), restarts, len(finished))
	if len(killedRuns) == 0 {
		t.Errorf("no kill caught an agent running: the test checked no takeover")
	}

	// Each run whose agent ended well (it wrote its work file) and whose
	// finish is logged is on the remote: its task's branch holds the
	// run's commit.
	checked := map[string]bool{}
	for _, r := range recs {
		key := fmt.Sprintf("%s/%d", r.task, r.run)
		if r.kind != "end" || r.code != "0" || checked[key] {
			continue
		}
		if rl := runs[r.task][r.run]; rl == nil || rl.finishes != 1 {
			continue // the host died before it logged the finish
		}
		checked[key] = true
		subjects := w.git(w.root, "--git-dir", w.remote, "log", "--format=%s", "refs/heads/cra/"+r.task, "--")
		if !strings.Contains(subjects, fmt.Sprintf("cra task %s run %d ", r.task, r.run)) {
			t.Errorf("run %d of %s finished on %s, but cra/%s on the remote lacks its commit:\n%s", r.run, r.task, r.host, r.task, subjects)
			w.explain(r.task, lines)
		}
	}
	if len(checked) == 0 {
		t.Errorf("no run finished: the test checked no branch")
	}
}

func countKind(recs []record, kind string) int {
	n := 0
	for _, r := range recs {
		if r.kind == kind {
			n++
		}
	}
	return n
}
