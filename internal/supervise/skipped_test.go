package supervise

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/world"
)

// TestPassReportsSkippedEntries: an agent entry appended by hand that the
// lifecycle forbids (a verified of a pending task) is told once, by the
// next pass, as an [event:system] line naming its line and why, which the
// board's supervisor strip shows; the pass after says nothing more.
func TestPassReportsSkippedEntries(t *testing.T) {
	ctx := context.Background()
	stateDir := t.TempDir()
	l, err := world.Open(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Agent(ctx, world.StatusStart, "t-1", "a task", "tests pass"); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(l.Path(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("[2026-01-02T03:04:05.000Z][agent:verified][t-1] verified by hand\n")
	f.Close()
	var out strings.Builder
	p := &Pass{Log: l, StateDir: stateDir, Out: &out, Only: func(Process) bool { return false }}
	reports := func() []string {
		t.Helper()
		var got []string
		err := l.Select(ctx, world.Filter{Sources: []world.Source{world.SourceSystem}}, func(r *world.Record) error {
			got = append(got, r.Entry.ID+": "+r.Entry.Output)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	for i := range 2 {
		if _, err := p.Run(ctx); err != nil {
			t.Fatal(err)
		}
		got := reports()
		if len(got) != 1 || !strings.HasPrefix(got[0], "t-1: skipped line 2 of the world log, [agent:verified][t-1] verified by hand: agent t-1 is start: it cannot go to verified") {
			t.Fatalf("pass %d: got reports %q, want one naming line 2", i+1, got)
		}
	}
	if a, _, _ := l.Lookup(ctx, "t-1"); a.Status != world.StatusStart {
		t.Errorf("got %s, want start", a.Status)
	}
	if !strings.Contains(out.String(), "warning: skipped line 2") {
		t.Errorf("output %q does not warn", out.String())
	}
}
