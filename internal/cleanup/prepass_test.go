package cleanup

import (
	"slices"
	"testing"
)

// TestGroupsSeedExample is seed 000's example: the four "ambient AI"
// lines are one group, and an unrelated task stays out of it.
func TestGroupsSeedExample(t *testing.T) {
	items := []Item{
		{"t-1", "Develop ambient AI solutions"},
		{"t-2", "Fix the login page crash"},
		{"t-3", "Developing ambient AI solutions"},
		{"t-4", "Develop ambient AI solutions for various applications"},
		{"t-5", "Developing and refining ambient AI solutions for various applications"},
		{"t-6", "Write the README's quick tour"},
	}
	got := Groups(items, Threshold)
	if len(got) != 1 {
		t.Fatalf("got %d groups %+v, want 1", len(got), got)
	}
	if want := []string{"t-1", "t-3", "t-4", "t-5"}; !slices.Equal(got[0].IDs, want) {
		t.Errorf("got group %v, want %v", got[0].IDs, want)
	}
	if got[0].Score != 1 {
		t.Errorf("got score %v, want 1 (t-1 and t-3 are the same words)", got[0].Score)
	}
}

func TestGroupsSeparate(t *testing.T) {
	items := []Item{
		{"a", "Add retries to the HTTP client"},
		{"b", "Write docs for the parser"},
		{"c", "add retry to http client"},
		{"d", "Document the parser"},
		{"e", "Writing docs for parsers"},
	}
	got := Groups(items, Threshold)
	var ids [][]string
	for _, g := range got {
		ids = append(ids, g.IDs)
	}
	want := [][]string{{"a", "c"}, {"b", "e"}}
	if !slices.EqualFunc(ids, want, slices.Equal) {
		t.Errorf("got %v, want %v", ids, want)
	}
}

func TestStem(t *testing.T) {
	for _, pair := range [][2]string{
		{"developing", "develop"}, {"developed", "develop"}, {"solutions", "solution"},
		{"refining", "refine"}, {"refined", "refine"}, {"retries", "retry"}, {"retried", "retry"},
		{"fixes", "fix"}, {"fixing", "fix"}, {"running", "run"}, {"adding", "add"}, {"added", "add"},
		{"passes", "pass"}, {"passing", "pass"}, {"configuration", "configure"}, {"configuring", "configured"},
		{"needs", "need"}, {"speeding", "speed"}, {"tests", "testing"}, {"applies", "apply"},
	} {
		if a, b := Stem(pair[0]), Stem(pair[1]); a != b {
			t.Errorf("Stem(%q) = %q, Stem(%q) = %q: want them equal", pair[0], a, pair[1], b)
		}
	}
	for _, pair := range [][2]string{{"add", "remove"}, {"status", "state"}, {"string", "str"}} {
		if a, b := Stem(pair[0]), Stem(pair[1]); a == b {
			t.Errorf("Stem(%q) = Stem(%q) = %q: want them apart", pair[0], pair[1], a)
		}
	}
}

func TestMatches(t *testing.T) {
	for _, tc := range []struct {
		line, task string
		want       bool
	}{
		{"Develop ambient AI solutions", "Developing and refining ambient AI solutions for various applications", true},
		{"Developing ambient AI solutions.", "develop ambient ai solution", true},
		{"Add a --json flag to cra cleanup", "Fix the login page crash", false},
		{"Add tests", "Write the README", false},
		{"tests", "Add tests for the parser", false}, // one word is too little to match
	} {
		if got := Matches(tc.line, tc.task); got != tc.want {
			t.Errorf("Matches(%q, %q) = %v, want %v (similarity %.2f)", tc.line, tc.task, got, tc.want, Similarity(tc.line, tc.task))
		}
	}
}
