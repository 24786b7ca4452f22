// Package pgboard keeps the board's tasks in PostgreSQL (board.Store), in
// the database of the world log of internal/pgstore, for a fleet of hosts
// on one database (DESIGN.md "Scale", issue 34): the table board_tasks of
// pgstore's migration 0003, each row a task file's bytes. With that
// world log, a board change and its lifecycle entries commit in one
// transaction (board.Atomic).
//
// It sits beside pgstore, not in it: the world log's readers (workspace,
// 'cra log') do not take the board with them.
package pgboard

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/pgstore"
	"github.com/cra-dev/cra/internal/world"
)

// lockBoard is the key of the session advisory lock Tasks.Lock holds
// around each change of the board ("crb0").
const lockBoard int64 = 0x63726230

// Tasks is the board's store in PostgreSQL (board.Store): the table
// board_tasks, one row per task, its body the YAML the file
// tasks/<folder>/<id>.yaml would hold. A row is read as the file store
// reads a file (board.Parse, board.CheckID, board.MaxFileBytes, the id
// inside the body equal to the key): rows are input like any file.
//
// A task is in one folder, its key being its id: Put into another folder
// moves it, and Get never finds it in two (board.DuplicateError is the
// file store's). Tasks is board.Atomic: with the world log of the same
// database, a change and its log entries commit in one transaction.
type Tasks struct {
	log *pgstore.Log
	q   dbtx // the pool, or a transaction of Atomic
	// turn queues this process's Lock callers before the advisory lock,
	// so that one pooled connection at most waits on it: a pool of
	// waiters would leave none for the holder's own work.
	turn chan struct{}
}

var (
	_ board.Store  = (*Tasks)(nil)
	_ board.Atomic = (*Tasks)(nil)
)

// dbtx is a pool or a transaction.
type dbtx interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// New returns the board's store in the database of log.
func New(log *pgstore.Log) *Tasks {
	return &Tasks{log: log, q: log.Pool(), turn: make(chan struct{}, 1)}
}

// in returns t working in transaction tx.
func (t *Tasks) in(tx pgx.Tx) *Tasks { return &Tasks{log: t.log, q: tx, turn: t.turn} }

// RowError is a row of board_tasks that cannot be a task: what is wrong
// and how to repair it.
type RowError struct {
	ID     string
	Folder string
	Err    error
}

func (e *RowError) Error() string {
	return fmt.Sprintf("board_tasks row %q (folder %q): %v: fix the row, or delete it and run 'cra task rebuild' to recreate the task from the world log", e.ID, e.Folder, e.Err)
}

func (e *RowError) Unwrap() error { return e.Err }

// TaskOfRow reads one row of board_tasks as the file store reads a task
// file: the folder one of the six, the id a task id, the body within
// board.MaxFileBytes, parsed, and naming the same id.
func TaskOfRow(id, folder string, body []byte) (*board.Task, board.Folder, error) {
	f := board.Folder(folder)
	if !f.Valid() {
		return nil, "", &RowError{ID: id, Folder: folder, Err: fmt.Errorf("the folder is not one of %v", board.Folders())}
	}
	if err := board.CheckID(id); err != nil {
		return nil, "", &RowError{ID: id, Folder: folder, Err: err}
	}
	if len(body) > board.MaxFileBytes {
		return nil, "", &RowError{ID: id, Folder: folder, Err: fmt.Errorf("the body is %d bytes, over the limit of %d", len(body), board.MaxFileBytes)}
	}
	t, err := board.Parse(body)
	if err != nil {
		return nil, "", &RowError{ID: id, Folder: folder, Err: err}
	}
	if t.ID != id {
		return nil, "", &RowError{ID: id, Folder: folder, Err: &board.FieldError{Field: "id",
			Err: fmt.Sprintf("%q differs from the row's id", t.ID), Fix: fmt.Sprintf("set id: %s", id)}}
	}
	return t, f, nil
}

