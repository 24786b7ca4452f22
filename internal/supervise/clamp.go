package supervise

import (
	"strconv"
	"time"
)

// FutureClamp keeps a time from the log that lies after now (a clock
// stepped back, a line written by hand) from deferring a wait: such a time
// counts as the moment it was first seen after now, and stays that moment
// on later calls, so that a grace or a backoff measured from it ends as
// if the entry had been written then. A pass made once ('cra supervise
// --once') sees it as now. The zero value is ready for use; it is not safe
// for concurrent use.
type FutureClamp struct {
	first map[string]time.Time // key and time → when first seen after now
	used  map[string]bool      // keys asked for since the last Prune
}

// At returns t, or, when t is after now, when the time t of key was first
// seen after now (now itself, the first time).
func (c *FutureClamp) At(key string, t, now time.Time) time.Time {
	if !t.After(now) {
		return t
	}
	k := key + "@" + strconv.FormatInt(t.UnixNano(), 10)
	if c.first == nil {
		c.first, c.used = map[string]time.Time{}, map[string]bool{}
	}
	c.used[k] = true
	if f, ok := c.first[k]; ok {
		return f
	}
	c.first[k] = now
	return now
}

// Prune forgets the times not asked for since the last Prune: the entry
// moved on, or time caught up with it.
func (c *FutureClamp) Prune() {
	for k := range c.first {
		if !c.used[k] {
			delete(c.first, k)
		}
	}
	clear(c.used)
}
