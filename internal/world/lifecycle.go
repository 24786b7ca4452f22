package world

import (
	"fmt"
	"strings"
)

// Next returns the statuses an agent may move to from status from; "" is an
// agent with no entry yet. The table is seed 002's lifecycle with the exits
// its flows need:
//
//	(none)   → start
//	start    → active | failed            (a task dropped before it runs)
//	active   → finish | retry | failed    (retry: Level 2 nudges a silent agent)
//	finish   → verified | retry | failed  (verified: only after an [event:review] for it)
//	retry    → active | failed            (failed: bounded restarts ran out)
//	failed   → retry                      (only after an [event:user] for it)
//	verified → (none: the end)
//
// The two conditions tie a step to what must come first: a person's
// answer before a failed agent retries (seed 002 phase 5), and a review
// of the run, logged by the recycler, a person's move or 'cra solve', before
// a finished one is verified. An agent's own word that it is done is its
// finish, never its verification.
func Next(from Status) []Status {
	switch from {
	case "":
		return []Status{StatusStart}
	case StatusStart:
		return []Status{StatusActive, StatusFailed}
	case StatusActive:
		return []Status{StatusFinish, StatusRetry, StatusFailed}
	case StatusFinish:
		return []Status{StatusVerified, StatusRetry, StatusFailed}
	case StatusRetry:
		return []Status{StatusActive, StatusFailed}
	case StatusFailed:
		return []Status{StatusRetry}
	}
	return nil
}

// TransitionError is an agent entry the lifecycle refuses. It names the
// agent's current status so that the caller can tell what happened.
type TransitionError struct {
	ID   string
	From Status // current status; "" when the agent has no entry
	To   Status
	// NeedsUser is set when From is failed and no [event:user] for the
	// agent came after it: a person must answer first (seed 002 phase 5).
	NeedsUser bool
	// NeedsReview is set when From is finish, To is verified and no
	// [event:review] for the agent came after its finish.
	NeedsReview bool
}

func (e *TransitionError) Error() string {
	switch {
	case e.From == "":
		return fmt.Sprintf("agent %s has no entry yet: its first status must be start, not %s", e.ID, e.To)
	case e.NeedsUser:
		return fmt.Sprintf("agent %s is failed: %s needs an [event:user][%s] entry after the failure first (a person's answer)", e.ID, e.To, e.ID)
	case e.NeedsReview:
		return fmt.Sprintf("agent %s is finish: verified needs an [event:review][%s] entry after the finish first (the recycler's review of the run, or a person's move to completed-finalized)", e.ID, e.ID)
	case e.From == StatusVerified:
		return fmt.Sprintf("agent %s is verified: its lifecycle is over, %s is not allowed (start a new task id)", e.ID, e.To)
	}
	next := Next(e.From)
	names := make([]string, len(next))
	for i, s := range next {
		names[i] = string(s)
	}
	return fmt.Sprintf("agent %s is %s: it cannot go to %s (allowed: %s)", e.ID, e.From, e.To, strings.Join(names, ", "))
}

// checkTransition returns a *TransitionError unless an agent whose status
// is from may log to. userAfterFailed says whether an [event:user] for the
// agent came after its failed entry, reviewed whether an [event:review]
// came after its finish entry.
func checkTransition(id string, from Status, userAfterFailed, reviewed bool, to Status) error {
	for _, s := range Next(from) {
		if s != to {
			continue
		}
		if from == StatusFailed && !userAfterFailed {
			return &TransitionError{ID: id, From: from, To: to, NeedsUser: true}
		}
		if from == StatusFinish && to == StatusVerified && !reviewed {
			return &TransitionError{ID: id, From: from, To: to, NeedsReview: true}
		}
		return nil
	}
	return &TransitionError{ID: id, From: from, To: to}
}
