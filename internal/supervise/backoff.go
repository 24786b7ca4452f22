package supervise

import (
	"fmt"
	"time"
)

// Policy bounds the restarts of an agent whose run is gone (DESIGN.md
// principle 6): exponential backoff as Kubernetes' CrashLoopBackOff, and
// a start limit as systemd's StartLimitBurst within
// StartLimitIntervalSec. A zero field takes its default.
type Policy struct {
	// Backoff is the wait after the first restart in the window before
	// the next one; it doubles with each further restart. Default 10 s.
	Backoff time.Duration
	// MaxBackoff caps the wait. Default 5 min.
	MaxBackoff time.Duration
	// Limit is how many restarts Window may hold; one more and the agent
	// is failed for a person to look at. Default 5.
	Limit int
	// Window is the span over which restarts are counted. Default 10 min.
	Window time.Duration
	// StartGrace is how long after its [agent:active] entry a run may go
	// without a recorded identity: the processor logs first, then starts
	// the process and records it, and a pass in between must not take
	// the run for dead. Default 15 s.
	StartGrace time.Duration
	// FinishGrace is how long a run whose process is gone is left to the
	// process that started it (the daemon's processor, a 'cra task run'),
	// while that process is alive: it waits for the run and logs its
	// finish a moment after the exit, and a pass in between must not
	// restart a run that ended. Default 30 s.
	FinishGrace time.Duration
}

// The defaults of Policy (issue 13 item 6).
const (
	DefaultBackoff     = 10 * time.Second
	DefaultMaxBackoff  = 5 * time.Minute
	DefaultLimit       = 5
	DefaultWindow      = 10 * time.Minute
	DefaultStartGrace  = 15 * time.Second
	DefaultFinishGrace = 30 * time.Second
)

// DefaultPolicy returns the policy with every default set.
func DefaultPolicy() Policy { return Policy{}.withDefaults() }

func (p Policy) withDefaults() Policy {
	if p.Backoff <= 0 {
		p.Backoff = DefaultBackoff
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = DefaultMaxBackoff
	}
	if p.Limit <= 0 {
		p.Limit = DefaultLimit
	}
	if p.Window <= 0 {
		p.Window = DefaultWindow
	}
	if p.StartGrace <= 0 {
		p.StartGrace = DefaultStartGrace
	}
	if p.FinishGrace <= 0 {
		p.FinishGrace = DefaultFinishGrace
	}
	return p
}

// Verdict is what the restart policy says about an agent whose run is
// gone.
type Verdict int

// The verdicts of Policy.Next.
const (
	RestartNow   Verdict = iota // restart it now
	RestartAt                   // back off: restart it at Decision.At
	LimitReached                // the start limit is reached: fail it
)

// String names the verdict.
func (v Verdict) String() string {
	switch v {
	case RestartNow:
		return "restart now"
	case RestartAt:
		return "restart later"
	case LimitReached:
		return "start limit reached"
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// Decision is Policy.Next's answer.
type Decision struct {
	Verdict Verdict
	At      time.Time // when to restart; set for RestartNow (now) and RestartAt
	Starts  int       // restarts within the window before now
}

// Next decides about restarting an agent whose restarts happened at
// starts (any order), at time now. With no restart within the window it
// restarts now; with n of them, Limit or more fail it, and otherwise the
// next restart waits Backoff·2^(n-1), at most MaxBackoff, after the
// latest one. A start time after now (a clock stepped back) counts as
// recent, and as now: no wait ends later than its delay from now (a
// Pass keeps such a time where it first saw it, FutureClamp).
func (p Policy) Next(starts []time.Time, now time.Time) Decision {
	p = p.withDefaults()
	from := now.Add(-p.Window)
	n := 0
	var last time.Time
	for _, s := range starts {
		if !s.After(from) {
			continue
		}
		n++
		if s.After(last) {
			last = s
		}
	}
	switch {
	case n == 0:
		return Decision{Verdict: RestartNow, At: now}
	case n >= p.Limit:
		return Decision{Verdict: LimitReached, Starts: n}
	}
	if last.After(now) {
		last = now
	}
	at := last.Add(p.delay(n))
	if !now.Before(at) {
		return Decision{Verdict: RestartNow, At: now, Starts: n}
	}
	return Decision{Verdict: RestartAt, At: at, Starts: n}
}

// delay is the wait after the n-th restart (n ≥ 1), doubling from
// Backoff up to MaxBackoff without overflowing.
func (p Policy) delay(n int) time.Duration {
	d := p.Backoff
	for i := 1; i < n && d < p.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, p.MaxBackoff)
}