// Get implements board.Store.
func (t *Tasks) Get(ctx context.Context, id string) (*board.Task, board.Folder, error) {
	if err := board.CheckID(id); err != nil {
		return nil, "", err
	}
	var folder string
	var body []byte
	err := t.q.QueryRow(ctx, "SELECT folder, body FROM board_tasks WHERE id = $1", id).Scan(&folder, &body)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, "", fmt.Errorf("task %s: %w (see 'cra task list')", id, board.ErrNotFound)
	}
	if err != nil {
		return nil, "", fmt.Errorf("read task %s: %w", id, err)
	}
	task, f, err := TaskOfRow(id, folder, body)
	if err != nil {
		return nil, board.Folder(folder), err
	}
	return task, f, nil
}

// folderList is the folders a listing of folder reads, in order.
func folderList(folder board.Folder) []board.Folder {
	if folder == "" {
		return board.Folders()
	}
	return []board.Folder{folder}
}

// List implements board.Store: the folders in order, each by id in byte
// order (as the file store's directory listing); a row that is not a
// task is listed with its error. Listing every folder lists last the rows
// whose folder is none of the six, each with its error.
func (t *Tasks) List(ctx context.Context, folder board.Folder) ([]board.Listed, error) {
	if folder != "" && !folder.Valid() {
		return nil, fmt.Errorf("list tasks: folder %q is not one of %v", folder, board.Folders())
	}
	q := `SELECT id, folder, body, updated_ms FROM board_tasks WHERE folder = $1 ORDER BY id COLLATE "C"`
	var out []board.Listed
	var bodies [][]byte
	read := func(sql string, arg any) error {
		rows, err := t.q.Query(ctx, sql, arg)
		if err != nil {
			return fmt.Errorf("list tasks: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var id, f string
			var body []byte
			var ms int64
			if err := rows.Scan(&id, &f, &body, &ms); err != nil {
				return fmt.Errorf("list tasks: %w", err)
			}
			out = append(out, board.Listed{ID: id, Folder: board.Folder(f), ModTime: time.UnixMilli(ms)})
			bodies = append(bodies, body)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("list tasks: %w", err)
		}
		return nil
	}
	for _, f := range folderList(folder) {
		if err := read(q, string(f)); err != nil {
			return nil, err
		}
	}
	if folder == "" {
		names := make([]string, 0, 6)
		for _, f := range board.Folders() {
			names = append(names, string(f))
		}
		if err := read(`SELECT id, folder, body, updated_ms FROM board_tasks WHERE folder <> ALL($1) ORDER BY id COLLATE "C"`, names); err != nil {
			return nil, err
		}
	}
	parseAll(out, bodies)
	return out, nil
}

// parseAll reads each listed row's body (TaskOfRow), on every CPU: the
// YAML parse is nearly all a listing's time.
func parseAll(ls []board.Listed, bodies [][]byte) {
	workers := min(runtime.GOMAXPROCS(0), len(ls)/64+1)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(ls); i += workers {
				l := &ls[i]
				l.Task, _, l.Err = TaskOfRow(l.ID, string(l.Folder), bodies[i])
			}
		}()
	}
	wg.Wait()
}

