package fleet

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/fleetapi"
	"github.com/cra-dev/cra/internal/world"
)

// A task's runs are read from its active entries to the next agent
// entry; a fleet's active entry names the host that ran it.
func TestRunsFromTheLog(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 28, 20, 0, 0, 0, time.UTC)
	agent := func(sec int, st world.Status, out string) world.Entry {
		return world.Entry{Time: at.Add(time.Duration(sec) * time.Second), Kind: world.KindAgent, Status: st, ID: "t-1", Output: out}
	}
	entries := []world.Entry{
		agent(0, world.StatusStart, "a task"),
		agent(1, world.StatusActive, "run 1: script"),
		agent(3, world.StatusFinish, "run failed: exit 2: no"),
		agent(4, world.StatusRetry, "restarted by the fleet's leader: host h1 stopped renewing"),
		agent(5, world.StatusActive, "run 2: claude on host build-2"),
		{Time: at.Add(6 * time.Second), Kind: world.KindEvent, Source: world.SourceSystem, ID: "t-1", Output: "noise"},
		agent(9, world.StatusFinish, "exit 0: done"),
		agent(10, world.StatusActive, "run 3: script on host h1"),
	}
	zero, two := 0, 2
	want := []fleetapi.Run{
		{N: 1, Profile: "script", Started: at.Add(time.Second), Finished: at.Add(3 * time.Second), DurationMS: 2000, Outcome: "run failed: exit 2: no", ExitCode: &two},
		{N: 2, Profile: "claude", Host: "build-2", Started: at.Add(5 * time.Second), Finished: at.Add(9 * time.Second), DurationMS: 4000, Outcome: "exit 0: done", ExitCode: &zero},
		{N: 3, Profile: "script", Host: "h1", Started: at.Add(10 * time.Second)},
	}
	if diff := cmp.Diff(want, runs(entries, "")); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
}
