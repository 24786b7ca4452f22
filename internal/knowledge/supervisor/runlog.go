package supervisor

import (
	"fmt"
	"time"

	"github.com/cra-dev/cra/internal/jsonl"
	"github.com/cra-dev/cra/internal/knowledge"
	"github.com/cra-dev/cra/internal/statedir"
)

// RunLogName is the supervisor run log in the state directory,
// .clean_room/supervisors.jsonl: one JSON record a line, appended (seed
// 003's supervisor_run_log). Each run also leaves an [event:supervisor]
// line in the world log; this file holds what the triggers need back
// (findings, interval, milestones seen) and what a person reads in
// 'cra supervisors status'.
const RunLogName = statedir.SupervisorsLog

// Record is one supervisor run, or one that was skipped or discarded.
type Record struct {
	// Batch is the time the run's batch started: supervisors run
	// together, and urgency resets at a batch.
	Batch      time.Time            `json:"batch"`
	Supervisor knowledge.Supervisor `json:"supervisor"`
	Started    time.Time            `json:"started"`
	Finished   time.Time            `json:"finished"`
	// Reasons are why it ran: triggers, urgency, or "cra supervisors run".
	Reasons   []string `json:"reasons"`
	Bootstrap bool     `json:"bootstrap,omitempty"`
	// After is the task whose verdict came last before the run.
	After string `json:"after,omitempty"`
	// Skipped says why no model call was made (no model reachable);
	// Discarded why the reply was thrown away (malformed twice).
	Skipped   string `json:"skipped,omitempty"`
	Discarded string `json:"discarded,omitempty"`
	Summary   string `json:"summary,omitempty"`
	// Findings and Converging are what convergence compared; Interval is
	// the periodic interval in force after the run.
	Findings   []string `json:"findings,omitempty"`
	Converging bool     `json:"converging,omitempty"`
	Interval   int      `json:"interval,omitempty"`
	// Drift says a design run issued a functional directive.
	Drift bool `json:"drift,omitempty"`
	// Milestones are the milestones complete at the run.
	Milestones []string            `json:"milestones,omitempty"`
	Written    []knowledge.Written `json:"written,omitempty"`
	Refused    []string            `json:"refused,omitempty"`
	Directives []string            `json:"directives,omitempty"`
	Calls      int                 `json:"calls"`
}

// Ran reports whether the record is a run that counts: the model
// answered and the reply was used.
func (r *Record) Ran() bool { return r.Skipped == "" && r.Discarded == "" }

// RunLogPath returns the run log of stateDir.
func RunLogPath(stateDir string) string { return statedir.At(stateDir).SupervisorsLog() }

// ReadRunLog returns the records, oldest first, and how many lines could
// not be read (skipped, never fatal). A missing file has none.
func ReadRunLog(stateDir string) ([]Record, int, error) {
	recs, bad, err := jsonl.Read(RunLogPath(stateDir), func(r *Record) bool { return r.Supervisor != "" })
	if err != nil {
		return nil, 0, fmt.Errorf("read the supervisor run log: %w", err)
	}
	return recs, bad, nil
}

// appendRunLog appends r to the run log and syncs it.
func appendRunLog(stateDir string, r *Record) error {
	if err := jsonl.Append(RunLogPath(stateDir), r); err != nil {
		return fmt.Errorf("record the supervisor run: %w", err)
	}
	return nil
}

// lastRuns returns each supervisor's latest counted run as the triggers
// see it, and the latest batch (urgency's reset).
func lastRuns(recs []Record) (map[knowledge.Supervisor]Last, map[knowledge.Supervisor]*Record, time.Time) {
	last := map[knowledge.Supervisor]Last{}
	rec := map[knowledge.Supervisor]*Record{}
	var batch time.Time
	for i := range recs {
		r := &recs[i]
		if !r.Ran() {
			continue
		}
		last[r.Supervisor] = Last{Time: r.Started, Interval: r.Interval, Milestones: r.Milestones}
		rec[r.Supervisor] = r
		if r.Batch.After(batch) {
			batch = r.Batch
		}
	}
	return last, rec, batch
}
