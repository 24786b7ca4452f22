package statedir_test

import (
	"path/filepath"
	"testing"

	"github.com/cra-dev/cra/internal/statedir"
)

// TestPaths pins the tree README.md's "Where state lives" shows.
func TestPaths(t *testing.T) {
	d := statedir.Of("/repo")
	run := d.Run("t-1")
	tests := []struct{ got, want string }{
		{d.Path(), "/repo/.clean_room"},
		{statedir.At("/repo/.clean_room").Config(), "/repo/.clean_room/config.toml"},
		{d.GitIgnore(), "/repo/.clean_room/.gitignore"},
		{d.Curated(), "/repo/.clean_room/curated.sqlite"},
		{d.Raw(), "/repo/.clean_room/raw.sqlite"},
		{d.Sessions(), "/repo/.clean_room/sessions"},
		{d.Session("t-1"), "/repo/.clean_room/sessions/session_t-1.sqlite"},
		{d.WorldLog(), "/repo/.clean_room/world.log"},
		{d.WorldLock(), "/repo/.clean_room/world.log.lock"},
		{d.WorldIndex(), "/repo/.clean_room/world.log.idx"},
		{d.WorldCompacted(), "/repo/.clean_room/world.log.compacted"},
		{d.WorldCompacting(), "/repo/.clean_room/world.log.compacting"},
		{d.WorldArchive(), "/repo/.clean_room/world.log.archive"},
		{d.WorldCompactTemps(), "/repo/.clean_room/.world.log.compact*"},
		{d.Markers(), "/repo/.clean_room/markers"},
		{d.Marker("recycler"), "/repo/.clean_room/markers/recycler"},
		{d.Tasks(), "/repo/.clean_room/tasks"},
		{d.TaskFolder("pending"), "/repo/.clean_room/tasks/pending"},
		{d.TaskFile("pending", "t-1"), "/repo/.clean_room/tasks/pending/t-1.yaml"},
		{d.TasksLock(), "/repo/.clean_room/tasks/.lock"},
		{d.TaskIndex("pending"), "/repo/.clean_room/tasks/.index.pending"},
		{d.Worktrees(), "/repo/.clean_room/worktrees"},
		{d.Worktree("t-1"), "/repo/.clean_room/worktrees/t-1"},
		{d.Runs(), "/repo/.clean_room/runs"},
		{run.Path(), "/repo/.clean_room/runs/t-1"},
		{run.Identity(), "/repo/.clean_room/runs/t-1/run.json"},
		{run.Claim(), "/repo/.clean_room/runs/t-1/starting.json"},
		{run.Prompt(2), "/repo/.clean_room/runs/t-1/prompt-2.md"},
		{run.TaskText(2), "/repo/.clean_room/runs/t-1/task-2.md"},
		{run.MCPConfig(2), "/repo/.clean_room/runs/t-1/mcp-2.json"},
		{run.Log(2), "/repo/.clean_room/runs/t-1/run-2.log"},
		{run.Reviews(), "/repo/.clean_room/runs/t-1/reviews.jsonl"},
		{run.File("x"), "/repo/.clean_room/runs/t-1/x"},
		{statedir.RunAt("/r/runs/t-2").Log(1), "/r/runs/t-2/run-1.log"},
		{d.Plans(), "/repo/.clean_room/plans"},
		{d.Plan("t-1"), "/repo/.clean_room/plans/t-1.md"},
		{d.Training(), "/repo/.clean_room/training"},
		{d.TrainingPlans(), "/repo/.clean_room/training/plans"},
		{d.TrainingPlan(3), "/repo/.clean_room/training/plans/plan-3.toml"},
		{d.TrainingDatasets(), "/repo/.clean_room/training/datasets"},
		{d.TrainingJob(3), "/repo/.clean_room/training/train/dataset-3"},
		{d.TrainingBootstrap("click-ab12"), "/repo/.clean_room/training/bootstrap/click-ab12"},
		{d.TrainingCurateLock(), "/repo/.clean_room/training/curate.lock"},
		{d.NotifyPending(), "/repo/.clean_room/notify-pending.jsonl"},
		{d.KnowledgeSyncLock(), "/repo/.clean_room/knowledge-sync.lock"},
		{d.KnowledgeConflicts(), "/repo/.clean_room/knowledge-conflicts"},
		{d.NotifyLock(), "/repo/.clean_room/notify.lock"},
		{d.SupervisorsLog(), "/repo/.clean_room/supervisors.jsonl"},
		{d.SupervisorsLock(), "/repo/.clean_room/supervisors.lock"},
		{d.ServeInfo(), "/repo/.clean_room/serve.json"},
		{d.ServeLock(), "/repo/.clean_room/serve.lock"},
		{d.ServeToken(), "/repo/.clean_room/serve.token"},
		{d.ValidationBases(), "/repo/.clean_room/validation/base"},
		{d.ValidationBase("ab12"), "/repo/.clean_room/validation/base/ab12.json"},
		{d.IndexLock(), "/repo/.clean_room/index.lock"},
		{d.CleanupLock(), "/repo/.clean_room/cleanup.lock"},
		{d.AdaptersLock(), "/repo/.clean_room/adapters.lock"},
		// The zero Dir names paths relative to the state directory, as
		// messages show them; Of("") relative to the repository.
		{statedir.Dir{}.TaskFile("failed", "t-1"), "tasks/failed/t-1.yaml"},
		{statedir.Dir{}.Run("t-1").Log(1), "runs/t-1/run-1.log"},
		{statedir.Of("").Curated(), ".clean_room/curated.sqlite"},
	}
	for _, tc := range tests {
		if want := filepath.FromSlash(tc.want); tc.got != want {
			t.Errorf("got %s, want %s", tc.got, want)
		}
	}
}