// IDs implements board.Store; ids that are not task ids are left out
// (List reports them).
func (t *Tasks) IDs(ctx context.Context, folder board.Folder) ([]string, error) {
	var out []string
	for _, f := range folderList(folder) {
		rows, err := t.q.Query(ctx, `SELECT id FROM board_tasks WHERE folder = $1 ORDER BY id COLLATE "C"`, string(f))
		if err != nil {
			return nil, fmt.Errorf("list tasks: %w", err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, fmt.Errorf("list tasks: %w", err)
		}
		for _, id := range ids {
			if board.CheckID(id) == nil {
				out = append(out, id)
			}
		}
	}
	return out, nil
}

// Put implements board.Store. The task is checked and encoded as the file
// store writes it; a copy in another folder is replaced (a task is in one
// folder).
func (t *Tasks) Put(ctx context.Context, task *board.Task, folder board.Folder) error {
	if !folder.Valid() {
		return fmt.Errorf("put task %s: folder %q is not one of %v", task.ID, folder, board.Folders())
	}
	if err := board.CheckID(task.ID); err != nil {
		return err
	}
	if err := task.Validate(); err != nil {
		return fmt.Errorf("task %s: %w", task.ID, err)
	}
	body, err := board.Encode(task)
	if err != nil {
		return err
	}
	if len(body) > board.MaxFileBytes {
		return fmt.Errorf("task %s is %d bytes, over the limit of %d: shorten its notes or results.output", task.ID, len(body), board.MaxFileBytes)
	}
	_, err = t.q.Exec(ctx, `INSERT INTO board_tasks (id, folder, body, updated_ms) VALUES ($1, $2, $3, $4)
		ON CONFLICT (id) DO UPDATE SET folder = $2, body = $3, updated_ms = $4`,
		task.ID, string(folder), body, t.log.Now().UnixMilli())
	if err != nil {
		return fmt.Errorf("write task %s: %w", task.ID, err)
	}
	return nil
}

// Move implements board.Store.
func (t *Tasks) Move(ctx context.Context, id string, from, to board.Folder) error {
	if !from.Valid() || !to.Valid() {
		return fmt.Errorf("move task %s: folders %q and %q must be among %v", id, from, to, board.Folders())
	}
	if from == to {
		return nil
	}
	tag, err := t.q.Exec(ctx, "UPDATE board_tasks SET folder = $3, updated_ms = $4 WHERE id = $1 AND folder = $2",
		id, string(from), string(to), t.log.Now().UnixMilli())
	if err != nil {
		return fmt.Errorf("move task %s: %w", id, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var at string
	err = t.q.QueryRow(ctx, "SELECT folder FROM board_tasks WHERE id = $1", id).Scan(&at)
	if err == nil && at == string(to) {
		return nil // moved already, by a rebuild that read the same log
	}
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("move task %s: %w", id, err)
	}
	return fmt.Errorf("move task %s: not in %s: %w", id, from, board.ErrNotFound)
}

// Delete implements board.Store.
func (t *Tasks) Delete(ctx context.Context, id string, folder board.Folder) error {
	tag, err := t.q.Exec(ctx, "DELETE FROM board_tasks WHERE id = $1 AND folder = $2", id, string(folder))
	if err != nil {
		return fmt.Errorf("delete task %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete task %s: not in %s: %w", id, folder, board.ErrNotFound)
	}
	return nil
}

// Lock implements board.Store with a session advisory lock held on a
// connection of its own until unlock: every process on every host that
// changes this board takes turns. It waits until ctx ends.
func (t *Tasks) Lock(ctx context.Context) (func(), error) {
	select {
	case t.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("lock board: %w", ctx.Err())
	}
	conn, err := t.log.Pool().Acquire(ctx)
	if err != nil {
		<-t.turn
		return nil, fmt.Errorf("lock board: %w", err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", lockBoard); err != nil {
		conn.Release()
		<-t.turn
		return nil, fmt.Errorf("lock board: %w", err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", lockBoard); err != nil {
				// Closing the session releases its locks.
				conn.Hijack().Close(ctx)
			} else {
				conn.Release()
			}
			<-t.turn
		})
	}, nil
}

// Sweep implements board.Store: a transaction leaves nothing half
// written, so there is nothing to sweep.
func (t *Tasks) Sweep(ctx context.Context, age time.Duration, dryRun bool) ([]string, error) {
	return nil, nil
}

// Atomic implements board.Atomic: when log is this database's world log,
// fn's appends and changes run in one transaction, each append still
// taking its turn for a line number (so other writers of the log wait
// for the commit); otherwise fn runs on log and t as they are.
func (t *Tasks) Atomic(ctx context.Context, log world.Store, fn func(world.Store, board.Store) error) error {
	pl, ok := log.(*pgstore.Log)
	if !ok || pl.Pool() != t.log.Pool() {
		return fn(log, t)
	}
	if _, inTx := t.q.(pgx.Tx); inTx {
		return fn(log, t)
	}
	return pl.Tx(ctx, func(tx pgx.Tx, log world.Store) error {
		return fn(log, t.in(tx))
	})
}
