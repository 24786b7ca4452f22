package review

import (
	"fmt"
	"strings"
)

// Gate is the evidence's say over the model's classification (DESIGN.md
// principle 2: the model may lower the evidence's verdict, never raise
// it). A full_complete claim stands only when nothing in blockers stands
// against it (failed validation, an empty diff, a deleted, weakened or
// protected test changed, a failed run), nothing in unverified says the
// work could not be checked (no validation is configured), and, for a
// task with criteria, the model judged them met. A blocker or unmet
// criteria lower it to some_progress; unverified alone to
// significant_progress: the work may be good, and nothing checked it.
// The reasons say why. Other classifications pass unchanged.
func Gate(model Classification, criteria Criteria, hasCriteria bool, blockers, unverified []string) (Classification, []string) {
	if model != FullComplete {
		return model, nil
	}
	var why []string
	why = append(why, blockers...)
	if hasCriteria && criteria != CriteriaMet {
		why = append(why, fmt.Sprintf("the task's criteria were not judged met (criteria: %s)", criteria))
	}
	if len(why) > 0 {
		return SomeProgress, append(why, unverified...)
	}
	if len(unverified) > 0 {
		return SignificantProgress, append([]string(nil), unverified...)
	}
	return FullComplete, nil
}

// NextStreaks applies seed 004 step 5 to s for a review whose final
// classification is c:
//
//   - full_complete: completion streak +1, failure streak reset;
//   - significant_progress, some_progress: both reset;
//   - uncertain: completion reset; failure reset only if there was no
//     error (else one more);
//   - a failed task without output: failure streak +1, completion reset.
//
// cra reads "error" (erred) as anything that kept the review from judging
// the work, or the work from standing: a run that failed (non-zero exit,
// killed, timed out) adds one to the failure streak whatever the model
// said, since the exit status is evidence and the model may not raise it;
// so does a review that fell back to the conservative note (the run left
// no output, or the model's reply broke the format review after review),
// which earns no completion; and so
// does a completion claim the evidence refuted (Gate lowered it: the
// tests fail, the diff is empty). Every review thus moves a streak, and a
// task whose runs always fail, that nothing can judge, or whose agent
// claims a completion the evidence keeps refuting reaches
// failure_threshold and a person instead of cycling for ever. A review the
// model could not give at all (it was down, failed or timed out) is no
// review: it waits (Wait) and moves no streak, since a model outage is not
// the agent's failure.
func NextStreaks(s Streaks, c Classification, erred bool) Streaks {
	var next Streaks
	if c == FullComplete && !erred {
		next.Completion = s.Completion + 1
	}
	if erred {
		next.Failure = s.Failure + 1
	}
	return next
}

// Thresholds are the streak limits of seed 004 step 6.
type Thresholds struct {
	Completion int
	Failure    int
}

// Decide is seed 004 step 6 with seed 002's escalation: at the
// completion threshold the task is finalized; a review whose model says a
// person is needed (need) blocks it at once; at the failure threshold it
// is blocked; otherwise it goes back to pending.
func Decide(s Streaks, t Thresholds, need string) Action {
	switch {
	case s.Completion >= t.Completion:
		return Finalize
	case strings.TrimSpace(need) != "":
		return Block
	case s.Failure >= t.Failure:
		return Block
	}
	return Requeue
}
