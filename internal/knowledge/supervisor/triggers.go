package supervisor

import (
	"fmt"
	"slices"
	"time"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/knowledge"
)

// The urgency weights of seed 003's pull-forward mechanism, as issue 16
// maps its signals onto the board.
const (
	WeightVerdict = 0.3 // a recycler verdict that is not full_complete
	WeightBlocked = 1.0 // a task moved to failed-blocked: immediate
	WeightChurn   = 0.2 // a task re-queued 3 times or more, or a pending task's text rewritten
	WeightDrift   = 0.5 // drift reported by the design supervisor
	// UrgencyThreshold runs the supervisors, whatever their counters.
	UrgencyThreshold = 1.0
	// ChurnRetries is the re-queue count that is churn.
	ChurnRetries = 3
	// MaxIntervalFactor bounds convergence's doubling: an interval grows
	// to at most 8 times its base.
	MaxIntervalFactor = 8
)

// Kind is the kind of a Signal.
type Kind string

// The signals the triggers count.
const (
	// Verdict is a recycler verdict on a run: seed 003's completion.
	Verdict Kind = "verdict"
	// Blocked is a task moved to failed-blocked (not a person's move, not a
	// dropped directive): seed 003's task abort.
	Blocked Kind = "blocked"
	// Churn is a task's third re-queue, or a task's text rewritten.
	Churn Kind = "churn"
	// Replan is the plan changed: a task's title, description, need or
	// milestone edited (seed 003's scope re-plan).
	Replan Kind = "replan"
	// Drift is a design run that found the approach must change.
	Drift Kind = "drift"
	// MilestoneDone is a milestone whose tasks are all verified.
	MilestoneDone Kind = "milestone"
)

// Signal is one thing that happened: what the triggers and the urgency
// are computed from.
type Signal struct {
	Time time.Time `json:"time"`
	Kind Kind      `json:"kind"`
	Task string    `json:"task,omitempty"`
	// Complete says a verdict was full_complete.
	Complete  bool   `json:"complete,omitempty"`
	Milestone string `json:"milestone,omitempty"`
}

// Weight is the signal's urgency (seed 003's table).
func (s Signal) Weight() float64 {
	switch s.Kind {
	case Verdict:
		if !s.Complete {
			return WeightVerdict
		}
	case Blocked:
		return WeightBlocked
	case Churn:
		return WeightChurn
	case Drift:
		return WeightDrift
	}
	return 0
}

// Urgency sums the weights of the signals after since, the latest reset
// (seed 003: "after running, urgency resets to 0").
func Urgency(signals []Signal, since time.Time) float64 {
	u := 0.0
	for _, s := range signals {
		if s.Time.After(since) {
			u += s.Weight()
		}
	}
	return u
}

// Completions counts the verdicts after since.
func Completions(signals []Signal, since time.Time) int {
	n := 0
	for _, s := range signals {
		if s.Kind == Verdict && s.Time.After(since) {
			n++
		}
	}
	return n
}

// BaseInterval is supervisor s's periodic trigger in completions, from
// [supervisors]: code_style 5, internaliser 3; design has none (0): it
// runs on milestones, re-plans and aborts only.
func BaseInterval(s knowledge.Supervisor, set config.SupervisorSettings) int {
	switch s {
	case knowledge.CodeStyle:
		return set.CodeStyleEvery
	case knowledge.Internaliser:
		return set.InternaliserEvery
	}
	return 0
}

// Last is what the triggers need of a supervisor's latest run.
type Last struct {
	// Time is when it started; zero when it never ran.
	Time time.Time
	// Interval is the periodic interval in force after it (doubled by
	// convergence); 0 for the base.
	Interval int
	// Milestones are the milestones complete when it ran: a milestone
	// triggers a supervisor once.
	Milestones []string
}

// Due returns why supervisor s should run now, or nothing (seed 003,
// "Trigger Conditions"): code_style every Interval completions and on a
// milestone complete; design on a milestone complete, a re-plan or an
// abort; the internaliser every Interval completions and on a milestone
// complete. A supervisor that never ran is due at the first completion:
// its bootstrap. done lists the milestones complete now.
func Due(s knowledge.Supervisor, last Last, signals []Signal, done []string, set config.SupervisorSettings) []string {
	var why []string
	n := Completions(signals, last.Time)
	interval := last.Interval
	if interval <= 0 {
		interval = BaseInterval(s, set)
	}
	switch {
	case last.Time.IsZero() && n > 0:
		why = append(why, "first run")
	case interval > 0 && n >= interval:
		why = append(why, fmt.Sprintf("%d completions (every %d)", n, interval))
	}
	for _, m := range done {
		if !slices.Contains(last.Milestones, m) {
			why = append(why, "milestone "+m+" complete")
		}
	}
	if s == knowledge.Design {
		for _, sg := range signals {
			if !sg.Time.After(last.Time) {
				continue
			}
			switch sg.Kind {
			case Replan:
				why = appendOnce(why, "re-plan")
			case Blocked:
				why = appendOnce(why, "task "+sg.Task+" aborted")
			}
		}
	}
	return why
}

func appendOnce(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// Converging reports whether a run's findings repeat the previous run's
// (seed 003, "Supervisor self-assessment"): nothing found, or at least
// three quarters of what it found was found last time too.
func Converging(prev, cur []string) bool {
	if len(cur) == 0 {
		return true
	}
	same := 0
	for _, f := range cur {
		if slices.Contains(prev, f) {
			same++
		}
	}
	return same*4 >= len(cur)*3
}

// NextInterval is the interval after a run: doubled when the run
// converged (at most MaxIntervalFactor times base), back to base when it
// did not. A supervisor without a periodic trigger (base 0) keeps 0.
func NextInterval(base, current int, converging bool) int {
	if base <= 0 {
		return 0
	}
	if current < base {
		current = base
	}
	if !converging {
		return base
	}
	return min(current*2, base*MaxIntervalFactor)
}

// Aging is a pending cleanup directive as aging sees it.
type Aging struct {
	ID      string
	Created time.Time
	// Picked says it has run at least once: aging no longer applies.
	Picked bool
}

// Drops returns the cleanup directives to drop, with why (seed 003,
// "Directive aging" and "Hard cap"): each one not picked up within
// maxAge completions after it was created; then, while more than
// maxPending remain, the oldest. verdicts are the times of the
// completions.
func Drops(pending []Aging, verdicts []time.Time, maxAge, maxPending int) map[string]string {
	out := map[string]string{}
	var keep []Aging
	for _, d := range pending {
		n := 0
		for _, v := range verdicts {
			if v.After(d.Created) {
				n++
			}
		}
		if !d.Picked && maxAge > 0 && n >= maxAge {
			out[d.ID] = fmt.Sprintf("not picked up within %d completions", maxAge)
			continue
		}
		keep = append(keep, d)
	}
	slices.SortStableFunc(keep, func(a, b Aging) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		if a.ID < b.ID {
			return -1
		}
		return 1
	})
	for i := 0; len(keep)-i > maxPending; i++ {
		out[keep[i].ID] = fmt.Sprintf("over the cap of %d pending cleanup directives: the oldest goes", maxPending)
	}
	return out
}
