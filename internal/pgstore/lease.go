package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// Lease is a host's claim on a run of a task: while it lives (the host
// renews it before Expires) no other host runs the task.
type Lease struct {
	TaskID string `json:"task"`
	Host   string `json:"host"`
	// RunID names this run: a takeover gives the task a new one, so that
	// the old holder's renewal, by run, fails.
	RunID   string    `json:"run"`
	Started time.Time `json:"started"`
	Renewed time.Time `json:"renewed"`
	Expires time.Time `json:"expires"`
	// PrevHost and Reason are set when the claim took the task over from
	// a host whose lease had expired: the run is a restart, and Reason,
	// which names the host, the run and when its lease ended, is what
	// the world log says of it.
	PrevHost string `json:"prev_host,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// LastOutput is when the run last put anything out (its liveness
	// file's time), for Level 2 on the leader. Its holder gives it to
	// Renew by its own clock; Renew stores it by the database's (it sends
	// the output's age, so a host's skewed clock neither ages a run nor
	// keeps it young), and never moves it back. Zero: never reported.
	LastOutput time.Time `json:"last_output,omitzero"`
	// Revoked says why the leader revoked the lease (Revoke); "" when it
	// was not.
	Revoked string `json:"revoked,omitempty"`
}

// Lost is a run whose lease its host no longer holds (Renew): the host
// must stop its copy of the run, not finish it.
type Lost struct {
	TaskID string `json:"task"`
	RunID  string `json:"run"`
	// Holder and HolderRun are who runs the task now; empty when no one
	// does (the expired lease was swept, or released).
	Holder    string `json:"holder,omitempty"`
	HolderRun string `json:"holder_run,omitempty"`
	// Reason says what happened, for the log.
	Reason string `json:"reason"`
}

// Expired is a lease a Sweep took from a host that stopped renewing it:
// its task is free, to be restarted.
type Expired struct {
	Lease
	// LastHeartbeat is the host's last heartbeat; zero when it never beat.
	LastHeartbeat time.Time `json:"last_heartbeat,omitempty"`
	// Reason says why the task restarts, for the log.
	Reason string `json:"reason"`
}

// claimRounds bounds how often Claim goes back to the candidates when
// other hosts took the ones it picked meanwhile.
const claimRounds = 8

// Claim takes up to n of candidates (task IDs, in the board's order: the
// first are taken first) for host, each with a new lease of length lease,
// and returns the leases taken, in candidates' order. A task under a live
// lease is skipped; one under an expired lease is taken over, and its
// Lease carries the former holder and the reason (a restart). Hosts
// claiming at once never take the same task: an expired lease is locked
// FOR UPDATE SKIP LOCKED (a host taking it over, or its holder renewing
// it, keeps it from the others), and a free task goes to the first insert.
// Claims take turns on an advisory lock, each a short transaction, so a
// claim never comes back empty while a candidate is free.
func (f *Fleet) Claim(ctx context.Context, host string, candidates []string, n int, lease time.Duration) ([]Lease, error) {
	return f.claim(ctx, host, candidates, n, lease, false)
}

// ClaimPending is Claim over the board in the same database: a candidate
// under no lease is taken only while its row in board_tasks is in the
// pending folder, and that row is locked FOR UPDATE SKIP LOCKED in the
// claim's transaction, so that a task another host is claiming, moving or
// editing is passed over, not waited for, and one moved out of pending
// since the board was read is not claimed. candidates are the board's
// order (critical directives, functional directives, planned work,
// cleanup directives, 'after' respected), which the board computes from
// the tasks; a task under an expired lease (in progress on a host that
// died) is taken over whatever its folder.
func (f *Fleet) ClaimPending(ctx context.Context, host string, candidates []string, n int, lease time.Duration) ([]Lease, error) {
	return f.claim(ctx, host, candidates, n, lease, true)
}

func (f *Fleet) claim(ctx context.Context, host string, candidates []string, n int, lease time.Duration, pending bool) ([]Lease, error) {
	if err := checkName("host name", host, maxNameBytes); err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	if lease <= 0 {
		return nil, fmt.Errorf("claim: a lease of %v: give a positive duration ([fleet] lease)", lease)
	}
	if n <= 0 || len(candidates) == 0 {
		return nil, nil
	}
	order := make(map[string]int, len(candidates))
	var cands []string
	for _, id := range candidates {
		if err := checkName("task ID", id, maxTaskIDBytes); err != nil {
			return nil, fmt.Errorf("claim: %w", err)
		}
		if _, dup := order[id]; !dup {
			order[id] = len(cands)
			cands = append(cands, id)
		}
	}
	var out []Lease
	for round := 0; round < claimRounds && len(out) < n && len(cands) > 0; round++ {
		got, tried, err := f.claimRound(ctx, host, cands, order, n-len(out), lease, pending)
		if err != nil {
			return out, fmt.Errorf("claim for %s: %w", host, err)
		}
		out = append(out, got...)
		if len(tried) == 0 {
			break // nothing free: every candidate is under a live lease
		}
		cands = slices.DeleteFunc(cands, func(id string) bool { _, ok := tried[id]; return ok })
	}
	slices.SortFunc(out, func(a, b Lease) int { return order[a.TaskID] - order[b.TaskID] })
	return out, nil
}

// claimRound picks up to n of cands that look free or expired and
// inserts their leases in one transaction; it returns those it won and
// the set it tried (won or lost to another host meanwhile).
func (f *Fleet) claimRound(ctx context.Context, host string, cands []string, order map[string]int, n int, lease time.Duration, pending bool) ([]Lease, map[string]struct{}, error) {
	var out []Lease
	tried := map[string]struct{}{}
	err := pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error {
		// Claims take turns: each statement after the lock sees every
		// claim committed before it, so that hosts that all want the
		// board's first task do not pick it together and lose it to one
		// another (a new lease row is not rechecked the way a locked row
		// that changed is).
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockClaim); err != nil {
			return err
		}
		// Expired leases, locked: one a sweep or its holder's renewal
		// has locked is skipped. They are few (a lease lives while its
		// host does), so all are read and those of candidates kept: a
		// board's 10,000 candidates sent in the query cost more.
		type prev struct {
			host, run string
			expires   time.Time
			// revoked: the leader restarted the task already (Level 2),
			// and the lease ran out after its holder stopped renewing it:
			// the task is free, no restart of its own.
			revoked bool
		}
		expired := map[string]prev{}
		// Expired by the clock of now, not the transaction's start
		// (now()): a claim that waited its turn sees the leases that ran
		// out meanwhile. Their holders stopped their copies by then: each
		// counts its lease from before the database stamped it.
		rows, err := tx.Query(ctx, `SELECT task_id, host, run_id, expires, revoked IS NOT NULL FROM run_leases
			WHERE expires < clock_timestamp() ORDER BY task_id FOR UPDATE SKIP LOCKED`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			var p prev
			if err := rows.Scan(&id, &p.host, &p.run, &p.expires, &p.revoked); err != nil {
				rows.Close()
				return err
			}
			if _, ok := order[id]; ok {
				expired[id] = p
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		// The first n candidates under no lease at all, in order (and
		// pending on the board, their rows locked, for ClaimPending).
		q := `SELECT c.t FROM unnest($1::text[]) WITH ORDINALITY AS c(t, ord)
			WHERE NOT EXISTS (SELECT 1 FROM run_leases r WHERE r.task_id = c.t) ORDER BY c.ord LIMIT $2`
		if pending {
			q = `SELECT c.t FROM unnest($1::text[]) WITH ORDINALITY AS c(t, ord)
				JOIN board_tasks b ON b.id = c.t AND b.folder = 'pending'
				WHERE NOT EXISTS (SELECT 1 FROM run_leases r WHERE r.task_id = c.t)
				ORDER BY c.ord LIMIT $2 FOR UPDATE OF b SKIP LOCKED`
		}
		// The candidates go in windows, the first small: the board's
		// first pending tasks are mostly free.
		free := map[string]bool{}
		for start, window := 0, max(64, 4*n); start < len(cands) && len(free) < n; start, window = start+window, window*4 {
			chunk := cands[start:min(len(cands), start+window)]
			rows, err = tx.Query(ctx, q, chunk, n-len(free))
			if err != nil {
				return err
			}
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return err
				}
				free[id] = true
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		var ids, runs, reasons []string
		var prevHosts []*string
		for _, id := range cands {
			if len(ids) == n {
				break
			}
			p, isExpired := expired[id]
			if !isExpired && !free[id] {
				continue
			}
			tried[id] = struct{}{}
			run, err := newRunID()
			if err != nil {
				return err
			}
			ids, runs = append(ids, id), append(runs, run)
			if isExpired && !p.revoked {
				h := p.host
				prevHosts = append(prevHosts, &h)
				reasons = append(reasons, fmt.Sprintf("restart: host %s stopped renewing its lease on run %s of %s, which expired at %s",
					p.host, p.run, id, p.expires.UTC().Format(time.RFC3339)))
			} else {
				prevHosts = append(prevHosts, nil)
				reasons = append(reasons, "")
			}
		}
		if len(ids) == 0 {
			return nil
		}
		// A free task another host inserted meanwhile conflicts, and its
		// live lease fails the WHERE: it is not returned. The leases
		// start at the clock of this statement, once for all: the
		// transaction's start (now()) came before its wait for the
		// claims' lock, and a lease stamped with it was partly spent
		// when granted, its first renewal due maybe after it ran out.
		rows, err = tx.Query(ctx, `WITH at AS MATERIALIZED (SELECT clock_timestamp() AS t)
			INSERT INTO run_leases (task_id, host, run_id, started, renewed, expires, prev_host, reason)
			SELECT c.t, $1, r, at.t, at.t, at.t + $2 * interval '1 millisecond', p, nullif(why, '')
			FROM at, unnest($3::text[], $4::text[], $5::text[], $6::text[]) AS c(t, r, p, why)
			ON CONFLICT (task_id) DO UPDATE SET host = EXCLUDED.host, run_id = EXCLUDED.run_id,
				started = EXCLUDED.started, renewed = EXCLUDED.renewed, expires = EXCLUDED.expires,
				prev_host = run_leases.host, reason = EXCLUDED.reason, last_output = NULL, revoked = NULL
			WHERE run_leases.expires < clock_timestamp()
			RETURNING `+leaseColumns, host, lease.Milliseconds(), ids, runs, prevHosts, reasons)
		if err != nil {
			return err
		}
		out, err = scanLeases(rows)
		if err != nil {
			return err
		}
		for i := range out {
			if out[i].Reason == "" {
				out[i].PrevHost = "" // a free task: no one held it
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return out, tried, nil
}

// newRunID returns a run's ID: r- and 16 random hex digits.
func newRunID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("make a run ID: %w", err)
	}
	return "r-" + hex.EncodeToString(b[:]), nil
}

const leaseColumns = "task_id, host, run_id, started, renewed, expires, prev_host, reason, last_output, revoked"

func scanLeases(rows pgx.Rows) ([]Lease, error) {
	defer rows.Close()
	var out []Lease
	for rows.Next() {
		var l Lease
		var prev, reason, revoked *string
		var output *time.Time
		if err := rows.Scan(&l.TaskID, &l.Host, &l.RunID, &l.Started, &l.Renewed, &l.Expires, &prev, &reason, &output, &revoked); err != nil {
			return nil, err
		}
		l.PrevHost, l.Reason, l.Revoked = deref(prev), deref(reason), deref(revoked)
		if output != nil {
			l.LastOutput = *output
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

func readLeases(ctx context.Context, q querier, order string) ([]Lease, error) {
	rows, err := q.Query(ctx, "SELECT "+leaseColumns+" FROM run_leases "+order)
	if err != nil {
		return nil, err
	}
	return scanLeases(rows)
}

// Leases returns every lease, live and expired, oldest first.
func (f *Fleet) Leases(ctx context.Context) ([]Lease, error) {
	ls, err := readLeases(ctx, f.pool, "ORDER BY started, task_id")
	if err != nil {
		return nil, fmt.Errorf("read leases: %w", err)
	}
	return ls, nil
}

// Renew extends, to lease from now, the leases of held that host still
// holds (by run: a task taken over has another run), and returns the
// others: runs the host must stop, since another host restarted them or
// will, or the leader revoked them (Revoke). A lease past its expiry that
// no host took over is still the host's, and renewed. Each held lease's
// LastOutput, when not zero, is stored with it (by the database's clock:
// Renew sends how long ago it was by this host's), unless the lease has a
// later one already.
func (f *Fleet) Renew(ctx context.Context, host string, held []Lease, lease time.Duration) ([]Lost, error) {
	if err := checkName("host name", host, maxNameBytes); err != nil {
		return nil, fmt.Errorf("renew: %w", err)
	}
	if lease <= 0 {
		return nil, fmt.Errorf("renew: a lease of %v: give a positive duration ([fleet] lease)", lease)
	}
	if len(held) == 0 {
		return nil, nil
	}
	runs := make([]string, len(held))
	ages := make([]*int64, len(held)) // µs since the run's last output; nil: none given
	sent := time.Now()
	for i, l := range held {
		runs[i] = l.RunID
		if !l.LastOutput.IsZero() {
			// An output time after now (this host's clock stepped back
			// since) is now.
			age := max(sent.Sub(l.LastOutput), 0).Microseconds()
			ages[i] = &age
		}
	}
	// The renewal is stamped with the clock when the row is written
	// (clock_timestamp()), once the rows are locked: an UPDATE computes
	// its row before it waits for a row a claim, a sweep or a revocation
	// holds, and a lease stamped then, or at the transaction's start
	// (now()), was partly spent when granted. The last output is its age
	// before the transaction's start, which is when the age was measured.
	kept := map[string]bool{}
	err := pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM run_leases WHERE host = $1 AND run_id = ANY($2) AND revoked IS NULL
			ORDER BY task_id FOR UPDATE`, host, runs); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `UPDATE run_leases r SET renewed = clock_timestamp(), expires = clock_timestamp() + $3 * interval '1 millisecond',
				last_output = CASE WHEN o.age IS NULL THEN r.last_output
					ELSE greatest(r.last_output, now() - o.age * interval '1 microsecond') END
			FROM (SELECT DISTINCT ON (run) run, age FROM unnest($2::text[], $4::bigint[]) AS u(run, age) ORDER BY run, age) o
			WHERE r.host = $1 AND r.run_id = o.run AND r.revoked IS NULL
			RETURNING r.run_id`, host, runs, lease.Milliseconds(), ages)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var run string
			if err := rows.Scan(&run); err != nil {
				return err
			}
			kept[run] = true
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("renew %s's leases: %w", host, err)
	}
	var lost []Lost
	for _, l := range held {
		if kept[l.RunID] {
			continue
		}
		lo := Lost{TaskID: l.TaskID, RunID: l.RunID}
		var since time.Time
		var revoked *string
		err := f.pool.QueryRow(ctx, "SELECT host, run_id, started, revoked FROM run_leases WHERE task_id = $1", l.TaskID).
			Scan(&lo.Holder, &lo.HolderRun, &since, &revoked)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			lo.Reason = fmt.Sprintf("host %s lost its lease on run %s of %s (it expired and was swept, or was released): stop this copy; the task restarts",
				host, l.RunID, l.TaskID)
		case err != nil:
			return nil, fmt.Errorf("renew %s's leases: read who holds %s: %w", host, l.TaskID, err)
		case lo.Holder == host && lo.HolderRun == l.RunID && revoked != nil:
			// Its own lease, revoked: no one holds the task until this
			// host releases it (or it runs out).
			lo.Holder, lo.HolderRun = "", ""
			lo.Reason = fmt.Sprintf("the leader revoked host %s's lease on run %s of %s (%s): stop this copy; the task restarts",
				host, l.RunID, l.TaskID, *revoked)
		case lo.Holder == host && lo.HolderRun == l.RunID:
			continue // renewed meanwhile by another pass: still held
		default:
			lo.Reason = fmt.Sprintf("host %s lost its lease on run %s of %s: host %s took it over as run %s at %s: stop this copy",
				host, l.RunID, l.TaskID, lo.Holder, lo.HolderRun, since.UTC().Format(time.RFC3339))
		}
		lost = append(lost, lo)
	}
	return lost, nil
}

