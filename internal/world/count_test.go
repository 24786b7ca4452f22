package world

import (
	"context"
	"testing"
	"time"
)

// TestCountAgentsAgreesWithTheViews: the count from the side index equals
// the length of Current and Limbo under the same filter.
func TestCountAgentsAgreesWithTheViews(t *testing.T) {
	l, c := newTestLog(t)
	ctx := context.Background()
	for _, step := range []struct {
		id     string
		status Status
	}{{"a", StatusStart}, {"a", StatusActive}, {"b", StatusStart}, {"c", StatusStart}, {"c", StatusFailed}, {"b", StatusActive}, {"b", StatusFinish}} {
		c.advance(time.Minute)
		if _, err := l.Agent(ctx, step.status, step.id, "x", ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Append(ctx, Entry{Time: c.now.Add(5 * time.Hour), Kind: KindAgent, Status: StatusStart, ID: "ahead"}); err != nil {
		t.Fatal(err)
	}
	c.advance(time.Hour)
	failed := Filter{Statuses: []Status{StatusFailed}}
	for _, tc := range []struct {
		silent time.Duration
		f      Filter
	}{{0, Filter{}}, {0, failed}, {30 * time.Minute, Filter{}}, {2 * time.Hour, Filter{}}} {
		var agents []Agent
		var err error
		if tc.silent > 0 {
			agents, err = l.Limbo(ctx, tc.silent)
		} else {
			agents, err = l.Current(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		for _, a := range agents {
			if tc.f.Match(Entry{Kind: KindAgent, Status: a.Status, ID: a.ID, Time: a.Since}) {
				want++
			}
		}
		got, err := l.CountAgents(ctx, tc.silent, tc.f.Match)
		if err != nil || got != want {
			t.Errorf("silent %v, filter %+v: got %d, %v; want %d", tc.silent, tc.f, got, err, want)
		}
	}
}
