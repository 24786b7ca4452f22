package pgstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/jackc/pgx/v5"

	"github.com/cra-dev/cra/internal/world"
)

// Import copies the file world log into this one, which must be empty,
// line for line: every line as written (malformed and empty ones too), at
// the same number and byte offset, each agent entry the file's fold skips
// marked skipped, and the fold of the agents as the file's. It is one
// transaction: a failure leaves the database as it was. It returns how
// many lines it copied. Stop every writer of the file first: a log that
// grows meanwhile, or ends mid-line, is refused. The read markers come
// along, at the same lines.
func (l *Log) Import(ctx context.Context, file *world.Log) (int64, error) {
	return l.ImportWith(ctx, file, nil)
}

// ImportWith is Import that calls also, when not nil, in the import's
// transaction after the log's lines: what else a fleet moves into the
// database with its log (internal/pgboard's tasks) commits with them or
// not at all.
func (l *Log) ImportWith(ctx context.Context, file *world.Log, also func(ctx context.Context, tx pgx.Tx) error) (int64, error) {
	// The file's own fold says which agent entries it skips (the lifecycle
	// forbids them where they stand, or a compaction vouched for them).
	skips := map[int64]*world.TransitionError{}
	end, err := file.Scan(ctx, world.Position{}, func(r *world.Record) error {
		if r.Skipped != nil {
			skips[r.Offset] = r.Skipped
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("import: read %s: %w", file.Path(), err)
	}
	markers, err := file.Markers(ctx)
	if err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	f, err := os.Open(file.Path())
	if err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	defer f.Close()

	var n int64
	err = pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockAppend); err != nil {
			return err
		}
		var have int64
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM world_log").Scan(&have); err != nil {
			return err
		}
		if have > 0 {
			return fmt.Errorf("the PostgreSQL world log already holds %d lines: import goes into an empty one", have)
		}
		agents := map[string]*world.AgentState{}
		var rows [][]any
		flush := func() error {
			if len(rows) == 0 {
				return nil
			}
			_, err := tx.CopyFrom(ctx, pgx.Identifier{"world_log"}, lineColumns, pgx.CopyFromRows(rows))
			rows = rows[:0]
			return err
		}
		br := bufio.NewReaderSize(io.NewSectionReader(f, 0, end.Offset), 256<<10)
		var off int64
		for {
			line, err := br.ReadBytes('\n')
			if errors.Is(err, io.EOF) {
				if len(line) > 0 {
					return fmt.Errorf("%s changed while importing: stop its writers and import again", file.Path())
				}
				break
			}
			if err != nil {
				return err
			}
			n++
			raw := line[:len(line)-1]
			r := world.NewRecord(raw, n, off)
			var e *world.Entry
			te := skips[off]
			if len(raw) > 0 && r.Err == nil {
				e = &r.Entry
				if te == nil {
					fold(agents, n, r.Entry)
				}
			}
			rows = append(rows, lineArgs(n, off, bytes.Clone(raw), e, te))
			off += int64(len(line))
			if len(rows) == batch {
				if err := flush(); err != nil {
					return err
				}
			}
			if n%batch == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
		}
		if err := flush(); err != nil {
			return err
		}
		if n != end.Line {
			return fmt.Errorf("%s changed while importing (%d lines, then %d): stop its writers and import again", file.Path(), end.Line, n)
		}
		if fi, err := f.Stat(); err != nil {
			return err
		} else if fi.Size() != end.Offset {
			return fmt.Errorf("%s holds %d bytes after its last complete line (a line being written, or torn): stop its writers; a torn line is cut off by its next append", file.Path(), fi.Size()-end.Offset)
		}
		for name, pos := range markers {
			if pos.Line > n {
				return fmt.Errorf("marker %q stands at line %d, past the log's %d", name, pos.Line, n)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO world_markers (name, line, updated) VALUES ($1, $2, $3)", name, pos.Line, l.Now().UTC()); err != nil {
				return err
			}
		}
		var arows [][]any
		for _, a := range agents {
			arows = append(arows, []any{[]byte(a.ID), string(a.Status), a.Since, a.Off, a.StartOff, a.Seen, a.UserAfter, a.Reviewed, a.Retries})
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"world_agents"},
			[]string{"id", "status", "since_ms", "line", "start_line", "seen_ms", "user_after", "reviewed", "retries"}, pgx.CopyFromRows(arows))
		if err != nil {
			return err
		}
		// The planner's statistics for the rows just copied: without
		// them it reads a big log whole for each batch of a read.
		if _, err := tx.Exec(ctx, "ANALYZE world_log, world_agents"); err != nil {
			return err
		}
		if also != nil {
			return also(ctx, tx)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("import %s: %w", file.Path(), err)
	}
	return n, nil
}

// fold applies e, at line id, to the agents' states, as the file's fold.
func fold(agents map[string]*world.AgentState, id int64, e world.Entry) {
	a := agents[e.ID]
	if a == nil {
		if e.Kind != world.KindAgent {
			return
		}
		a = &world.AgentState{ID: e.ID, StartOff: -1}
		agents[e.ID] = a
	}
	a.Fold(id, e)
}