// maxRevokeBytes bounds a revocation's reason: the holder's log line
// quotes it.
const maxRevokeBytes = 1024

// Revoke takes run runID's lease on task taskID from its holder, for why
// (the leader's Level 2 stopping a stale run on another host): the
// holder's next Renew reports the run lost, with why, and its Keeper
// stops its copy. The lease is not freed at once: no host claims the
// task until the holder released it (Release, once its copy stopped) or
// the lease ran out unrenewed (its holder's own deadline stopped the copy
// by then), so that the revoked run and its restart never overlap; a
// Sweep then drops it without a restart of its own (the caller restarted
// the task). It reports whether the run held the lease, unrevoked: false
// when the run ended, was swept or taken over, or was revoked already.
func (f *Fleet) Revoke(ctx context.Context, taskID, runID, why string) (bool, error) {
	if err := checkName("task ID", taskID, maxTaskIDBytes); err != nil {
		return false, fmt.Errorf("revoke: %w", err)
	}
	if err := checkName("run ID", runID, maxNameBytes); err != nil {
		return false, fmt.Errorf("revoke: %w", err)
	}
	if err := checkReason(why); err != nil {
		return false, fmt.Errorf("revoke run %s of %s: %w", runID, taskID, err)
	}
	tag, err := f.pool.Exec(ctx, "UPDATE run_leases SET revoked = $3 WHERE task_id = $1 AND run_id = $2 AND revoked IS NULL",
		taskID, runID, why)
	if err != nil {
		return false, fmt.Errorf("revoke run %s of %s: %w", runID, taskID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// checkReason refuses a revocation's reason the holder could not log as
// one line: empty, too long, not UTF-8, or holding a control character.
func checkReason(why string) error {
	switch {
	case why == "":
		return errors.New("no reason: say why, for the holder's log")
	case len(why) > maxRevokeBytes:
		return fmt.Errorf("a reason of %d bytes: use at most %d", len(why), maxRevokeBytes)
	case !utf8.ValidString(why):
		return errors.New("the reason is not UTF-8")
	}
	for _, r := range why {
		if r < ' ' || r == 0x7f {
			return fmt.Errorf("the reason %q holds a control character: give one line", why)
		}
	}
	return nil
}

// Release ends host's lease on run runID, when its run ends; it reports
// whether the host still held it.
func (f *Fleet) Release(ctx context.Context, host, runID string) (bool, error) {
	tag, err := f.pool.Exec(ctx, "DELETE FROM run_leases WHERE host = $1 AND run_id = $2", host, runID)
	if err != nil {
		return false, fmt.Errorf("release %s's run %s: %w", host, runID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Sweep removes every expired lease no one is taking over, and returns
// them with the reason their tasks restart: the leader runs it, so that
// the runs of a host that died are restarted even when no host claims
// them. A revoked lease that ran out is removed and not returned: its
// task was restarted when it was revoked. Rows another host has locked (taking them over, or renewing
// them) are skipped.
func (f *Fleet) Sweep(ctx context.Context) ([]Expired, error) {
	rows, err := f.pool.Query(ctx, `WITH gone AS (
			DELETE FROM run_leases WHERE task_id IN (
				SELECT task_id FROM run_leases WHERE expires < now() ORDER BY expires FOR UPDATE SKIP LOCKED)
			RETURNING `+leaseColumns+`)
		SELECT g.task_id, g.host, g.run_id, g.started, g.renewed, g.expires, g.prev_host, g.reason, g.revoked IS NOT NULL, h.heartbeat
		FROM gone g LEFT JOIN fleet_hosts h ON h.host = g.host ORDER BY g.expires, g.task_id`)
	if err != nil {
		return nil, fmt.Errorf("sweep expired leases: %w", err)
	}
	defer rows.Close()
	var out []Expired
	for rows.Next() {
		var e Expired
		var prev, reason *string
		var beat *time.Time
		var revoked bool
		if err := rows.Scan(&e.TaskID, &e.Host, &e.RunID, &e.Started, &e.Renewed, &e.Expires, &prev, &reason, &revoked, &beat); err != nil {
			return nil, fmt.Errorf("sweep expired leases: %w", err)
		}
		if revoked {
			continue // the leader restarted its task when it revoked it
		}
		e.PrevHost, e.Lease.Reason = deref(prev), deref(reason)
		beatSaid := "it never sent a heartbeat"
		if beat != nil {
			e.LastHeartbeat = *beat
			beatSaid = "its last heartbeat was at " + beat.UTC().Format(time.RFC3339)
		}
		e.Reason = fmt.Sprintf("restart: host %s stopped renewing its lease on run %s of %s, which expired at %s (%s)",
			e.Host, e.RunID, e.TaskID, e.Expires.UTC().Format(time.RFC3339), beatSaid)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sweep expired leases: %w", err)
	}
	return out, nil
}
