package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// Leader is who holds the fleet's shared duties (the recycler, the
// supervisors, cleanup, notifications): one host at a time, by a lease in
// fleet_leader that it renews. A leader that dies stops renewing, and the
// next host to campaign after the lease ends takes over, with the next
// term.
type Leader struct {
	Host string `json:"host"`
	// Term grows by one each time another host takes the lead: duties
	// done under an older term are a former leader's.
	Term    int64     `json:"term"`
	Since   time.Time `json:"since"`
	Renewed time.Time `json:"renewed"`
	Expires time.Time `json:"expires"`
}

// leaderDuty is the row of the shared duties in fleet_leader.
const leaderDuty = "leader"

// Campaign makes host the leader, or keeps it the leader, for lease from
// now, unless another host holds a live lead; it returns the leader after
// the attempt and whether it is host. A leader calls it well within its
// lease to stay one, and stops its duties once a call fails or its lease
// runs out by its own clock (Elector does both).
func (f *Fleet) Campaign(ctx context.Context, host string, lease time.Duration) (Leader, bool, error) {
	if err := checkName("host name", host, maxNameBytes); err != nil {
		return Leader{}, false, fmt.Errorf("campaign: %w", err)
	}
	if lease <= 0 {
		return Leader{}, false, fmt.Errorf("campaign: a lease of %v: give a positive duration ([fleet] lease)", lease)
	}
	// The times are the clock's when the row is written (after a wait
	// for another campaign that holds the row: the SET is evaluated
	// once the row is locked, EXCLUDED before), not the statement's
	// start (now()): a lead stamped before the wait was partly spent.
	// The lead ran out when it did by the same clock.
	var l Leader
	err := f.pool.QueryRow(ctx, `INSERT INTO fleet_leader AS f (duty, host, term, since, renewed, expires)
		VALUES ($1, $2, 1, clock_timestamp(), clock_timestamp(), clock_timestamp() + $3 * interval '1 millisecond')
		ON CONFLICT (duty) DO UPDATE SET
			term = CASE WHEN f.host = EXCLUDED.host THEN f.term ELSE f.term + 1 END,
			since = CASE WHEN f.host = EXCLUDED.host THEN f.since ELSE clock_timestamp() END,
			host = EXCLUDED.host, renewed = clock_timestamp(), expires = clock_timestamp() + $3 * interval '1 millisecond'
		WHERE f.host = EXCLUDED.host OR f.expires < clock_timestamp()
		RETURNING host, term, since, renewed, expires`, leaderDuty, host, lease.Milliseconds()).
		Scan(&l.Host, &l.Term, &l.Since, &l.Renewed, &l.Expires)
	if err == nil {
		return l, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return Leader{}, false, fmt.Errorf("campaign of %s: %w", host, err)
	}
	cur, err := readLeader(ctx, f.pool)
	if err != nil {
		return Leader{}, false, fmt.Errorf("campaign of %s: %w", host, err)
	}
	if cur == nil {
		return Leader{}, false, fmt.Errorf("campaign of %s: the leader's row is gone: campaign again", host)
	}
	return *cur, false, nil
}

// Resign ends host's lead at once, when it stops (cra serve shutting
// down), so that another host need not wait out the lease; it reports
// whether host was the leader.
func (f *Fleet) Resign(ctx context.Context, host string) (bool, error) {
	tag, err := f.pool.Exec(ctx, "UPDATE fleet_leader SET expires = clock_timestamp() - interval '1 millisecond' WHERE duty = $1 AND host = $2", leaderDuty, host)
	if err != nil {
		return false, fmt.Errorf("resign %s's lead: %w", host, err)
	}
	return tag.RowsAffected() == 1, nil
}

// CurrentLeader returns the leader's row, live or expired; nil when no
// host ever campaigned.
func (f *Fleet) CurrentLeader(ctx context.Context) (*Leader, error) {
	l, err := readLeader(ctx, f.pool)
	if err != nil {
		return nil, fmt.Errorf("read the leader: %w", err)
	}
	return l, nil
}

