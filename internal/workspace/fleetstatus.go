package workspace

import (
	"context"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/pgstore"
)

// The fleet's records, as 'cra fleet status' prints them: pgstore's,
// named here so that the command line calls one owner.
type (
	FleetState = pgstore.Status
	FleetHost  = pgstore.HostStatus
	FleetLease = pgstore.Lease
)

// FleetStatus reads the hosts of cfg's PostgreSQL fleet, their
// heartbeats, their runs' leases and the leader ('cra fleet status').
func FleetStatus(ctx context.Context, cfg *config.Config, getenv func(string) string) (pgstore.Status, error) {
	url, err := databaseURL(cfg, getenv)
	if err != nil {
		return pgstore.Status{}, err
	}
	f, err := pgstore.OpenFleet(ctx, url)
	if err != nil {
		return pgstore.Status{}, err
	}
	defer f.Close()
	return f.Status(ctx)
}
