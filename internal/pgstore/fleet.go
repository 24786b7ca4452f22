package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Fleet is what the hosts of a fleet share to work together (issue 34):
// their heartbeats (fleet_hosts), the leases on their runs (run_leases)
// and the leader of the shared duties (fleet_leader). Every time that
// decides who holds what is the database's clock, never a host's: a host
// with a skewed clock neither steals a live lease nor keeps a dead one.
// It is safe for concurrent use by any number of hosts.
type Fleet struct {
	pool *pgxpool.Pool
}

// OpenFleet connects to the database at url, whose schema must be at
// SchemaVersion ('cra fleet init'). Close releases it.
func OpenFleet(ctx context.Context, url string) (*Fleet, error) {
	pool, err := openPool(ctx, url)
	if err != nil {
		return nil, err
	}
	return &Fleet{pool: pool}, nil
}

// Close releases the fleet's connections.
func (f *Fleet) Close() { f.pool.Close() }

// Host is one host of the fleet as its last heartbeat left it.
type Host struct {
	// Name is the host's [fleet] host.
	Name string `json:"host"`
	// Started is when its cra serve started.
	Started time.Time `json:"started"`
	// Heartbeat is its last heartbeat, by the database's clock.
	Heartbeat time.Time `json:"heartbeat"`
	// Slots is its max_parallel: how many runs it may hold at once.
	Slots int `json:"slots"`
	// Version is the cra it runs.
	Version string `json:"version"`
}

// Bounds of what a host reports: the rows are read by every other host
// and printed by 'cra fleet status'.
const (
	maxNameBytes    = 64
	maxSlots        = 1024
	maxVersionBytes = 64
	maxTaskIDBytes  = 256
)

// checkName refuses a host name or task ID no other host could print or
// match safely: empty, too long, or holding a control character or a
// space.
func checkName(what, s string, max int) error {
	if s == "" {
		return fmt.Errorf("the %s is empty: name it", what)
	}
	if len(s) > max {
		return fmt.Errorf("the %s %.20q... is %d bytes: use at most %d", what, s, len(s), max)
	}
	for _, r := range s {
		if r <= ' ' || r == 0x7f {
			return fmt.Errorf("the %s %q holds a space or a control character: use letters, digits, '.', '_' or '-'", what, s)
		}
	}
	return nil
}

// Heartbeat records that host h is alive now, with its slots, version
// and start time; the first heartbeat adds the host to the fleet.
func (f *Fleet) Heartbeat(ctx context.Context, h Host) error {
	_, err := f.beat(ctx, h)
	return err
}

// beat is Heartbeat, returning the database's clock when it beat (its
// statement's start: not before this call).
func (f *Fleet) beat(ctx context.Context, h Host) (time.Time, error) {
	if err := checkName("host name", h.Name, maxNameBytes); err != nil {
		return time.Time{}, fmt.Errorf("heartbeat: %w", err)
	}
	if h.Slots < 0 || h.Slots > maxSlots {
		return time.Time{}, fmt.Errorf("heartbeat of %s: %d slots: give 0 to %d (max_parallel)", h.Name, h.Slots, maxSlots)
	}
	if len(h.Version) > maxVersionBytes {
		return time.Time{}, fmt.Errorf("heartbeat of %s: a version of %d bytes: use at most %d", h.Name, len(h.Version), maxVersionBytes)
	}
	if h.Started.IsZero() {
		return time.Time{}, fmt.Errorf("heartbeat of %s: no start time: give when its cra serve started", h.Name)
	}
	var at time.Time
	err := f.pool.QueryRow(ctx, `INSERT INTO fleet_hosts (host, started, heartbeat, slots, version)
		VALUES ($1, $2, now(), $3, $4)
		ON CONFLICT (host) DO UPDATE SET started = $2, heartbeat = now(), slots = $3, version = $4
		RETURNING now()`,
		h.Name, h.Started, h.Slots, h.Version).Scan(&at)
	if err != nil {
		return time.Time{}, fmt.Errorf("heartbeat of %s: %w", h.Name, err)
	}
	return at, nil
}

// Status is the fleet as 'cra fleet status' shows it.
type Status struct {
	// Now is the database's clock when it was read: ages are from it.
	Now time.Time `json:"now"`
	// Hosts are the hosts that ever beat, by name, each with its runs.
	Hosts []HostStatus `json:"hosts"`
	// Leader holds the shared duties; nil when no host ever campaigned.
	Leader *Leader `json:"leader,omitempty"`
	// Orphans are leases whose host never beat (imported, or its row
	// removed by hand).
	Orphans []Lease `json:"orphans,omitempty"`
}

// HostStatus is one host and the leases it holds.
type HostStatus struct {
	Host
	// Age is how long ago its last heartbeat was.
	Age time.Duration `json:"-"`
	// AgeSeconds is Age in seconds, for JSON.
	AgeSeconds float64 `json:"heartbeat_age_s"`
	// Runs are its leases, live and expired, oldest first.
	Runs []Lease `json:"runs"`
}

// Status reads the hosts, their leases and the leader at one moment.
func (f *Fleet) Status(ctx context.Context) (Status, error) {
	var st Status
	err := pgx.BeginTxFunc(ctx, f.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, "SELECT now()").Scan(&st.Now); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "SELECT host, started, heartbeat, slots, version FROM fleet_hosts ORDER BY host")
		if err != nil {
			return err
		}
		byName := map[string]int{}
		for rows.Next() {
			var h HostStatus
			if err := rows.Scan(&h.Name, &h.Started, &h.Heartbeat, &h.Slots, &h.Version); err != nil {
				rows.Close()
				return err
			}
			h.Age = st.Now.Sub(h.Heartbeat)
			h.AgeSeconds = h.Age.Seconds()
			h.Runs = []Lease{}
			byName[h.Name] = len(st.Hosts)
			st.Hosts = append(st.Hosts, h)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		leases, err := readLeases(ctx, tx, "ORDER BY started, task_id")
		if err != nil {
			return err
		}
		for _, l := range leases {
			if i, ok := byName[l.Host]; ok {
				st.Hosts[i].Runs = append(st.Hosts[i].Runs, l)
			} else {
				st.Orphans = append(st.Orphans, l)
			}
		}
		st.Leader, err = readLeader(ctx, tx)
		return err
	})
	if err != nil {
		return Status{}, fmt.Errorf("read the fleet's status: %w", err)
	}
	return st, nil
}
