package server

import (
	"context"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/fleetapi"
	"github.com/cra-dev/cra/internal/world"
)

// Fleet is what the API and the daemon ask of a repository's fleet
// (fleet.Fleet): its operations, its board, and the daemon's loops. The
// server takes it as an interface so that it imports the records the
// operations exchange (fleetapi), never the recycler, evidence, Level 1
// or cleanup that carry them out.
type Fleet interface {
	fleetapi.Ops
	// Tasks is the fleet's board: its tasks and its world log.
	Tasks() *board.Board
	// Root is the repository; StateDir its .clean_room/.
	Root() string
	StateDir() string
	// Waits says whether task id waits for a person.
	Waits(ctx context.Context, id string) (bool, error)
	// Skipped describes the world log's entries its fold skips.
	Skipped(ctx context.Context) ([]string, error)
	// Runs reads task id's runs from its lifecycle entries.
	Runs(id string, entries []world.Entry) []fleetapi.Run
	// Reviews returns the recycler's reviews of task id.
	Reviews(ctx context.Context, id string) (list []fleetapi.Review, bad int, file, evidenceText string, err error)
	// Diff returns task id's branch diff.
	Diff(ctx context.Context, id string) (*fleetapi.BranchDiff, error)
	// Repair puts every task file where the world log says.
	Repair(ctx context.Context) (board.Report, error)
	// CleanupRunning says whether a cleanup pass runs now, in any
	// process; LastCleanup is the last pass the fleet ran (fleetapi.Ops
	// has Cleanup, which runs one).
	CleanupRunning() bool
	LastCleanup() *fleetapi.CleanupPass
	// Serve runs the daemon's loops as w says until ctx ends.
	Serve(ctx context.Context, w fleetapi.Workers) error
}
