package pgstore

import (
	"context"
	"strings"
	"testing"
	"time"
)

// dbNow reads the database's clock.
func dbNow(t *testing.T, f *Fleet) time.Time {
	t.Helper()
	var now time.Time
	if err := f.pool.QueryRow(context.Background(), "SELECT clock_timestamp()").Scan(&now); err != nil {
		t.Fatal(err)
	}
	return now
}

func leaseOf(t *testing.T, f *Fleet, task string) Lease {
	t.Helper()
	ls, err := f.Leases(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		if l.TaskID == task {
			return l
		}
	}
	t.Fatalf("no lease of %s in %+v", task, ls)
	return Lease{}
}

// TestRenewStoresLastOutput: a renewal stores each held run's last
// output time, by the database's clock (its age as the host gave it),
// never moves it back (a later renewal with an older time, or with none,
// leaves it), takes a time after the host's now as now (its clock
// stepped back), and Leases and Status return it.
func TestRenewStoresLastOutput(t *testing.T) {
	ctx := context.Background()
	f, _ := openFleet(t)
	if err := f.Heartbeat(ctx, Host{Name: "a", Started: time.Now(), Slots: 3, Version: "test"}); err != nil {
		t.Fatal(err)
	}
	held, err := f.Claim(ctx, "a", []string{"T-1", "T-2", "T-3"}, 3, time.Minute)
	if err != nil || len(held) != 3 {
		t.Fatalf("claimed %v (%v)", held, err)
	}
	before := dbNow(t, f)
	held[0].LastOutput = time.Now().Add(-5 * time.Minute)
	held[2].LastOutput = time.Now().Add(time.Hour) // this host's clock stepped back since
	if lost, err := f.Renew(ctx, "a", held, time.Minute); err != nil || len(lost) != 0 {
		t.Fatalf("renewal lost %v (%v)", lost, err)
	}
	after := dbNow(t, f)
	// Stored by the database's clock: 5 minutes before the renewal's
	// statement, which ran between before and after.
	got := leaseOf(t, f, "T-1").LastOutput
	if lo, hi := before.Add(-5*time.Minute-after.Sub(before)), after.Add(-5*time.Minute); got.Before(lo) || got.After(hi) {
		t.Fatalf("T-1's last output %v, want 5 minutes before the renewal, within [%v, %v]", got, lo, hi)
	}
	if l := leaseOf(t, f, "T-2"); !l.LastOutput.IsZero() {
		t.Errorf("T-2's last output %v, want none (never given)", l.LastOutput)
	}
	if l := leaseOf(t, f, "T-3"); l.LastOutput.Before(before) || l.LastOutput.After(after) {
		t.Errorf("T-3's last output %v: a time after the host's now is stored as the renewal's now, within [%v, %v]", l.LastOutput, before, after)
	}
	// An older time, or none, leaves it.
	held[0].LastOutput = time.Now().Add(-time.Hour)
	if _, err := f.Renew(ctx, "a", held, time.Minute); err != nil {
		t.Fatal(err)
	}
	held[0].LastOutput = time.Time{}
	if _, err := f.Renew(ctx, "a", held, time.Minute); err != nil {
		t.Fatal(err)
	}
	if l := leaseOf(t, f, "T-1"); !l.LastOutput.Equal(got) {
		t.Errorf("T-1's last output moved from %v to %v: an older time or none must leave it", got, l.LastOutput)
	}
	// A newer one moves it.
	held[0].LastOutput = time.Now()
	if _, err := f.Renew(ctx, "a", held, time.Minute); err != nil {
		t.Fatal(err)
	}
	newer := leaseOf(t, f, "T-1").LastOutput
	if !newer.After(got.Add(4 * time.Minute)) {
		t.Errorf("T-1's last output %v after a renewal with the output of now, want about now (was %v)", newer, got)
	}
	st, err := f.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Hosts) != 1 || len(st.Hosts[0].Runs) != 3 || !st.Hosts[0].Runs[0].LastOutput.Equal(newer) {
		t.Errorf("status %+v: want a's three runs, T-1's last output %v", st.Hosts, newer)
	}
}

