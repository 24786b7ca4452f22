package cli

import (
	"context"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/world"
)

func TestLogQueryAgents(t *testing.T) {
	repo := logRepo(t,
		agentStep(world.StatusStart, "T-1", "add a flag", "tests pass"), // 03:05:05
		agentStep(world.StatusActive, "T-1", "running solve", ""),       // 03:06:05
		agentStep(world.StatusStart, "T-2", "fix\na bug", ""),           // 03:07:05
		agentStep(world.StatusActive, "T-2", "running", ""),             // 03:08:05
		eventStep(world.SourceBash, "T-2", "go test"),                   // 03:09:05
		agentStep(world.StatusStart, "T-3", "docs", ""),                 // 03:10:05
		agentStep(world.StatusFailed, "T-3", "no access", "grant access"),
	)
	now := logT0.Add(time.Hour)
	tests := []struct {
		name string
		opts logQueryOptions
		want string
	}{
		{"current", logQueryOptions{current: true}, `ID   STATUS  SINCE                 SILENT  OUTPUT
T-1  active  2025-01-02T03:06:05Z  58m0s   running solve
T-2  active  2025-01-02T03:08:05Z  55m0s   running
T-3  failed  2025-01-02T03:11:05Z  53m0s   no access | need: grant access
`},
		{"limbo", logQueryOptions{limbo: 56 * time.Minute}, `ID   STATUS  SINCE                 SILENT  OUTPUT
T-1  active  2025-01-02T03:06:05Z  58m0s   running solve
`},
		{"nobody in limbo", logQueryOptions{limbo: 2 * time.Hour}, "no agent in limbo: every unsettled agent moved within 2h0m0s\n"},
		{"current of a status", logQueryOptions{current: true, logFilterFlags: logFilterFlags{statuses: []string{"failed"}}, logCommon: logCommon{json: true}},
			`{"id":"T-3","status":"failed","since":"2025-01-02T03:11:05Z","output":"no access","need":"grant access","last_seen":"2025-01-02T03:11:05Z","retries":0}` + "\n"},
		{"count", logQueryOptions{current: true, count: true, logFilterFlags: logFilterFlags{ids: []string{"T-1", "T-2"}}}, "2\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, out, errOut := logTestDeps(now)
			tc.opts.repo = repo
			if err := logQueryRun(context.Background(), d, &tc.opts); err != nil {
				t.Fatal(err)
			}
			if diff := deepDiff(tc.want, out.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if errOut.String() != "" {
				t.Errorf("got stderr %q, want none", errOut.String())
			}
		})
	}
}
