package supervise

import (
	"testing"
	"time"
)

func TestPolicyNext(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	at := func(d ...time.Duration) []time.Time {
		out := make([]time.Time, len(d))
		for i, x := range d {
			out[i] = t0.Add(x)
		}
		return out
	}
	s, m := time.Second, time.Minute
	for _, tc := range []struct {
		name   string
		policy Policy
		starts []time.Time
		now    time.Time
		want   Decision
	}{
		{name: "never restarted: now", now: t0,
			want: Decision{Verdict: RestartNow, At: t0}},
		{name: "one restart 5s ago: wait 10s after it", starts: at(0), now: t0.Add(5 * s),
			want: Decision{Verdict: RestartAt, At: t0.Add(10 * s), Starts: 1}},
		{name: "one restart 10s ago: now", starts: at(0), now: t0.Add(10 * s),
			want: Decision{Verdict: RestartNow, At: t0.Add(10 * s), Starts: 1}},
		{name: "two restarts: 20s after the latest", starts: at(10*s, 0), now: t0.Add(11 * s),
			want: Decision{Verdict: RestartAt, At: t0.Add(30 * s), Starts: 2}},
		{name: "four restarts: 80s", starts: at(0, 10*s, 30*s, 70*s), now: t0.Add(71 * s),
			want: Decision{Verdict: RestartAt, At: t0.Add(150 * s), Starts: 4}},
		{name: "five restarts in the window: limit", starts: at(0, 10*s, 30*s, 70*s, 150*s), now: t0.Add(9 * m),
			want: Decision{Verdict: LimitReached, Starts: 5}},
		{name: "the oldest left the window: 4 count", starts: at(0, 10*s, 30*s, 70*s, 150*s), now: t0.Add(10 * m),
			want: Decision{Verdict: RestartNow, At: t0.Add(10 * m), Starts: 4}},
		{name: "all old: now, as never", starts: at(0, s, 2*s), now: t0.Add(time.Hour),
			want: Decision{Verdict: RestartNow, At: t0.Add(time.Hour)}},
		{name: "capped at MaxBackoff", policy: Policy{Limit: 100, Window: time.Hour},
			starts: at(0, s, 2*s, 3*s, 4*s, 5*s, 6*s, 7*s, 8*s, 9*s), now: t0.Add(10 * s),
			want: Decision{Verdict: RestartAt, At: t0.Add(9*s + 5*m), Starts: 10}},
		{name: "custom policy", policy: Policy{Backoff: s, MaxBackoff: 3 * s, Limit: 2, Window: m},
			starts: at(0), now: t0.Add(s / 2),
			want: Decision{Verdict: RestartAt, At: t0.Add(s), Starts: 1}},
		{name: "custom limit", policy: Policy{Limit: 2, Window: m},
			starts: at(0, 20*s), now: t0.Add(30 * s),
			want: Decision{Verdict: LimitReached, Starts: 2}},
		{name: "a start after now counts as recent, and as now", starts: at(20 * s), now: t0,
			want: Decision{Verdict: RestartAt, At: t0.Add(10 * s), Starts: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.policy.Next(tc.starts, tc.now)
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestPolicyDelay(t *testing.T) {
	p := DefaultPolicy()
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
		160 * time.Second, 5 * time.Minute, 5 * time.Minute}
	for i, w := range want {
		if got := p.delay(i + 1); got != w {
			t.Errorf("delay after restart %d: got %v, want %v", i+1, got, w)
		}
	}
	if got := p.delay(1 << 20); got != p.MaxBackoff {
		t.Errorf("delay after 2^20 restarts: got %v, want %v", got, p.MaxBackoff)
	}
}

func TestDefaultPolicy(t *testing.T) {
	want := Policy{Backoff: 10 * time.Second, MaxBackoff: 5 * time.Minute, Limit: 5, Window: 10 * time.Minute, StartGrace: 15 * time.Second, FinishGrace: 30 * time.Second}
	if got := DefaultPolicy(); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
