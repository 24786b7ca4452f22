package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/workspace"
)

// TestFleetStatusQuotesHostileRows: a row written past cra's checks (by
// hand, in the database) cannot forge a line or move the cursor.
func TestFleetStatusQuotesHostileRows(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := workspace.FleetState{Now: now}
	st.Hosts = []workspace.FleetHost{{}}
	st.Hosts[0].Name = "evil\nhost ok  heartbeat 0s ago"
	st.Hosts[0].Version = "\x1b[2J"
	st.Hosts[0].Heartbeat = now
	st.Hosts[0].Runs = []workspace.FleetLease{{TaskID: "T 1\r", RunID: "r-1", Host: "evil", Started: now, Expires: now.Add(time.Minute)}}
	var out strings.Builder
	if err := printFleetStatus(terminalSafe(&out), st, time.Minute); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		`host "evil\nhost ok  heartbeat 0s ago"  heartbeat 0s ago  runs 1/0  cra "\x1b[2J"` + "\n",
		`  "T 1\r"  run r-1  started 0s ago  lease ends in 1m0s` + "\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("status:\n%s\nwant it to hold %q", got, want)
		}
	}
	if strings.ContainsAny(got, "\x1b\r") || strings.Count(got, "\n") != 3 {
		t.Errorf("status %q: a control character or a forged line got through", got)
	}
}
