package fleet

import (
	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/fleetapi"
)

// The operations and the records they exchange live in fleetapi, so that
// a front end can take them without importing the fleet's workers; these
// are the names cra's commands take them by here (internal/cli imports
// the fleet, not fleetapi).
type (
	Ops           = fleetapi.Ops
	Review        = fleetapi.Review
	Patch         = fleetapi.Patch
	TaskView      = fleetapi.TaskView
	NeedsYou      = fleetapi.NeedsYou
	MergeOptions  = fleetapi.MergeOptions
	PROptions     = fleetapi.PROptions
	Workers       = fleetapi.Workers
	Outcome       = fleetapi.Outcome
	CleanupReport = fleetapi.CleanupReport
)

// Tasks returns the fleet's board: its tasks and its world log.
func (f *Fleet) Tasks() *board.Board { return f.Board }
