package supervisor

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/knowledge"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }

func verdicts(n int, complete bool, from int) []Signal {
	var out []Signal
	for i := range n {
		out = append(out, Signal{Time: at(from + i), Kind: Verdict, Task: "t", Complete: complete})
	}
	return out
}

func TestUrgency(t *testing.T) {
	for _, tc := range []struct {
		name    string
		signals []Signal
		since   time.Time
		want    float64
	}{
		{"calm", verdicts(4, true, 1), t0, 0},
		{"three partial verdicts", verdicts(3, false, 1), t0, 0.9},
		{"four partial verdicts run", verdicts(4, false, 1), t0, 1.2},
		{"a block is immediate", []Signal{{Time: at(1), Kind: Blocked}}, t0, 1.0},
		{"churn and drift", []Signal{{Time: at(1), Kind: Churn}, {Time: at(2), Kind: Drift}, {Time: at(3), Kind: Replan}}, t0, 0.7},
		{"reset: only what came after", append(verdicts(3, false, 1), Signal{Time: at(10), Kind: Churn}), at(5), 0.2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Urgency(tc.signals, tc.since); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDue(t *testing.T) {
	set := (*config.Config)(nil).SupervisorSettings()
	ran := Last{Time: at(0)}
	for _, tc := range []struct {
		name    string
		s       knowledge.Supervisor
		last    Last
		signals []Signal
		done    []string
		want    []string
	}{
		{"code_style: 4 completions wait", knowledge.CodeStyle, ran, verdicts(4, true, 1), nil, nil},
		{"code_style: the 5th runs", knowledge.CodeStyle, ran, verdicts(5, true, 1), nil, []string{"5 completions (every 5)"}},
		{"code_style: doubled interval waits", knowledge.CodeStyle, Last{Time: at(0), Interval: 10}, verdicts(9, true, 1), nil, nil},
		{"internaliser: every 3", knowledge.Internaliser, ran, verdicts(3, false, 1), nil, []string{"3 completions (every 3)"}},
		{"internaliser: counts only since its run", knowledge.Internaliser, Last{Time: at(2)}, verdicts(3, false, 1), nil, nil},
		{"design: no periodic trigger", knowledge.Design, ran, verdicts(50, true, 1), nil, nil},
		{"design: re-plan and abort", knowledge.Design, ran, []Signal{{Time: at(1), Kind: Replan}, {Time: at(2), Kind: Blocked, Task: "t-1"}, {Time: at(3), Kind: Replan}}, nil,
			[]string{"re-plan", "task t-1 aborted"}},
		{"milestone complete, once", knowledge.CodeStyle, Last{Time: at(0), Milestones: []string{"m1"}}, nil, []string{"m1", "m2"}, []string{"milestone m2 complete"}},
		{"first run at the first completion", knowledge.Design, Last{}, verdicts(1, true, 1), nil, []string{"first run"}},
		{"never ran, nothing done", knowledge.CodeStyle, Last{}, nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Due(tc.s, tc.last, tc.signals, tc.done, set)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestConvergence(t *testing.T) {
	a, b, c, d := "doc conventions/errors.md wrap", "directive fix a.go", "directive fix b.go", "item new"
	for _, tc := range []struct {
		name      string
		prev, cur []string
		want      bool
	}{
		{"nothing found", []string{a}, nil, true},
		{"the same findings", []string{a, b}, []string{b, a}, true},
		{"three of four repeat", []string{a, b, c}, []string{a, b, c, d}, true},
		{"half new", []string{a, b}, []string{a, d}, false},
		{"all new", nil, []string{a}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Converging(tc.prev, tc.cur); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		base, cur int
		conv      bool
		want      int
	}{
		{5, 5, true, 10}, {5, 10, true, 20}, {5, 20, true, 40}, {5, 40, true, 40}, {5, 40, false, 5}, {3, 0, true, 6}, {0, 0, true, 0},
	} {
		if got := NextInterval(tc.base, tc.cur, tc.conv); got != tc.want {
			t.Errorf("NextInterval(%d, %d, %v): got %d, want %d", tc.base, tc.cur, tc.conv, got, tc.want)
		}
	}
	// Findings compare by words, not wording order.
	r1 := &Reply{Directives: []Directive{{Description: "Wrap errors in a.go"}}}
	r2 := &Reply{Directives: []Directive{{Description: "in a.go: wrap errors"}}}
	if !Converging(r1.Findings(), r2.Findings()) {
		t.Errorf("%q vs %q", r1.Findings(), r2.Findings())
	}
}

func TestDrops(t *testing.T) {
	var vs []time.Time
	for i := range 20 {
		vs = append(vs, at(10+i))
	}
	pending := []Aging{
		{ID: "old", Created: at(0)},                      // 20 completions since: aged
		{ID: "old-picked", Created: at(0), Picked: true}, // ran once: aging is over
		{ID: "young", Created: at(20)},                   // 9 since
	}
	got := Drops(pending, vs, 15, 10)
	if diff := cmp.Diff(map[string]string{"old": "not picked up within 15 completions"}, got); diff != "" {
		t.Errorf("aging (-want +got):\n%s", diff)
	}
	// The cap: 12 pending, 10 kept, the two oldest go.
	pending = nil
	for i := range 12 {
		pending = append(pending, Aging{ID: string(rune('a' + i)), Created: at(100 + i)})
	}
	got = Drops(pending, vs, 15, 10)
	if len(got) != 2 || got["a"] == "" || got["b"] == "" {
		t.Errorf("cap: %v", got)
	}
	if got := Drops(pending[:10], vs, 15, 10); len(got) != 0 {
		t.Errorf("at the cap: %v", got)
	}
}
