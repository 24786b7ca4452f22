package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cra-dev/cra/internal/atomicfile"
	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/jsonl"
	"github.com/cra-dev/cra/internal/pgboard"
	"github.com/cra-dev/cra/internal/pgstore"
	"github.com/cra-dev/cra/internal/review"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/workspace"
	"github.com/cra-dev/cra/internal/world"
)

// postgresBoard opens the board of ws's PostgreSQL ([fleet]
// database_url_env): its tasks and its world log, in one database, so
// that a change and its log entries commit together (board.Atomic).
// close releases the connections.
func postgresBoard(ctx context.Context, ws *workspace.Workspace, now func() time.Time, getenv func(string) string) (*board.Board, func(), error) {
	l, err := openPostgres(ctx, ws.Config, getenv)
	if err != nil {
		return nil, nil, err
	}
	l.Now = now
	return board.New(pgboard.New(l), l), l.Close, nil
}

// openPostgres opens the world log of cfg's PostgreSQL, whose URL getenv
// reads from the variable [fleet] database_url_env names.
func openPostgres(ctx context.Context, cfg *config.Config, getenv func(string) string) (*pgstore.Log, error) {
	fs, err := cfg.FleetSettings()
	if err != nil {
		return nil, err
	}
	url, err := fs.DatabaseURL(getenv)
	if err != nil {
		return nil, err
	}
	return pgstore.Open(ctx, url)
}

// Moved says what Import or Export moved.
type Moved struct {
	Lines int64 // of the world log
	Tasks int   // of the board, all six folders
	// Reviews counts the review histories' records, and Notices the
	// notifications not told yet (the recycler's state besides the log).
	Reviews, Notices int
	// BadNotices counts the lines of notify-pending.jsonl that do not
	// parse: the recycler skips them, and so does the import; they stay
	// in the file.
	BadNotices int
}

// Import moves the file board and world log of the state directory
// stateDir into cfg's PostgreSQL, whose log and board must be empty, in
// one transaction: every line as written (pgstore.Log.Import), every
// task file's bytes in its folder (pgboard.Import), and the recycler's
// review histories and notifications not told yet
// (pgstore.ImportRecycler). A failure leaves the
// database as it was. Stop 'cra serve' and the agents first. The files
// stay where they are; Export gives them back byte for byte.
func Import(ctx context.Context, stateDir string, cfg *config.Config, getenv func(string) string) (Moved, error) {
	if _, err := os.Stat(world.Path(stateDir)); err != nil {
		return Moved{}, fmt.Errorf("no world log to import: %w", err)
	}
	file, err := world.Open(stateDir)
	if err != nil {
		return Moved{}, err
	}
	l, err := openPostgres(ctx, cfg, getenv)
	if err != nil {
		return Moved{}, err
	}
	defer l.Close()
	files := board.NewFileStore(stateDir)
	// The board holds still while it is copied.
	unlock, err := files.Lock(ctx)
	if err != nil {
		return Moved{}, err
	}
	defer unlock()
	var m Moved
	rs, err := readRecycler(stateDir, &m)
	if err != nil {
		return Moved{}, err
	}
	m.Lines, err = l.ImportWith(ctx, file, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		if m.Tasks, err = pgboard.Import(ctx, tx, files); err != nil {
			return err
		}
		return pgstore.ImportRecycler(ctx, tx, rs)
	})
	return m, err
}

// readRecycler reads the recycler's state in stateDir: every task's
// reviews file under runs/, and notify-pending.jsonl. It counts them in m.
func readRecycler(stateDir string, m *Moved) (pgstore.RecyclerState, error) {
	dir := statedir.At(stateDir)
	rs := pgstore.RecyclerState{Reviews: map[string][][]byte{}}
	runs, err := os.ReadDir(dir.Runs())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return rs, fmt.Errorf("import the reviews: %w", err)
	}
	for _, e := range runs {
		if !e.IsDir() || board.CheckID(e.Name()) != nil {
			continue // not a task's runs (a scratch directory, a stray file)
		}
		lines, err := jsonl.ReadLines(dir.Run(e.Name()).Reviews())
		if err != nil {
			return rs, fmt.Errorf("import the reviews of %s: %w", e.Name(), err)
		}
		if len(lines) > 0 {
			rs.Reviews[e.Name()] = lines
			m.Reviews += len(lines)
		}
	}
	notices, bad, err := jsonl.Read[json.RawMessage](dir.NotifyPending(), nil)
	if err != nil {
		return rs, fmt.Errorf("import the notifications: %w", err)
	}
	for _, n := range notices {
		rs.Notices = append(rs.Notices, n)
	}
	m.Notices, m.BadNotices = len(notices), bad
	return rs, nil
}

