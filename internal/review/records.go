package review

import "github.com/cra-dev/cra/internal/verdict"

// The records a review makes live in verdict, where the supervisors and
// the front ends read them without importing the recycler; these are
// their names here.
type (
	// Review is one review of one run (verdict.Review).
	Review = verdict.Review
	// Classification is the recycler's verdict on one run.
	Classification = verdict.Classification
	// Criteria is the model's judgement of the task's need.
	Criteria = verdict.Criteria
	// Note is the five sections of a review's note.
	Note = verdict.Note
	// Streaks are a task's two counters (seed 004).
	Streaks = verdict.Streaks
	// Action is what the recycler does with a reviewed task.
	Action = verdict.Action
	// Report is what one tick did.
	Report = verdict.Report
	// Restart is a live run Level 2 stopped.
	Restart = verdict.Restart
	// Notice is a notification sent, and why it failed if it did.
	Notice = verdict.Notice
)

// The classifications, judgements and actions (verdict's).
const (
	FullComplete        = verdict.FullComplete
	SignificantProgress = verdict.SignificantProgress
	SomeProgress        = verdict.SomeProgress
	Uncertain           = verdict.Uncertain

	CriteriaMet     = verdict.CriteriaMet
	CriteriaNotMet  = verdict.CriteriaNotMet
	CriteriaUnclear = verdict.CriteriaUnclear

	Requeue  = verdict.Requeue
	Finalize = verdict.Finalize
	Block    = verdict.Block
	Wait     = verdict.Wait

	// MaxNote caps a note's characters (seed 004).
	MaxNote = verdict.MaxNote
)

// Classifications lists them from most to least done.
func Classifications() []Classification { return verdict.Classifications() }

// History returns task id's reviews, oldest first, and how many lines
// could not be read (verdict.History).
func History(stateDir, id string) ([]Review, int, error) { return verdict.History(stateDir, id) }

// HistoryPath returns the reviews file of task id.
func HistoryPath(stateDir, id string) string { return verdict.HistoryPath(stateDir, id) }
