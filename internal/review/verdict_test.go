package review

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNextStreaks(t *testing.T) {
	start := Streaks{Completion: 2, Failure: 3}
	tests := []struct {
		name  string
		c     Classification
		erred bool
		want  Streaks
	}{
		// Seed 004 step 5, rule by rule.
		{"full_complete adds a completion and resets failures", FullComplete, false, Streaks{Completion: 3, Failure: 0}},
		{"significant_progress resets both", SignificantProgress, false, Streaks{Completion: 0, Failure: 0}},
		{"some_progress resets both", SomeProgress, false, Streaks{Completion: 0, Failure: 0}},
		{"uncertain without an error resets both", Uncertain, false, Streaks{Completion: 0, Failure: 0}},
		{"uncertain after an error keeps counting failures", Uncertain, true, Streaks{Completion: 0, Failure: 4}},
		// cra's reading of "error": a failed run, a fallback, a refuted claim.
		{"progress after an error is still a failure", SignificantProgress, true, Streaks{Completion: 0, Failure: 4}},
		{"a refuted claim, lowered to some_progress, is a failure", SomeProgress, true, Streaks{Completion: 0, Failure: 4}},
		{"an error never counts as a completion", FullComplete, true, Streaks{Completion: 0, Failure: 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := NextStreaks(start, tc.c, tc.erred); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	th := Thresholds{Completion: 3, Failure: 5}
	tests := []struct {
		name string
		s    Streaks
		need string
		want Action
	}{
		{"below both thresholds", Streaks{Completion: 2, Failure: 4}, "", Requeue},
		{"completion threshold reached", Streaks{Completion: 3, Failure: 0}, "", Finalize},
		{"past the completion threshold", Streaks{Completion: 4, Failure: 0}, "", Finalize},
		{"failure threshold reached", Streaks{Completion: 0, Failure: 5}, "", Block},
		{"a person is needed", Streaks{Completion: 1, Failure: 0}, "approve the schema change", Block},
		{"a blank need is none", Streaks{Completion: 1, Failure: 0}, "  ", Requeue},
		{"completion comes first, as seed 004 orders it", Streaks{Completion: 3, Failure: 5}, "", Finalize},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(tc.s, th, tc.need); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
	// Thresholds of one act on the first review.
	if got := Decide(Streaks{Completion: 1, Failure: 0}, Thresholds{1, 1}, ""); got != Finalize {
		t.Errorf("completion threshold 1: got %s, want %s", got, Finalize)
	}
	if got := Decide(Streaks{Completion: 0, Failure: 1}, Thresholds{1, 1}, ""); got != Block {
		t.Errorf("failure threshold 1: got %s, want %s", got, Block)
	}
}

func TestGate(t *testing.T) {
	tests := []struct {
		name        string
		model       Classification
		criteria    Criteria
		hasCriteria bool
		blockers    []string
		unverified  []string
		want        Classification
		why         []string
	}{
		{"evidence agrees", FullComplete, CriteriaMet, true, nil, nil, FullComplete, nil},
		{"no criteria to judge", FullComplete, CriteriaUnclear, false, nil, nil, FullComplete, nil},
		{"failing validation lowers the claim", FullComplete, CriteriaMet, true,
			[]string{"validation failed: test (exit 1)"}, nil, SomeProgress, []string{"validation failed: test (exit 1)"}},
		{"an empty diff lowers the claim", FullComplete, CriteriaMet, true,
			[]string{"the diff against the base is empty"}, nil, SomeProgress, []string{"the diff against the base is empty"}},
		{"a deleted test lowers the claim", FullComplete, CriteriaMet, true,
			[]string{"test file deleted: a_test.go"}, nil, SomeProgress, []string{"test file deleted: a_test.go"}},
		{"criteria not met lowers the claim", FullComplete, CriteriaNotMet, true, nil, nil, SomeProgress,
			[]string{"the task's criteria were not judged met (criteria: not_met)"}},
		{"nothing checked it: significant progress at most", FullComplete, CriteriaMet, true, nil, []string{"no validation"},
			SignificantProgress, []string{"no validation"}},
		{"a blocker and nothing checked: some progress, both said", FullComplete, CriteriaMet, true, []string{"empty diff"}, []string{"no validation"},
			SomeProgress, []string{"empty diff", "no validation"}},
		{"a lower claim is never raised", SignificantProgress, CriteriaMet, true, []string{"x"}, nil, SignificantProgress, nil},
		{"uncertain stays", Uncertain, CriteriaUnclear, true, nil, []string{"no validation"}, Uncertain, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, why := Gate(tc.model, tc.criteria, tc.hasCriteria, tc.blockers, tc.unverified)
			if got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
			if diff := cmp.Diff(tc.why, why); diff != "" {
				t.Errorf("reasons (-want +got):\n%s", diff)
			}
		})
	}
}
