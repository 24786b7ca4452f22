package fleet

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/pgstore"
	"github.com/cra-dev/cra/internal/pgtest"
)

// TestRemoteRunsFromLeases: the leader's Level 2 sees the runs the other
// hosts hold, not its own, each with the last output its host's renewal
// reported, put on the leader's clock (a day ahead of the database's
// here) by its age; its stop revokes the run's lease, which the holder's
// next renewal reports lost with the reason, and the run shows revoked.
func TestRemoteRunsFromLeases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.DB(t)
	if _, _, err := pgstore.Init(ctx, url); err != nil {
		t.Fatal(err)
	}
	f, err := pgstore.OpenFleet(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mine, err := f.Claim(ctx, "lead", []string{"T-1"}, 1, time.Minute)
	if err != nil || len(mine) != 1 {
		t.Fatalf("lead claimed %v (%v)", mine, err)
	}
	theirs, err := f.Claim(ctx, "b", []string{"T-2", "T-3"}, 2, time.Minute)
	if err != nil || len(theirs) != 2 {
		t.Fatalf("b claimed %v (%v)", theirs, err)
	}
	theirs[0].LastOutput = time.Now().Add(-5 * time.Minute)
	if _, err := f.Renew(ctx, "b", theirs, time.Minute); err != nil {
		t.Fatal(err)
	}
	ahead := time.Now().Add(24 * time.Hour)
	rr := newRemoteRuns(f, "lead").(*remoteRuns)
	rr.now = func() time.Time { return ahead }
	runs, err := rr.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 {
		t.Fatalf("runs %+v, want b's T-2 and T-3 alone", runs)
	}
	r2 := runs["T-2"]
	if r2.Host != "b" || r2.RunID != theirs[0].RunID || r2.Revoked != "" {
		t.Errorf("T-2 %+v, want b's run %s", r2, theirs[0].RunID)
	}
	// Five minutes before the leader's now, give or take the test's own
	// time between the renewal and the read.
	if age := ahead.Sub(r2.LastOutput); age < 5*time.Minute || age > 6*time.Minute {
		t.Errorf("T-2's last output is %v before the leader's now, want 5 minutes", age)
	}
	if age := ahead.Sub(r2.Renewed); age < 0 || age > time.Minute {
		t.Errorf("T-2 renewed %v before the leader's now, want just now", age)
	}
	if !runs["T-3"].LastOutput.IsZero() {
		t.Errorf("T-3's last output %v, want none (never reported)", runs["T-3"].LastOutput)
	}
	const why = "stale: no output and no log line for 20m0s (on host b)"
	if ok, err := rr.Stop(ctx, "T-2", theirs[0].RunID, why); err != nil || !ok {
		t.Fatalf("stop: %v, %v; want true", ok, err)
	}
	if ok, err := rr.Stop(ctx, "T-2", theirs[0].RunID, why); err != nil || ok {
		t.Errorf("stop again: %v, %v; want false", ok, err)
	}
	lost, err := f.Renew(ctx, "b", theirs, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(lost) != 1 || lost[0].TaskID != "T-2" || !strings.Contains(lost[0].Reason, why) {
		t.Errorf("b lost %+v, want T-2, with why", lost)
	}
	if runs, err = rr.Runs(ctx); err != nil || runs["T-2"].Revoked != why {
		t.Errorf("T-2 after the stop: %+v (%v), want revoked with why", runs["T-2"], err)
	}
}
