package pgstore

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cra-dev/cra/internal/world"
)

// Log is the world log in PostgreSQL. It is safe for concurrent use, and
// any number of processes on any number of hosts may append at once.
type Log struct {
	// Now stamps new entries and measures silence; Open sets time.Now.
	Now func() time.Time

	pool *pgxpool.Pool
	// recheck replaces followRecheck when set (tests: an hour, so that
	// only a notification wakes Follow).
	recheck time.Duration
	// notices is the session holding the notification queue's lock.
	notices noticeHold
}

var _ world.Store = (*Log)(nil)

// batch is how many rows a read fetches at a time: reads go by id
// (keyset), holding no transaction open while the caller works.
const batch = 4096

// Event appends [now][event:source][id] output (world.Log.Event).
func (l *Log) Event(ctx context.Context, source world.Source, id, output string) (world.Entry, error) {
	return l.Append(ctx, world.Entry{Kind: world.KindEvent, Source: source, ID: id, Output: output})
}

// Agent appends an agent entry after the lifecycle's check
// (world.Log.Agent).
func (l *Log) Agent(ctx context.Context, status world.Status, id, output, need string) (world.Entry, error) {
	return l.Append(ctx, world.Entry{Kind: world.KindAgent, Status: status, ID: id, Output: output, Need: need})
}

// Verify logs the review of finished agent id, then its verified entry
// (world.Log.Verify).
func (l *Log) Verify(ctx context.Context, id, review, output string) (world.Entry, error) {
	a, _, err := l.Lookup(ctx, id)
	if err != nil {
		return world.Entry{}, err
	}
	if a.Status != world.StatusFinish {
		return world.Entry{}, &world.TransitionError{ID: id, From: a.Status, To: world.StatusVerified}
	}
	if _, err := l.Event(ctx, world.SourceReview, id, review); err != nil {
		return world.Entry{}, err
	}
	return l.Agent(ctx, world.StatusVerified, id, output, "")
}

// Begin records that agent id begins a run (world.Log.Begin).
func (l *Log) Begin(ctx context.Context, id, output, need string) error {
	a, ok, err := l.Lookup(ctx, id)
	if err != nil {
		return err
	}
	if !ok {
		if _, err := l.Agent(ctx, world.StatusStart, id, output, need); err != nil {
			return err
		}
	} else if a.Status != world.StatusStart && a.Status != world.StatusRetry {
		return &world.TransitionError{ID: id, From: a.Status, To: world.StatusActive}
	}
	_, err = l.Agent(ctx, world.StatusActive, id, output, "")
	return err
}

// Append writes e as one row, in one transaction with the fold of its
// agent: the check of an agent entry and its write are not split by
// another append, on any host, and a refused entry writes nothing.
func (l *Log) Append(ctx context.Context, e world.Entry) (world.Entry, error) {
	e, line, err := world.Prepare(e, l.Now)
	if err != nil {
		return world.Entry{}, err
	}
	err = pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		return appendTx(ctx, tx, e, line[:len(line)-1])
	})
	if err != nil {
		return world.Entry{}, appendError(err)
	}
	return e, nil
}

// appendError is the error of an append that failed: a refused entry's
// *world.TransitionError as it is.
func appendError(err error) error {
	var te *world.TransitionError
	if errors.As(err, &te) {
		return te
	}
	return fmt.Errorf("append to world log: %w", err)
}

// appendTx writes e, prepared as line raw (world.Prepare), in
// transaction tx, which holds the turn for a line number until it ends.
func appendTx(ctx context.Context, tx pgx.Tx, e world.Entry, raw []byte) error {
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockAppend); err != nil {
		return err
	}
	id, off, err := nextLine(ctx, tx)
	if err != nil {
		return err
	}
	a, err := agentState(ctx, tx, e.ID)
	if err != nil {
		return err
	}
	if te := a.Check(e); te != nil {
		return te
	}
	if err := insertLine(ctx, tx, id, off, raw, &e, nil); err != nil {
		return err
	}
	if a == nil && e.Kind == world.KindAgent {
		a = &world.AgentState{ID: e.ID, StartOff: -1}
	}
	if a != nil {
		a.Fold(id, e)
		if err := saveAgent(ctx, tx, a); err != nil {
			return err
		}
	}
	// Every append wakes the followers (Follow), on every host, once
	// it commits: the payload is the new line's id.
	_, err = tx.Exec(ctx, "SELECT pg_notify($1, $2)", notifyChannel, strconv.FormatInt(id, 10))
	return err
}