// TestRevokeStopsTheHolderFirst: a revoked lease is reported lost to its
// holder with the reason, and its task is claimed by no other host until
// the holder released it or the lease ran out; then it is free, not a
// takeover (the revoker restarted it), and a sweep drops it without a
// restart.
func TestRevokeStopsTheHolderFirst(t *testing.T) {
	ctx := context.Background()
	a, url := openFleet(t)
	b := fleetAt(t, url)
	held, err := a.Claim(ctx, "a", []string{"T-1", "T-2", "T-3"}, 3, time.Minute)
	if err != nil || len(held) != 3 {
		t.Fatalf("claimed %v (%v)", held, err)
	}
	held[0].LastOutput = time.Now()
	if _, err := a.Renew(ctx, "a", held, time.Minute); err != nil {
		t.Fatal(err)
	}
	const why = "stale: no output and no log line for 20m0s"
	if ok, err := b.Revoke(ctx, "T-1", held[1].RunID, why); err != nil || ok {
		t.Fatalf("revoking T-1 by T-2's run: %v, %v; want false", ok, err)
	}
	for _, l := range held {
		if ok, err := b.Revoke(ctx, l.TaskID, l.RunID, why); err != nil || !ok {
			t.Fatalf("revoke %s: %v, %v; want true", l.TaskID, ok, err)
		}
	}
	if ok, err := b.Revoke(ctx, "T-1", held[0].RunID, why); err != nil || ok {
		t.Fatalf("revoking T-1 again: %v, %v; want false", ok, err)
	}
	if l := leaseOf(t, a, "T-1"); l.Revoked != why {
		t.Errorf("T-1's lease says revoked %q, want %q", l.Revoked, why)
	}
	lost, err := a.Renew(ctx, "a", held, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(lost) != 3 {
		t.Fatalf("a lost %+v, want its three revoked runs", lost)
	}
	for i, lo := range lost {
		if lo.TaskID != held[i].TaskID || lo.RunID != held[i].RunID || lo.Holder != "" ||
			!strings.Contains(lo.Reason, "the leader revoked host a's lease on run "+held[i].RunID) || !strings.Contains(lo.Reason, why) {
			t.Errorf("lost %+v: want %s revoked, with the reason, held by no one", lo, held[i].TaskID)
		}
	}
	// No one takes the tasks while a may still run them.
	if got, err := b.Claim(ctx, "b", []string{"T-1", "T-2", "T-3"}, 3, time.Minute); err != nil || len(got) != 0 {
		t.Fatalf("b claimed %+v (%v) before a let its revoked runs go", got, err)
	}
	// a stopped T-1's copy and released it; T-2's lease ran out.
	if ok, err := a.Release(ctx, "a", held[0].RunID); err != nil || !ok {
		t.Fatalf("a's release of its revoked run: %v, %v; want true", ok, err)
	}
	expire(t, a, "T-2", "T-3")
	got, err := b.Claim(ctx, "b", []string{"T-1", "T-2"}, 2, time.Minute)
	if err != nil || len(got) != 2 {
		t.Fatalf("b claimed %+v (%v), want T-1 and T-2", got, err)
	}
	for _, l := range got {
		if l.PrevHost != "" || l.Reason != "" || l.Revoked != "" || !l.LastOutput.IsZero() {
			t.Errorf("b's lease %+v: want a fresh one, no takeover, no revocation, no output", l)
		}
	}
	if l := leaseOf(t, b, "T-2"); l.Revoked != "" || !l.LastOutput.IsZero() {
		t.Errorf("T-2's stored lease %+v keeps the revoked one's fields", l)
	}
	swept, err := b.Sweep(ctx)
	if err != nil || len(swept) != 0 {
		t.Fatalf("sweep %+v (%v): want no restart of the revoked T-3", swept, err)
	}
	ls, err := b.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ids := strings.Join(taskIDs(ls), " "); ids != "T-1 T-2" && ids != "T-2 T-1" {
		t.Errorf("leases %s after the sweep, want b's T-1 T-2 (T-3 dropped)", ids)
	}
}