func readLeader(ctx context.Context, q querier) (*Leader, error) {
	var l Leader
	err := q.QueryRow(ctx, "SELECT host, term, since, renewed, expires FROM fleet_leader WHERE duty = $1", leaderDuty).
		Scan(&l.Host, &l.Term, &l.Since, &l.Renewed, &l.Expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &l, nil
}

// Elector campaigns for host every Lease/3 and runs Duties while host
// leads: it starts them when host wins, and cancels their context when a
// campaign fails or the lease runs out by this host's clock before a
// renewal (a host cut off from the database stops leading before another
// can take over, as its lease counts from before it asked). A campaign
// that fails with an error keeps the duties running until that deadline.
type Elector struct {
	// Fleet is the database; required.
	Fleet *Fleet
	// Host is this host's name; required.
	Host string
	// Lease is how long a lead lasts unrenewed ([fleet] lease); required.
	Lease time.Duration
	// Duties runs while this host leads, until its context ends; nil
	// runs nothing (the host only holds the lead).
	Duties func(ctx context.Context) error
	// Logger gets the changes of leader and the campaigns' errors; nil
	// discards.
	Logger *slog.Logger
	// Now is the host's clock; nil is time.Now.
	Now func() time.Time
}

// Run campaigns until ctx ends, then resigns if it leads.
func (e *Elector) Run(ctx context.Context) error {
	if e.Fleet == nil || e.Host == "" || e.Lease <= 0 {
		return errors.New("elector: give Fleet, Host and a positive Lease")
	}
	now := e.Now
	if now == nil {
		now = time.Now
	}
	every := e.Lease / 3
	var (
		leading  bool
		deadline time.Time
		stop     context.CancelFunc
		done     chan error
	)
	halt := func(why string) {
		if !leading {
			return
		}
		stop()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			e.log(slog.LevelWarn, "shared duties ended", "err", err)
		}
		leading = false
		e.log(slog.LevelInfo, "no longer leading", "why", why)
	}
	step := func() {
		asked := now()
		// A campaign that hangs (a connection lost in a network split)
		// must not hold the loop past the lease: it gives up after a
		// third of it, a failed campaign.
		cctx, cancel := context.WithTimeout(ctx, every)
		l, won, err := e.Fleet.Campaign(cctx, e.Host, e.Lease)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil:
			e.log(slog.LevelWarn, "campaign failed", "err", err)
		case won && !leading:
			e.log(slog.LevelInfo, "leading the fleet's shared duties", "term", l.Term)
			dctx, cancel := context.WithCancel(ctx)
			stop, done, leading = cancel, make(chan error, 1), true
			go func() {
				if e.Duties == nil {
					<-dctx.Done()
					done <- nil
					return
				}
				done <- e.Duties(dctx)
			}()
		}
		if won {
			deadline = asked.Add(e.Lease)
		} else if err == nil {
			halt("host " + l.Host + " leads")
		}
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		step()
		if leading && !now().Before(deadline) {
			halt("the lease ran out before a renewal")
		}
		// While leading, the duties stop when the lease runs out, whatever
		// the next campaign is doing.
		var expire <-chan time.Time
		if leading {
			expire = time.After(deadline.Sub(now()))
		}
		select {
		case <-expire:
			halt("the lease ran out before a renewal")
		case <-ctx.Done():
			halt("stopping")
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_, err := e.Fleet.Resign(rctx, e.Host)
			cancel()
			if err != nil {
				e.log(slog.LevelWarn, "resign failed", "err", err)
			}
			return nil
		case err := <-doneOrNil(leading, done):
			// The duties ended by themselves: give the lead up, so that
			// another host takes them.
			leading = false
			e.log(slog.LevelWarn, "shared duties ended; resigning", "err", err)
			if _, err := e.Fleet.Resign(ctx, e.Host); err != nil && ctx.Err() == nil {
				e.log(slog.LevelWarn, "resign failed", "err", err)
			}
			return err
		case <-t.C:
		}
	}
}

// doneOrNil is done while leading, else a channel that never delivers.
func doneOrNil(leading bool, done chan error) chan error {
	if leading {
		return done
	}
	return nil
}

func (e *Elector) log(level slog.Level, msg string, args ...any) {
	if e.Logger != nil {
		e.Logger.Log(context.Background(), level, "elector: "+msg, append([]any{"host", e.Host}, args...)...)
	}
}
