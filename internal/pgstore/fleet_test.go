package pgstore

import (
	"context"

	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/pgtest"
)

// openFleet returns the fleet of a new database of the test cluster, its
// schema made by Init, and the database's URL, for more hosts.
func openFleet(t testing.TB) (*Fleet, string) {
	t.Helper()
	ctx := context.Background()
	url := pgtest.DB(t)
	if _, _, err := Init(ctx, url); err != nil {
		t.Fatal(err)
	}
	return fleetAt(t, url), url
}

func fleetAt(t testing.TB, url string) *Fleet {
	t.Helper()
	f, err := OpenFleet(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

// expire ends the leases of tasks now, by the database's clock: the time
// of a lease passing, without the wait.
func expire(t *testing.T, f *Fleet, tasks ...string) {
	t.Helper()
	tag, err := f.pool.Exec(context.Background(), "UPDATE run_leases SET expires = now() - interval '1 second' WHERE task_id = ANY($1)", tasks)
	if err != nil {
		t.Fatal(err)
	}
	if int(tag.RowsAffected()) != len(tasks) {
		t.Fatalf("expired %d leases, want %d", tag.RowsAffected(), len(tasks))
	}
}

func taskIDs(ls []Lease) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.TaskID
	}
	return out
}

func tasks(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("T-%d", i+1)
	}
	return out
}

// TestClaimTakesTheBoardsOrder: a claim takes the first free candidates,
// skips those under a live lease, and never gives a task twice.
func TestClaimTakesTheBoardsOrder(t *testing.T) {
	ctx := context.Background()
	f, _ := openFleet(t)
	const lease = time.Minute
	got, err := f.Claim(ctx, "a", []string{"T-3", "T-1", "T-2", "T-1"}, 2, lease)
	if err != nil {
		t.Fatal(err)
	}
	if ids := strings.Join(taskIDs(got), " "); ids != "T-3 T-1" {
		t.Fatalf("claimed %s, want T-3 T-1 (the board's order)", ids)
	}
	for _, l := range got {
		if l.Host != "a" || !strings.HasPrefix(l.RunID, "r-") || l.PrevHost != "" || l.Reason != "" || !l.Expires.After(l.Started) {
			t.Errorf("lease %+v: want host a, a run ID, no takeover, expiring after its start", l)
		}
	}
	got, err = f.Claim(ctx, "b", []string{"T-3", "T-1", "T-2", "T-4"}, 5, lease)
	if err != nil {
		t.Fatal(err)
	}
	if ids := strings.Join(taskIDs(got), " "); ids != "T-2 T-4" {
		t.Fatalf("b claimed %s, want T-2 T-4 (T-3 and T-1 are a's)", ids)
	}
	got, err = f.Claim(ctx, "c", []string{"T-1", "T-2", "T-3", "T-4"}, 5, lease)
	if err != nil || len(got) != 0 {
		t.Fatalf("c claimed %v (%v), want nothing: every task is under a live lease", taskIDs(got), err)
	}
}

