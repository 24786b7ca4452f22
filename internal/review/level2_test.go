package review

import (
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/supervise"
)

// Level 2's restarts come stale_after apart at the soonest; the window
// they are counted in holds the start limit of them, so a run that
// always stalls is blocked in the end.
func TestLevelTwoPolicyReachesTheLimit(t *testing.T) {
	stale := 15 * time.Minute
	p := levelTwoPolicy(supervise.Policy{}, stale)
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var starts []time.Time
	for i := range supervise.DefaultLimit {
		starts = append(starts, now.Add(-time.Duration(i+1)*stale))
	}
	if got := p.Next(starts, now).Verdict; got != supervise.LimitReached {
		t.Errorf("after %d restarts %s apart: %s, want %s", len(starts), stale, got, supervise.LimitReached)
	}
	// Level 1's own window stands when it is the longer.
	if got := levelTwoPolicy(supervise.Policy{Window: 10 * time.Hour}, time.Minute).Window; got != 10*time.Hour {
		t.Errorf("window %s, want 10h", got)
	}
}
