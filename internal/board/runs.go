package board

import (
	"fmt"

	"github.com/cra-dev/cra/internal/statedir"
)

// The directories of runs and worktrees inside the state directory
// (DESIGN.md, "Where state lives"; statedir names their paths).
const (
	RunsDir      = statedir.RunsDir
	WorktreesDir = statedir.WorktreesDir
)

// BranchPrefix starts a task's branch, cra/<id>, as for cra solve.
const BranchPrefix = "cra/"

// RunTaskID is the task_runs id of run n of a board task, <id>.r<n>: the
// raw database keeps one row per id (seed 001 §4.6), and a board task
// runs many times, while its branch stays cra/<id>.
func RunTaskID(id string, n int) string { return fmt.Sprintf("%s.r%d", id, n) }