// nextLine returns the number and byte offset of the line after the last.
func nextLine(ctx context.Context, tx pgx.Tx) (id, off int64, err error) {
	var last, lastOff, n int64
	err = tx.QueryRow(ctx, "SELECT id, off, octet_length(raw) FROM world_log ORDER BY id DESC LIMIT 1").Scan(&last, &lastOff, &n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 1, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	return last + 1, lastOff + n + 1, nil
}

// insertLine writes one row; e is nil for a malformed or empty line, te
// set for an agent entry the fold skips.
func insertLine(ctx context.Context, tx pgx.Tx, id, off int64, raw []byte, e *world.Entry, te *world.TransitionError) error {
	args := lineArgs(id, off, raw, e, te)
	_, err := tx.Exec(ctx, `INSERT INTO world_log (id, off, raw, kind, source, status, ident, ts_ms,
		skip_from, skip_to, skip_user, skip_review) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`, args...)
	return err
}

// lineColumns are world_log's columns in the order lineArgs gives them.
var lineColumns = []string{"id", "off", "raw", "kind", "source", "status", "ident", "ts_ms",
	"skip_from", "skip_to", "skip_user", "skip_review"}

func lineArgs(id, off int64, raw []byte, e *world.Entry, te *world.TransitionError) []any {
	args := []any{id, off, raw, nil, nil, nil, nil, nil, nil, nil, nil, nil}
	if e != nil {
		args[3] = string(e.Kind)
		if e.Kind == world.KindEvent {
			args[4] = string(e.Source)
		} else {
			args[5] = string(e.Status)
		}
		args[6] = []byte(e.ID)
		args[7] = e.Time.UnixMilli()
	}
	if te != nil {
		args[8], args[9], args[10], args[11] = string(te.From), string(te.To), te.NeedsUser, te.NeedsReview
	}
	return args
}

// agentState reads the fold of agent id; nil when it has no entry.
func agentState(ctx context.Context, q querier, id string) (*world.AgentState, error) {
	rows, err := q.Query(ctx, "SELECT "+agentColumns+" FROM world_agents WHERE id = $1", []byte(id))
	if err != nil {
		return nil, err
	}
	as, err := scanAgents(rows)
	if err != nil || len(as) == 0 {
		return nil, err
	}
	return as[0], nil
}

const agentColumns = "id, status, since_ms, line, start_line, seen_ms, user_after, reviewed, retries"

func scanAgents(rows pgx.Rows) ([]*world.AgentState, error) {
	defer rows.Close()
	var out []*world.AgentState
	for rows.Next() {
		var a world.AgentState
		var id []byte
		var status string
		if err := rows.Scan(&id, &status, &a.Since, &a.Off, &a.StartOff, &a.Seen, &a.UserAfter, &a.Reviewed, &a.Retries); err != nil {
			return nil, err
		}
		a.ID, a.Status = string(id), world.Status(status)
		out = append(out, &a)
	}
	return out, rows.Err()
}

func saveAgent(ctx context.Context, tx pgx.Tx, a *world.AgentState) error {
	_, err := tx.Exec(ctx, `INSERT INTO world_agents (`+agentColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (id) DO UPDATE SET status = $2, since_ms = $3, line = $4, start_line = $5, seen_ms = $6,
		user_after = $7, reviewed = $8, retries = $9`,
		[]byte(a.ID), string(a.Status), a.Since, a.Off, a.StartOff, a.Seen, a.UserAfter, a.Reviewed, a.Retries)
	return err
}

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// allAgents reads every agent's fold.
func (l *Log) allAgents(ctx context.Context) ([]*world.AgentState, error) {
	rows, err := l.pool.Query(ctx, "SELECT "+agentColumns+" FROM world_agents")
	if err != nil {
		return nil, fmt.Errorf("read agents: %w", err)
	}
	as, err := scanAgents(rows)
	if err != nil {
		return nil, fmt.Errorf("read agents: %w", err)
	}
	return as, nil
}

// Lookup returns the current state of agent id, and false when the log
// has no agent entry for it.
func (l *Log) Lookup(ctx context.Context, id string) (world.Agent, bool, error) {
	a, err := agentState(ctx, l.pool, id)
	if err != nil {
		return world.Agent{}, false, fmt.Errorf("read agent %s: %w", id, err)
	}
	if a == nil {
		return world.Agent{}, false, nil
	}
	out, err := l.agents(ctx, []*world.AgentState{a})
	if err != nil {
		return world.Agent{}, false, err
	}
	return out[0], true, nil
}

// Current returns the latest state of every agent, oldest status first.
func (l *Log) Current(ctx context.Context) ([]world.Agent, error) {
	return l.pick(ctx, func(*world.AgentState) bool { return true })
}

// CurrentIn is Current narrowed to statuses.
func (l *Log) CurrentIn(ctx context.Context, statuses ...world.Status) ([]world.Agent, error) {
	return l.pick(ctx, func(a *world.AgentState) bool { return slices.Contains(statuses, a.Status) })
}

// Limbo returns the unsettled agents silent for longer than silent
// (world.Log.Limbo).
func (l *Log) Limbo(ctx context.Context, silent time.Duration) ([]world.Agent, error) {
	now := l.Now()
	return l.pick(ctx, func(a *world.AgentState) bool { return a.InLimbo(now, silent) })
}

// AnsweredFailed returns the failed agents a person answered since.
func (l *Log) AnsweredFailed(ctx context.Context) ([]world.Agent, error) {
	return l.pick(ctx, func(a *world.AgentState) bool { return a.Status == world.StatusFailed && a.UserAfter })
}

// CountAgents counts what Current (silent 0) or Limbo would return whose
// entry-shaped state match selects (world.Log.CountAgents).
func (l *Log) CountAgents(ctx context.Context, silent time.Duration, match func(world.Entry) bool) (int, error) {
	as, err := l.allAgents(ctx)
	if err != nil {
		return 0, err
	}
	now := l.Now()
	n := 0
	for _, a := range as {
		if silent > 0 && !a.InLimbo(now, silent) {
			continue
		}
		if match == nil || match(world.Entry{Kind: world.KindAgent, Status: a.Status, ID: a.ID, Time: time.UnixMilli(a.Since).UTC()}) {
			n++
		}
	}
	return n, nil
}

// Statuses returns every agent's current status.
func (l *Log) Statuses(ctx context.Context) (map[string]world.Status, error) {
	as, err := l.allAgents(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]world.Status, len(as))
	for _, a := range as {
		out[a.ID] = a.Status
	}
	return out, nil
}

func (l *Log) pick(ctx context.Context, keep func(*world.AgentState) bool) ([]world.Agent, error) {
	as, err := l.allAgents(ctx)
	if err != nil {
		return nil, err
	}
	picked := as[:0]
	for _, a := range as {
		if keep(a) {
			picked = append(picked, a)
		}
	}
	slices.SortFunc(picked, func(a, b *world.AgentState) int {
		return cmp.Or(cmp.Compare(a.Since, b.Since), cmp.Compare(a.ID, b.ID))
	})
	return l.agents(ctx, picked)
}

// agents reads the lines the states point at and returns the full states.
func (l *Log) agents(ctx context.Context, as []*world.AgentState) ([]world.Agent, error) {
	ids := make([]int64, 0, 2*len(as))
	for _, a := range as {
		ids = append(ids, a.Off)
		if a.StartOff >= 0 {
			ids = append(ids, a.StartOff)
		}
	}
	entries := make(map[int64]world.Entry, len(ids))
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), batch)]
		ids = ids[len(chunk):]
		rows, err := l.pool.Query(ctx, "SELECT id, raw FROM world_log WHERE id = ANY($1)", chunk)
		if err != nil {
			return nil, fmt.Errorf("read agents' lines: %w", err)
		}
		for rows.Next() {
			var id int64
			var raw []byte
			if err := rows.Scan(&id, &raw); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read agents' lines: %w", err)
			}
			e, err := world.ParseLine(raw)
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("world log line %d, an agent's latest, does not parse: %w", id, err)
			}
			entries[id] = e
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("read agents' lines: %w", err)
		}
	}
	out := make([]world.Agent, 0, len(as))
	for _, a := range as {
		e, ok := entries[a.Off]
		if !ok {
			return nil, fmt.Errorf("world log has no line %d, agent %s's latest", a.Off, a.ID)
		}
		ag := world.Agent{
			ID: a.ID, Status: a.Status, Since: time.UnixMilli(a.Since).UTC(), LastSeen: time.UnixMilli(a.Seen).UTC(),
			Retries: a.Retries, UserAnswered: a.UserAfter, Output: e.Output, Need: e.Need,
		}
		if a.StartOff >= 0 {
			ag.Criteria = entries[a.StartOff].Need
		}
		out = append(out, ag)
	}
	return out, nil
}

// maxSkips is how many skipped entries Skipped lists, as the file's.
const maxSkips = 1024

// Skipped returns the latest entries the fold ignored, oldest first, and
// how many it ignored in all.
func (l *Log) Skipped(ctx context.Context) ([]world.Skip, int, error) {
	var total int
	if err := l.pool.QueryRow(ctx, "SELECT count(*) FROM world_log WHERE skip_to IS NOT NULL").Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("read skipped entries: %w", err)
	}
	rows, err := l.pool.Query(ctx, "SELECT "+recordColumns+" FROM world_log WHERE skip_to IS NOT NULL ORDER BY id DESC LIMIT $1", maxSkips)
	if err != nil {
		return nil, 0, fmt.Errorf("read skipped entries: %w", err)
	}
	var out []world.Skip
	err = scanRecords(rows, func(r *world.Record) error {
		s := world.Skip{Line: r.Line, Offset: r.Offset, Err: r.Skipped}
		if r.Err == nil {
			s.Entry = r.Entry
		}
		out = append(out, s)
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("read skipped entries: %w", err)
	}
	slices.Reverse(out)
	return out, total, nil
}

const recordColumns = "id, off, raw, skip_from, skip_to, skip_user, skip_review"

// scanRecords calls fn with each row as the record a reader of the file
// gets for its line.
func scanRecords(rows pgx.Rows, fn func(*world.Record) error) error {
	defer rows.Close()
	for rows.Next() {
		var id, off int64
		var raw []byte
		var from, to *string
		var user, review *bool
		if err := rows.Scan(&id, &off, &raw, &from, &to, &user, &review); err != nil {
			return err
		}
		r := world.NewRecord(raw, id, off)
		if to != nil && r.Err == nil {
			r.Skipped = &world.TransitionError{ID: r.Entry.ID, From: world.Status(deref(from)), To: world.Status(*to),
				NeedsUser: user != nil && *user, NeedsReview: review != nil && *review}
		}
		if err := fn(&r); err != nil {
			return err
		}
	}
	return rows.Err()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// where is the SQL that narrows rows to those f may select: a superset,
// which world.Prefilter and world.Selects then make exact. A malformed
// line passes every condition but Text, as in the file.
func where(f world.Filter, args []any) (string, []any) {
	conds := []string{"octet_length(raw) > 0"}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	var parsed []string
	if f.Kind != "" {
		parsed = append(parsed, "kind = "+arg(string(f.Kind)))
	}
	if len(f.Statuses) > 0 {
		ss := make([]string, len(f.Statuses))
		for i, s := range f.Statuses {
			ss[i] = string(s)
		}
		parsed = append(parsed, "kind = 'agent' AND status = ANY("+arg(ss)+")")
	}
	if len(f.Sources) > 0 {
		ss := make([]string, len(f.Sources))
		for i, s := range f.Sources {
			ss[i] = string(s)
		}
		parsed = append(parsed, "kind = 'event' AND source = ANY("+arg(ss)+")")
	}
	if len(f.IDs) > 0 {
		ids := make([][]byte, len(f.IDs))
		for i, s := range f.IDs {
			ids[i] = []byte(s)
		}
		parsed = append(parsed, "ident = ANY("+arg(ids)+")")
	}
	// A millisecond of slack each side: a line of another writer may
	// carry a finer time than the column keeps.
	if !f.Since.IsZero() {
		parsed = append(parsed, "ts_ms >= "+arg(f.Since.UnixMilli()-1))
	}
	if !f.Until.IsZero() {
		parsed = append(parsed, "ts_ms <= "+arg(f.Until.UnixMilli()+1))
	}
	if len(parsed) > 0 {
		conds = append(conds, "(kind IS NULL OR ("+strings.Join(parsed, ") AND (")+"))")
	}
	if f.Text != "" {
		conds = append(conds, "position("+arg([]byte(f.Text))+"::bytea IN raw) > 0")
	}
	return strings.Join(conds, " AND "), args
}

// Select calls fn for each record f selects, in order (world.Log.Select).
func (l *Log) Select(ctx context.Context, f world.Filter, fn func(*world.Record) error) error {
	_, err := l.scanFrom(ctx, world.Position{}, f, true, fn)
	return err
}

// Scan calls fn for each non-empty line after from, malformed ones
// included, and returns the position after the last (world.Log.Scan).
func (l *Log) Scan(ctx context.Context, from world.Position, fn func(*world.Record) error) (world.Position, error) {
	return l.scanFrom(ctx, from, world.Filter{}, false, fn)
}

// scanFrom reads the rows after from in batches, calling fn for those f
// selects; it returns the position after the last row of the log read.
func (l *Log) scanFrom(ctx context.Context, from world.Position, f world.Filter, filter bool, fn func(*world.Record) error) (world.Position, error) {
	pre := world.Prefilter(f)
	cond, args := where(f, nil)
	end, err := l.end(ctx)
	if err != nil {
		return from, err
	}
	if end.Line <= from.Line {
		return from, nil
	}
	q := "SELECT " + recordColumns + " FROM world_log WHERE " + cond +
		fmt.Sprintf(" AND id > $%d AND id <= $%d ORDER BY id LIMIT %d", len(args)+1, len(args)+2, batch)
	at := from.Line
	for {
		if err := ctx.Err(); err != nil {
			return from, err
		}
		rows, err := l.pool.Query(ctx, q, append(args, at, end.Line)...)
		if err != nil {
			return from, fmt.Errorf("read world log: %w", err)
		}
		var recs []world.Record
		got := 0
		err = scanRecords(rows, func(r *world.Record) error {
			got++
			at = r.Line
			if !filter || (pre(r.Raw) && world.Selects(&f, r)) {
				recs = append(recs, *r)
			}
			return nil
		})
		if err != nil {
			return from, fmt.Errorf("read world log: %w", err)
		}
		for i := range recs {
			if err := fn(&recs[i]); err != nil {
				return from, err
			}
		}
		if got < batch {
			return end, nil
		}
	}
}

// end returns the position after the log's last line.
func (l *Log) end(ctx context.Context) (world.Position, error) {
	var id, off, n int64
	err := l.pool.QueryRow(ctx, "SELECT id, off, octet_length(raw) FROM world_log ORDER BY id DESC LIMIT 1").Scan(&id, &off, &n)
	if errors.Is(err, pgx.ErrNoRows) {
		return world.Position{}, nil
	}
	if err != nil {
		return world.Position{}, fmt.Errorf("read world log: %w", err)
	}
	return world.Position{Offset: off + n + 1, Line: id}, nil
}

// Tail calls fn, oldest first, for the last n records f selects, and
// returns the end of the log: the position Follow goes on from.
func (l *Log) Tail(ctx context.Context, n int, f world.Filter, fn func(*world.Record) error) (world.Position, error) {
	end, err := l.end(ctx)
	if err != nil || n <= 0 {
		return end, err
	}
	pre := world.Prefilter(f)
	cond, args := where(f, nil)
	q := "SELECT " + recordColumns + " FROM world_log WHERE " + cond +
		fmt.Sprintf(" AND id < $%d ORDER BY id DESC LIMIT %d", len(args)+1, batch)
	var recs []world.Record // newest first
	at := end.Line + 1
	for len(recs) < n {
		rows, err := l.pool.Query(ctx, q, append(args, at)...)
		if err != nil {
			return end, fmt.Errorf("read world log: %w", err)
		}
		got := 0
		err = scanRecords(rows, func(r *world.Record) error {
			got++
			at = r.Line
			if len(recs) < n && pre(r.Raw) && world.Selects(&f, r) {
				recs = append(recs, *r)
			}
			return nil
		})
		if err != nil {
			return end, fmt.Errorf("read world log: %w", err)
		}
		if got < batch {
			break
		}
	}
	for i := len(recs) - 1; i >= 0; i-- {
		if err := fn(&recs[i]); err != nil {
			return end, err
		}
	}
	return end, nil
}

// CheckThen calls fn for each line after the read marker name, then done,
// then moves the marker past them (world.Log.CheckThen).
func (l *Log) CheckThen(ctx context.Context, name string, fn func(*world.Record) error, done func() error) (world.Position, error) {
	if err := world.CheckMarkerName(name); err != nil {
		return world.Position{}, err
	}
	var line int64
	err := l.pool.QueryRow(ctx, "SELECT line FROM world_markers WHERE name = $1", name).Scan(&line)
	existed := err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return world.Position{}, fmt.Errorf("read marker %s: %w", name, err)
	}
	from := world.Position{Line: line}
	if existed && line > 0 {
		var off, n int64
		err := l.pool.QueryRow(ctx, "SELECT off, octet_length(raw) FROM world_log WHERE id = $1", line).Scan(&off, &n)
		if errors.Is(err, pgx.ErrNoRows) {
			return world.Position{}, fmt.Errorf("marker %q: %w (it names line %d, past the log's end): run 'cra log check --marker %s --reset' to read from the start", name, world.ErrStaleMarker, line, name)
		}
		if err != nil {
			return world.Position{}, fmt.Errorf("read marker %s: %w", name, err)
		}
		from.Offset = off + n + 1
	}
	pos, err := l.Scan(ctx, from, fn)
	if err == nil && done != nil {
		err = done()
	}
	if err != nil {
		return from, err
	}
	if pos == from && existed {
		return pos, nil
	}
	_, err = l.pool.Exec(ctx, `INSERT INTO world_markers (name, line, updated) VALUES ($1, $2, $3)
		ON CONFLICT (name) DO UPDATE SET line = $2, updated = $3`, name, pos.Line, l.Now().UTC())
	if err != nil {
		return from, fmt.Errorf("move marker %s: %w", name, err)
	}
	return pos, nil
}

// HasMarker reports whether the read marker name exists
// (world.Log.HasMarker): a reader that must not replay the whole log on
// its first check (the leader's notifications) sets it at the end first.
func (l *Log) HasMarker(ctx context.Context, name string) (bool, error) {
	if err := world.CheckMarkerName(name); err != nil {
		return false, err
	}
	var n int
	if err := l.pool.QueryRow(ctx, "SELECT count(*) FROM world_markers WHERE name = $1", name).Scan(&n); err != nil {
		return false, fmt.Errorf("read marker %s: %w", name, err)
	}
	return n > 0, nil
}

// ResetMarker removes the read marker name; a missing one is no error.
func (l *Log) ResetMarker(ctx context.Context, name string) error {
	if err := world.CheckMarkerName(name); err != nil {
		return err
	}
	if _, err := l.pool.Exec(ctx, "DELETE FROM world_markers WHERE name = $1", name); err != nil {
		return fmt.Errorf("reset marker: %w", err)
	}
	return nil
}

// Export writes every line, in order, each with its newline: the
// plain-text world.log, byte for byte as the file backend holds it.
func (l *Log) Export(ctx context.Context, w io.Writer) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	end, err := l.end(ctx)
	if err != nil {
		return err
	}
	for at := int64(0); at < end.Line; {
		rows, err := l.pool.Query(ctx, "SELECT id, raw FROM world_log WHERE id > $1 AND id <= $2 ORDER BY id LIMIT $3", at, end.Line, batch)
		if err != nil {
			return fmt.Errorf("export world log: %w", err)
		}
		got := 0
		for rows.Next() {
			got++
			var raw []byte
			if err := rows.Scan(&at, &raw); err != nil {
				rows.Close()
				return fmt.Errorf("export world log: %w", err)
			}
			bw.Write(raw)
			bw.WriteByte('\n')
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("export world log: %w", err)
		}
		if got == 0 {
			return fmt.Errorf("export world log: no line after %d, short of its end at %d", at, end.Line)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export world log: %w", err)
	}
	return nil
}
