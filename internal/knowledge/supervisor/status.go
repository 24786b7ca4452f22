package supervisor

import (
	"context"
	"slices"
	"time"

	"github.com/cra-dev/cra/internal/knowledge"
)

// Status is what 'cra supervisors status' shows: each supervisor's
// counter, interval and triggers, the urgency, the pending cleanup
// directives, the polish phase and the latest runs.
type Status struct {
	Urgency float64 `json:"urgency"`
	// UrgencySince is the latest reset (the latest batch).
	UrgencySince time.Time    `json:"urgency_since,omitzero"`
	Supervisors  []Supervisor `json:"supervisors"`
	// PendingCleanup counts the pending cleanup directives; Cap is
	// max_cleanup_directives.
	PendingCleanup int `json:"pending_cleanup"`
	Cap            int `json:"cap"`
	// Polish says every planned task is verified: only cleanup
	// directives run, and no new supervisor runs but a milestone's.
	Polish bool `json:"polish"`
	// Milestones are the milestones whose planned tasks are all verified.
	Milestones []string `json:"milestones_complete,omitempty"`
	// Runs are the latest records of the run log, newest last.
	Runs []Record `json:"runs"`
}

// Supervisor is one supervisor's line of Status.
type Supervisor struct {
	Name    knowledge.Supervisor `json:"name"`
	Enabled bool                 `json:"enabled"`
	// Completions since its latest run, against Interval (0: no periodic
	// trigger); Base is the configured interval.
	Completions int       `json:"completions"`
	Interval    int       `json:"interval"`
	Base        int       `json:"base_interval"`
	LastRun     time.Time `json:"last_run,omitzero"`
	// Due says why it would run at the next check.
	Due []string `json:"due,omitempty"`
}

// MaxStatusRuns is how many run records Status returns.
const MaxStatusRuns = 10

// Status reads the state without changing anything.
func (r *Runner) Status(ctx context.Context) (*Status, error) {
	st, err := r.read(ctx)
	if err != nil {
		return nil, err
	}
	u, due := st.due()
	out := &Status{Urgency: u, UrgencySince: st.batch, Cap: st.set.MaxCleanupDirectives, Polish: st.view.functionallyComplete(),
		Milestones: slices.Clone(st.view.done), Runs: st.recs[max(0, len(st.recs)-MaxStatusRuns):]}
	for _, s := range knowledge.Supervisors() {
		last := st.last[s]
		base := BaseInterval(s, st.set)
		iv := last.Interval
		if iv <= 0 {
			iv = base
		}
		out.Supervisors = append(out.Supervisors, Supervisor{Name: s, Enabled: st.set.Enabled(string(s)),
			Completions: Completions(st.signals, last.Time), Interval: iv, Base: base, LastRun: last.Time, Due: due[s]})
	}
	for _, t := range st.view.pending {
		if cleanup(t) {
			out.PendingCleanup++
		}
	}
	return out, nil
}
