package board

import (
	"strings"

	"github.com/cra-dev/cra/internal/world"
)

// RunFailed starts the output of an [agent:finish] entry whose run did not
// exit 0: a non-zero exit, a kill or a timeout (DESIGN.md, the task
// lifecycle). Such a run ends in failed/, any other finish in completed/.
const RunFailed = "run failed:"

// FolderOf returns the folder a task belongs in when its latest lifecycle
// entry has status and output (DESIGN.md, "The lifecycle of a task"):
//
//	start                      → pending
//	active                     → in-progress
//	finish "run failed: …"     → failed
//	finish (any other output)  → completed
//	retry                      → pending
//	verified                   → completed-finalized
//	failed                     → failed-blocked
//
// It returns false for a status that is not one of world's.
func FolderOf(status world.Status, output string) (Folder, bool) {
	switch status {
	case world.StatusStart, world.StatusRetry:
		return Pending, true
	case world.StatusActive:
		return InProgress, true
	case world.StatusFinish:
		if strings.HasPrefix(output, RunFailed) {
			return Failed, true
		}
		return Completed, true
	case world.StatusVerified:
		return CompletedFinalized, true
	case world.StatusFailed:
		return FailedBlocked, true
	}
	return "", false
}

// folderOfAgent is FolderOf for an agent's state replayed from the log.
func folderOfAgent(a world.Agent) (Folder, bool) { return FolderOf(a.Status, a.Output) }

// moveStatus is the lifecycle entry a person's move to folder writes, and
// the output it needs so that FolderOf maps it there. in-progress has
// none: only a run makes a task active.
func moveStatus(to Folder, why string) (world.Status, string, bool) {
	text := "moved by a person"
	if why != "" {
		text += ": " + why
	}
	switch to {
	case Pending:
		return world.StatusRetry, text, true
	case Completed:
		return world.StatusFinish, text, true
	case Failed:
		return world.StatusFinish, RunFailed + " " + text, true
	case CompletedFinalized:
		return world.StatusVerified, text, true
	case FailedBlocked:
		return world.StatusFailed, text, true
	}
	return "", "", false
}
