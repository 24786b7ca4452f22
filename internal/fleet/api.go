package fleet

import (
	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/fleetapi"
	"github.com/cra-dev/cra/internal/world"
)

// The operations and the records they exchange live in fleetapi, so that
// a front end can take them without importing the fleet's workers; these
// are their names here.
type (
	Ops           = fleetapi.Ops
	Review        = fleetapi.Review
	Patch         = fleetapi.Patch
	TaskView      = fleetapi.TaskView
	Listing       = fleetapi.Listing
	NeedsYou      = fleetapi.NeedsYou
	Detail        = fleetapi.Detail
	Run           = fleetapi.Run
	RecycleReport = fleetapi.RecycleReport
	Stopped       = fleetapi.Stopped
	MergeOptions  = fleetapi.MergeOptions
	PROptions     = fleetapi.PROptions
	PullRequest   = fleetapi.PullRequest
	Workers       = fleetapi.Workers
	BranchDiff    = fleetapi.BranchDiff
	Outcome       = fleetapi.Outcome
	CleanupReport = fleetapi.CleanupReport
)

// Tasks returns the fleet's board: its tasks and its world log.
func (f *Fleet) Tasks() *board.Board { return f.Board }

// WaitsForPerson says whether an agent whose latest lifecycle entry has
// status and output waits for a person's answer (fleetapi.WaitsForPerson).
func WaitsForPerson(status world.Status, output string) bool {
	return fleetapi.WaitsForPerson(status, output)
}
