package supervise

import (
	"testing"
	"time"
)

// TestFutureClamp: a time after now counts as the moment it was first seen,
// and stays so while time has not caught up with it; a time not after now
// is itself; a pruned key starts again.
func TestFutureClamp(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	ahead := t0.Add(time.Hour)
	var c FutureClamp
	if got := c.At("a", t0.Add(-time.Minute), t0); !got.Equal(t0.Add(-time.Minute)) {
		t.Errorf("a past time: got %v", got)
	}
	if got := c.At("a", ahead, t0); !got.Equal(t0) {
		t.Errorf("first seen: got %v, want now %v", got, t0)
	}
	c.Prune()
	if got := c.At("a", ahead, t0.Add(time.Minute)); !got.Equal(t0) {
		t.Errorf("seen again: got %v, want when first seen %v", got, t0)
	}
	if got := c.At("b", ahead, t0.Add(time.Minute)); !got.Equal(t0.Add(time.Minute)) {
		t.Errorf("another key: got %v, want its own first sight", got)
	}
	c.Prune()
	c.Prune() // neither asked for since: forgotten
	if got := c.At("a", ahead, t0.Add(2*time.Minute)); !got.Equal(t0.Add(2 * time.Minute)) {
		t.Errorf("after a prune: got %v, want now again", got)
	}
	if got := c.At("a", ahead, ahead.Add(time.Second)); !got.Equal(ahead) {
		t.Errorf("time caught up: got %v, want the time itself", got)
	}
}