// writeRecycler writes rs into the state directory dir, as readRecycler
// reads it.
func writeRecycler(ctx context.Context, dir string, rs pgstore.RecyclerState) error {
	for id, lines := range rs.Reviews {
		if err := board.CheckID(id); err != nil {
			return fmt.Errorf("export the reviews of %.40q: %w", id, err)
		}
		path := statedir.At(dir).Run(id).Reviews()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("export the reviews: %w", err)
		}
		var b bytes.Buffer
		for _, l := range lines {
			b.Write(l)
			b.WriteByte('\n')
		}
		if err := atomicfile.Write(path, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("export the reviews of %s: %w", id, err)
		}
	}
	return review.FileNotices(dir).ReplaceNotices(ctx, rs.Notices)
}

// ErrExportTarget is an export into a directory that holds a world log
// or a board already: export does not merge.
var ErrExportTarget = errors.New("the export's directory holds a world log or tasks already: export into a new directory")

// Export writes the world log and the board of cfg's PostgreSQL into dir,
// laid out as a state directory: dir/world.log byte for byte as 'cra log
// export' writes it, and dir/tasks/<folder>/<id>.yaml each as its row
// holds it. dir must hold neither yet. The board is locked while it is
// read, so no board change falls between its tasks and its log.
func Export(ctx context.Context, dir string, cfg *config.Config, getenv func(string) string) (Moved, error) {
	if _, err := os.Stat(world.Path(dir)); err == nil {
		return Moved{}, fmt.Errorf("%s exists: %w", world.Path(dir), ErrExportTarget)
	}
	l, err := openPostgres(ctx, cfg, getenv)
	if err != nil {
		return Moved{}, err
	}
	defer l.Close()
	tasks := pgboard.New(l)
	unlock, err := tasks.Lock(ctx)
	if err != nil {
		return Moved{}, err
	}
	defer unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Moved{}, fmt.Errorf("export: %w", err)
	}
	var m Moved
	if m.Tasks, err = tasks.Export(ctx, board.NewFileStore(dir)); err != nil {
		return m, err
	}
	f, err := os.OpenFile(world.Path(dir), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return m, fmt.Errorf("export world log: %w", err)
	}
	cw := &countingWriter{w: f}
	err = l.Export(ctx, cw)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	m.Lines = cw.lines
	if err != nil {
		return m, err
	}
	rs, err := l.ExportRecycler(ctx)
	if err != nil {
		return m, err
	}
	for _, lines := range rs.Reviews {
		m.Reviews += len(lines)
	}
	m.Notices = len(rs.Notices)
	return m, writeRecycler(ctx, dir, rs)
}

// countingWriter counts the lines written through it.
type countingWriter struct {
	w     *os.File
	lines int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	for _, b := range p {
		if b == '\n' {
			c.lines++
		}
	}
	return c.w.Write(p)
}

// ErrNoFleetWorker refuses 'cra task run' on a board in PostgreSQL: on a
// fleet a run is held by a lease that a host's daemon claims and renews
// while the run lives, and a run in the foreground of one command would
// hold none; the hosts' Level 1 passes and the leader's sweep could not
// tell it from a run whose host died.
var ErrNoFleetWorker = errors.New("the board is in PostgreSQL ([fleet] database_url_env), where the hosts' daemons run the tasks under leases: " +
	"move the task to pending ('cra task move ID pending') and a host's 'cra serve' claims it; 'cra fleet status' shows which host runs it")

// runsHere refuses a run in the foreground on a board in PostgreSQL
// (ErrNoFleetWorker).
func (f *Fleet) runsHere() error {
	if f.closeDB != nil {
		return ErrNoFleetWorker
	}
	return nil
}
