package board

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestCloneIsDeep changes everything a clone reaches through a pointer or
// a slice and checks that the original did not change: rebuild and
// collapse change their clones while readers hold the original.
func TestCloneIsDeep(t *testing.T) {
	build := func() *Task {
		code := 3
		task := NewTask("deep")
		task.ID = "t-0000abcd"
		task.After = []string{"t-00000001"}
		task.Files = []string{"a.go"}
		task.Results = &Results{
			Output:   "out",
			ExitCode: &code,
			Usage:    &Usage{Model: "m", Input: 10, Output: 2, Cached: 1},
		}
		task.Merged = &Merge{Into: "main", Commit: "abc", At: time.Unix(1, 0).UTC()}
		return task
	}
	orig, want := build(), build()

	c := orig.Clone()
	c.After[0] = "changed"
	c.Files[0] = "changed"
	c.Results.Output = "changed"
	*c.Results.ExitCode = 99
	c.Results.Usage.Input = 99
	c.Results.Usage.Model = "changed"
	c.Merged.Commit = "changed"
	c.Merged.Squash = true

	opts := cmp.AllowUnexported(Task{})
	if diff := cmp.Diff(want, orig, opts); diff != "" {
		t.Fatalf("changing a clone changed the original (-before +after):\n%s", diff)
	}
}