// TestClaimsAtOnceNeverShare: three hosts claiming the same candidates
// at once take each task once.
func TestClaimsAtOnceNeverShare(t *testing.T) {
	ctx := context.Background()
	_, url := openFleet(t)
	all := tasks(60)
	var mu sync.Mutex
	owner := map[string]string{}
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for _, host := range []string{"a", "b", "c"} {
		f := fleetAt(t, url)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, err := f.Claim(ctx, host, all, 3, time.Minute)
				if err != nil {
					errs <- err
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, l := range got {
					if prev, ok := owner[l.TaskID]; ok {
						errs <- fmt.Errorf("%s claimed by %s and %s", l.TaskID, prev, host)
					}
					owner[l.TaskID] = host
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(owner) != len(all) {
		t.Errorf("%d tasks claimed, want %d", len(owner), len(all))
	}
}

// TestTakeoverAfterTheLease: a host cut off for longer than its lease
// finds its runs taken over when it comes back, each takeover saying
// why (a restart), and its renewal names the runs it must stop.
func TestTakeoverAfterTheLease(t *testing.T) {
	ctx := context.Background()
	a, url := openFleet(t)
	b := fleetAt(t, url)
	const lease = time.Minute
	started := time.Now()
	for _, h := range []string{"a", "b"} {
		if err := a.Heartbeat(ctx, Host{Name: h, Started: started, Slots: 2, Version: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	held, err := a.Claim(ctx, "a", []string{"T-1", "T-2"}, 2, lease)
	if err != nil || len(held) != 2 {
		t.Fatalf("a claimed %v (%v), want T-1 T-2", held, err)
	}
	// While the leases live, a renews them and b gets nothing.
	if lost, err := a.Renew(ctx, "a", held, lease); err != nil || len(lost) != 0 {
		t.Fatalf("a's renewal lost %v (%v), want nothing", lost, err)
	}
	if got, err := b.Claim(ctx, "b", []string{"T-1", "T-2"}, 2, lease); err != nil || len(got) != 0 {
		t.Fatalf("b claimed %v (%v) under a's live leases", got, err)
	}

	// a is cut off past its lease: b takes the runs over.
	expire(t, a, "T-1", "T-2")
	taken, err := b.Claim(ctx, "b", []string{"T-1", "T-2"}, 2, lease)
	if err != nil || len(taken) != 2 {
		t.Fatalf("b claimed %v (%v), want T-1 and T-2 taken over", taken, err)
	}
	for i, l := range taken {
		if l.Host != "b" || l.PrevHost != "a" || l.RunID == held[i].RunID {
			t.Errorf("takeover %+v: want host b, prev host a, a new run", l)
		}
		want := fmt.Sprintf("restart: host a stopped renewing its lease on run %s of %s", held[i].RunID, l.TaskID)
		if !strings.HasPrefix(l.Reason, want) {
			t.Errorf("takeover reason %q, want it to start %q", l.Reason, want)
		}
	}

	// a comes back: its renewal names both runs as lost, to b.
	lost, err := a.Renew(ctx, "a", held, lease)
	if err != nil {
		t.Fatal(err)
	}
	if len(lost) != 2 {
		t.Fatalf("a lost %v, want both runs", lost)
	}
	for i, lo := range lost {
		if lo.TaskID != held[i].TaskID || lo.RunID != held[i].RunID || lo.Holder != "b" || lo.HolderRun != taken[i].RunID {
			t.Errorf("lost %+v: want %s's run %s, now b's %s", lo, held[i].TaskID, held[i].RunID, taken[i].RunID)
		}
		if !strings.Contains(lo.Reason, "host b took it over") || !strings.Contains(lo.Reason, "stop this copy") {
			t.Errorf("lost reason %q: want it to name b and say to stop", lo.Reason)
		}
	}
	// Its run ends: the release frees nothing of b's.
	if ok, err := a.Release(ctx, "a", held[0].RunID); err != nil || ok {
		t.Errorf("a released its lost run: %v, %v; want false", ok, err)
	}
	if lost, err := b.Renew(ctx, "b", taken, lease); err != nil || len(lost) != 0 {
		t.Errorf("b's renewal lost %v (%v), want nothing", lost, err)
	}
	if ok, err := b.Release(ctx, "b", taken[0].RunID); err != nil || !ok {
		t.Errorf("b's release: %v, %v; want true", ok, err)
	}
	if got, err := a.Claim(ctx, "a", []string{"T-1"}, 1, lease); err != nil || len(got) != 1 || got[0].Reason != "" {
		t.Errorf("a claimed %+v (%v) after b's release, want T-1, no takeover", got, err)
	}
}

// TestRenewKeepsALeaseNoOneTook: a lease past its expiry that no host
// took over is still its host's, and renewed; then no one may take it.
func TestRenewKeepsALeaseNoOneTook(t *testing.T) {
	ctx := context.Background()
	f, _ := openFleet(t)
	held, err := f.Claim(ctx, "a", []string{"T-1"}, 1, time.Minute)
	if err != nil || len(held) != 1 {
		t.Fatalf("claimed %v (%v)", held, err)
	}
	expire(t, f, "T-1")
	if lost, err := f.Renew(ctx, "a", held, time.Minute); err != nil || len(lost) != 0 {
		t.Fatalf("renewal lost %v (%v), want nothing", lost, err)
	}
	if got, err := f.Claim(ctx, "b", []string{"T-1"}, 1, time.Minute); err != nil || len(got) != 0 {
		t.Fatalf("b took %v (%v) after a renewed", got, err)
	}
}

// TestSweepFreesExpiredLeases: the leader's sweep returns the leases a
// host stopped renewing, with the reason; their tasks are free.
func TestSweepFreesExpiredLeases(t *testing.T) {
	ctx := context.Background()
	f, _ := openFleet(t)
	if err := f.Heartbeat(ctx, Host{Name: "a", Started: time.Now(), Slots: 3, Version: "test"}); err != nil {
		t.Fatal(err)
	}
	held, err := f.Claim(ctx, "a", []string{"T-1", "T-2"}, 2, time.Minute)
	if err != nil || len(held) != 2 {
		t.Fatalf("claimed %v (%v)", held, err)
	}
	if _, err := f.Claim(ctx, "ghost", []string{"T-3"}, 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	expire(t, f, "T-2", "T-3")
	swept, err := f.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(swept) != 2 {
		t.Fatalf("swept %v, want T-2 and T-3", swept)
	}
	byTask := map[string]Expired{}
	for _, e := range swept {
		byTask[e.TaskID] = e
	}
	if e := byTask["T-2"]; e.Host != "a" || e.RunID != held[1].RunID || e.LastHeartbeat.IsZero() ||
		!strings.HasPrefix(e.Reason, "restart: host a stopped renewing its lease on run "+held[1].RunID+" of T-2") ||
		!strings.Contains(e.Reason, "its last heartbeat was at") {
		t.Errorf("swept T-2 as %+v: want a's run with its heartbeat in the reason", e)
	}
	if e := byTask["T-3"]; !strings.Contains(e.Reason, "it never sent a heartbeat") {
		t.Errorf("swept T-3 with reason %q: want it to say the host never beat", e.Reason)
	}
	if again, err := f.Sweep(ctx); err != nil || len(again) != 0 {
		t.Errorf("a second sweep: %v (%v), want nothing", again, err)
	}
	got, err := f.Claim(ctx, "b", []string{"T-1", "T-2", "T-3"}, 3, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if ids := strings.Join(taskIDs(got), " "); ids != "T-2 T-3" || got[0].Reason != "" {
		t.Errorf("b claimed %s (%+v), want T-2 T-3, fresh (the sweep said why)", ids, got)
	}
}

// TestLeaderTakesTurns: one leader at a time; another takes the lead once
// the leader's lease ends, or at once when it resigns, each time with the
// next term.
func TestLeaderTakesTurns(t *testing.T) {
	ctx := context.Background()
	f, _ := openFleet(t)
	if l, err := f.CurrentLeader(ctx); err != nil || l != nil {
		t.Fatalf("leader of a new fleet: %v (%v), want none", l, err)
	}
	step := func(host string, wantWon bool, wantHost string, wantTerm int64) {
		t.Helper()
		l, won, err := f.Campaign(ctx, host, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if won != wantWon || l.Host != wantHost || l.Term != wantTerm {
			t.Fatalf("campaign of %s: won %v, leader %s term %d; want %v, %s, %d", host, won, l.Host, l.Term, wantWon, wantHost, wantTerm)
		}
	}
	step("a", true, "a", 1)
	step("b", false, "a", 1)
	step("a", true, "a", 1) // a renewal keeps the term
	if _, err := f.pool.Exec(ctx, "UPDATE fleet_leader SET expires = now() - interval '1 second'"); err != nil {
		t.Fatal(err)
	}
	step("b", true, "b", 2)
	step("a", false, "b", 2)
	if ok, err := f.Resign(ctx, "a"); err != nil || ok {
		t.Fatalf("a resigned a lead it lacks: %v, %v", ok, err)
	}
	if ok, err := f.Resign(ctx, "b"); err != nil || !ok {
		t.Fatalf("b's resignation: %v, %v; want true", ok, err)
	}
	step("a", true, "a", 3)
}

// TestElectorReelects: two hosts campaign; the leader dies (its
// connections closed, so it renews no more) and the other takes the
// duties over once the lease ends, while the dead one stops its own.
func TestElectorReelects(t *testing.T) {
	_, url := openFleet(t)
	const lease = 600 * time.Millisecond
	type host struct {
		fleet   *Fleet
		leading chan struct{} // closed when its duties start
		stopped chan struct{} // closed when they end
		cancel  context.CancelFunc
		done    chan error
	}
	start := func(name string) *host {
		f, err := OpenFleet(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		h := &host{fleet: f, leading: make(chan struct{}), stopped: make(chan struct{}), done: make(chan error, 1)}
		ctx, cancel := context.WithCancel(context.Background())
		h.cancel = cancel
		var once sync.Once
		e := &Elector{Fleet: f, Host: name, Lease: lease, Duties: func(ctx context.Context) error {
			once.Do(func() { close(h.leading) })
			<-ctx.Done()
			close(h.stopped)
			return ctx.Err()
		}}
		go func() { h.done <- e.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-h.done; f.Close() })
		return h
	}
	wait := func(ch chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: not after 30s", what)
		}
	}
	a := start("a")
	wait(a.leading, "a leads")
	b := start("b")
	select {
	case <-b.leading:
		t.Fatal("b leads while a renews its lead")
	case <-time.After(2 * lease):
	}
	a.fleet.Close() // a dies: it renews no more
	wait(a.stopped, "a stops its duties once its lease ran out")
	wait(b.leading, "b takes the lead")
	l, err := b.fleet.CurrentLeader(context.Background())
	if err != nil || l == nil || l.Host != "b" || l.Term != 2 {
		t.Fatalf("leader %+v (%v), want b in term 2", l, err)
	}
}

// TestFleetRefusesBadInput: names another host would print or match
// are checked, each refusal naming the fix.
func TestFleetRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	f, _ := openFleet(t)
	now := time.Now()
	cases := []struct {
		name string
		run  func() error
		want string
	}{
		{"empty host", func() error { return f.Heartbeat(ctx, Host{Started: now}) }, "host name is empty: name it"},
		{"host with a newline", func() error { return f.Heartbeat(ctx, Host{Name: "a\nb", Started: now}) }, "holds a space or a control character"},
		{"long host", func() error { return f.Heartbeat(ctx, Host{Name: strings.Repeat("h", 65), Started: now}) }, "use at most 64"},
		{"negative slots", func() error { return f.Heartbeat(ctx, Host{Name: "a", Started: now, Slots: -1}) }, "give 0 to 1024"},
		{"no start", func() error { return f.Heartbeat(ctx, Host{Name: "a"}) }, "no start time"},
		{"bad task", func() error { _, err := f.Claim(ctx, "a", []string{"T 1"}, 1, time.Minute); return err }, "task ID \"T 1\" holds a space"},
		{"zero lease", func() error { _, err := f.Claim(ctx, "a", []string{"T-1"}, 1, 0); return err }, "give a positive duration"},
		{"renew zero lease", func() error { _, err := f.Renew(ctx, "a", []Lease{{TaskID: "T"}}, 0); return err }, "give a positive duration"},
		{"campaign no host", func() error { _, _, err := f.Campaign(ctx, "", time.Minute); return err }, "host name is empty"},
		{"revoke no reason", func() error { _, err := f.Revoke(ctx, "T-1", "r-1", ""); return err }, "no reason: say why"},
		{"revoke two lines", func() error { _, err := f.Revoke(ctx, "T-1", "r-1", "stale\n[event:system] forged"); return err }, "give one line"},
		{"revoke no run", func() error { _, err := f.Revoke(ctx, "T-1", "", "stale"); return err }, "run ID is empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestStatusGroupsRunsByHost: the status lists each host with its runs,
// and a lease of a host that never beat apart.
func TestStatusGroupsRunsByHost(t *testing.T) {
	ctx := context.Background()
	f, _ := openFleet(t)
	for _, h := range []Host{{Name: "b", Slots: 2, Version: "v2"}, {Name: "a", Slots: 4, Version: "v1"}} {
		h.Started = time.Now()
		if err := f.Heartbeat(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ host, task string }{{"a", "T-1"}, {"b", "T-2"}, {"a", "T-3"}, {"gone", "T-4"}} {
		if _, err := f.Claim(ctx, c.host, []string{c.task}, 1, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := f.Campaign(ctx, "b", time.Minute); err != nil {
		t.Fatal(err)
	}
	st, err := f.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range st.Hosts {
		got = append(got, fmt.Sprintf("%s:%d:%s:%s", h.Name, h.Slots, h.Version, strings.Join(taskIDs(h.Runs), ",")))
		if h.Age < 0 || h.Age > time.Hour {
			t.Errorf("host %s's heartbeat age %v: want the time since its heartbeat", h.Name, h.Age)
		}
	}
	if s := strings.Join(got, " "); s != "a:4:v1:T-1,T-3 b:2:v2:T-2" {
		t.Errorf("hosts %s, want a:4:v1:T-1,T-3 b:2:v2:T-2", s)
	}
	if len(st.Orphans) != 1 || st.Orphans[0].Host != "gone" {
		t.Errorf("orphans %+v, want gone's T-4", st.Orphans)
	}
	if st.Leader == nil || st.Leader.Host != "b" {
		t.Errorf("leader %+v, want b", st.Leader)
	}
}

// putTasks writes board rows for ids in folder (the body is not read
// here).
func putTasks(t testing.TB, f *Fleet, folder string, ids ...string) {
	t.Helper()
	_, err := f.pool.Exec(context.Background(), `INSERT INTO board_tasks (id, folder, body, updated_ms)
		SELECT id, $2, convert_to('id: ' || id, 'UTF8'), 0 FROM unnest($1::text[]) AS id`, ids, folder)
	if err != nil {
		t.Fatal(err)
	}
}

// TestClaimPendingFollowsTheBoard: a claim over the board takes only
// pending tasks, in the order given, skips a row another transaction
// holds locked instead of waiting for it, and still takes over a task in
// progress on a host whose lease expired.
func TestClaimPendingFollowsTheBoard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f, _ := openFleet(t)
	putTasks(t, f, "pending", "T-1", "T-3", "T-4", "T-5")
	putTasks(t, f, "in-progress", "T-2")
	// Another host is moving T-1: its row is locked.
	tx, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT 1 FROM board_tasks WHERE id = 'T-1' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	got, err := f.ClaimPending(ctx, "a", []string{"T-2", "T-1", "T-3", "T-9", "T-4"}, 2, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if ids := strings.Join(taskIDs(got), " "); ids != "T-3 T-4" {
		t.Fatalf("claimed %s, want T-3 T-4 (T-2 is in progress, T-1 locked, T-9 not on the board)", ids)
	}
	tx.Rollback(ctx)
	// a dies with T-3 in progress: b takes it over, though it is no
	// longer pending, and T-1, free again.
	expire(t, f, "T-3")
	if _, err := f.pool.Exec(ctx, "UPDATE board_tasks SET folder = 'in-progress' WHERE id = 'T-3'"); err != nil {
		t.Fatal(err)
	}
	got, err = f.ClaimPending(ctx, "b", []string{"T-1", "T-3", "T-5"}, 2, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if ids := strings.Join(taskIDs(got), " "); ids != "T-1 T-3" || got[1].PrevHost != "a" {
		t.Fatalf("b claimed %s (%+v), want T-1 and T-3 taken over from a", ids, got)
	}
}

// TestClaimPendingAtOnce: three hosts claiming the board's pending tasks
// at once take each once.
func TestClaimPendingAtOnce(t *testing.T) {
	ctx := context.Background()
	f, url := openFleet(t)
	all := tasks(60)
	putTasks(t, f, "pending", all...)
	var mu sync.Mutex
	owner := map[string]string{}
	var wg sync.WaitGroup
	for _, host := range []string{"a", "b", "c"} {
		h := fleetAt(t, url)
		wg.Go(func() {
			for {
				got, err := h.ClaimPending(ctx, host, all, 2, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, l := range got {
					if prev, ok := owner[l.TaskID]; ok {
						t.Errorf("%s claimed by %s and %s", l.TaskID, prev, host)
					}
					owner[l.TaskID] = host
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(owner) != len(all) {
		t.Errorf("%d tasks claimed, want %d", len(owner), len(all))
	}
}

// TestKeeperStopsLostRuns: a host whose passes stopped for longer than
// its lease (cut off) finds, on its first pass back, the run another host
// took over, and stops it; the run it still holds is renewed.
func TestKeeperStopsLostRuns(t *testing.T) {
	ctx := context.Background()
	a, url := openFleet(t)
	b := fleetAt(t, url)
	held, err := a.Claim(ctx, "a", []string{"T-1", "T-2"}, 2, time.Minute)
	if err != nil || len(held) != 2 {
		t.Fatalf("claimed %v (%v)", held, err)
	}
	var stopped []Lost
	k := &Keeper{Fleet: a, Host: Host{Name: "a", Started: time.Now(), Slots: 2, Version: "test"}, Lease: time.Minute,
		Held: func() []Lease { return held }, Lost: func(l Lost) { stopped = append(stopped, l) }}
	if err := k.Pass(ctx); err != nil || len(stopped) != 0 {
		t.Fatalf("first pass: %v, stopped %v; want nothing stopped", err, stopped)
	}
	expire(t, a, "T-1")
	if _, err := b.Claim(ctx, "b", []string{"T-1"}, 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := k.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if len(stopped) != 1 || stopped[0].TaskID != "T-1" || stopped[0].Holder != "b" {
		t.Fatalf("stopped %+v, want T-1, now b's", stopped)
	}
	st, err := a.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Hosts) != 1 || st.Hosts[0].Name != "a" || len(st.Hosts[0].Runs) != 1 || st.Hosts[0].Runs[0].TaskID != "T-2" {
		t.Errorf("status %+v: want host a holding T-2 alone", st.Hosts)
	}
}
