package retrieve

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestAskRetriesOnceThenFallsBack: a reply that does not parse is asked
// for again with the problem named; a good second reply is used; two bad
// ones are a *ReplyError the stage falls back from with a warning; a
// judge that cannot be reached is not a fallback.
func TestAskRetriesOnceThenFallsBack(t *testing.T) {
	tests := []struct {
		name     string
		replies  []string
		judgeErr error
		want     string
		fellBack bool
		calls    int
		// malformed are the calls told of as malformed, by number.
		malformed []int
	}{
		{name: "good at once", replies: []string{`{"intent": "a", "type": "bug"}`}, want: "a", calls: 1},
		{name: "fixed when told", replies: []string{"I think it is a bug.", `{"intent": "b", "type": "bug"}`}, want: "b", calls: 2, malformed: []int{1}},
		{name: "bad twice", replies: []string{"prose", "more prose"}, fellBack: true, calls: 2, malformed: []int{1, 2}},
		{name: "unreachable", judgeErr: errors.New("connection refused"), calls: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var prompts []string
			sc := &StageContext{Judge: func(_ context.Context, _, _, _, prompt string) (string, error) {
				prompts = append(prompts, prompt)
				if tc.judgeErr != nil {
					return "", tc.judgeErr
				}
				return tc.replies[len(prompts)-1], nil
			}}
			var malformed []int
			sc.Malformed = func(_ context.Context, problem error) error {
				if problem == nil {
					t.Error("told of a malformed reply without its problem")
				}
				malformed = append(malformed, len(prompts))
				return nil
			}
			v, err := ask(context.Background(), sc, "task_analysis", "task_analysis", "system", "Task:\nfix it", ParseTaskAnalysis)
			if len(prompts) != tc.calls {
				t.Fatalf("%d calls, want %d", len(prompts), tc.calls)
			}
			if !slices.Equal(malformed, tc.malformed) {
				t.Errorf("calls marked malformed: got %v, want %v", malformed, tc.malformed)
			}
			if tc.calls == 2 && !strings.Contains(prompts[1], "Your previous reply could not be used: ") {
				t.Errorf("the second prompt does not name the problem: %q", prompts[1])
			}
			if got := fellBack(sc, "task analysis", "the deterministic extraction stands", err); got != tc.fellBack {
				t.Errorf("fell back %v, want %v (err %v)", got, tc.fellBack, err)
			}
			switch {
			case tc.fellBack:
				if len(sc.Warnings) != 1 || !strings.Contains(sc.Warnings[0], "task analysis: the model's reply was unusable twice") {
					t.Errorf("warnings %q", sc.Warnings)
				}
			case tc.judgeErr != nil:
				if err == nil || len(sc.Warnings) != 0 {
					t.Errorf("an unreachable model: err %v, warnings %q; want the error, no fallback", err, sc.Warnings)
				}
			case err != nil || v.Intent != tc.want:
				t.Errorf("got %+v, %v; want intent %q", v, err, tc.want)
			}
		})
	}
}
