package world

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Store is the world log behind its backends: the file (Log, the default)
// and PostgreSQL (internal/pgstore, for a fleet of hosts, DESIGN.md
// "Scale"). Both keep the same lines, with the same line numbers and byte
// offsets, the same lifecycle and the same fold: a reader cannot tell
// them apart but by speed, and Export writes the same bytes.
type Store interface {
	// Append writes e as one line after the lifecycle's check (Log.Append).
	Append(ctx context.Context, e Entry) (Entry, error)
	Event(ctx context.Context, source Source, id, output string) (Entry, error)
	Agent(ctx context.Context, status Status, id, output, need string) (Entry, error)
	Verify(ctx context.Context, id, review, output string) (Entry, error)
	Begin(ctx context.Context, id, output, need string) error

	// The agents' states, from the fold.
	Lookup(ctx context.Context, id string) (Agent, bool, error)
	Current(ctx context.Context) ([]Agent, error)
	CurrentIn(ctx context.Context, statuses ...Status) ([]Agent, error)
	Limbo(ctx context.Context, silent time.Duration) ([]Agent, error)
	CountAgents(ctx context.Context, silent time.Duration, match func(Entry) bool) (int, error)
	Statuses(ctx context.Context) (map[string]Status, error)
	AnsweredFailed(ctx context.Context) ([]Agent, error)
	Skipped(ctx context.Context) ([]Skip, int, error)

	// The lines, as records.
	Select(ctx context.Context, f Filter, fn func(*Record) error) error
	Scan(ctx context.Context, from Position, fn func(*Record) error) (Position, error)
	Tail(ctx context.Context, n int, f Filter, fn func(*Record) error) (Position, error)
	Follow(ctx context.Context, from Position, f Filter, fn func(*Record) error) error

	// Read markers.
	CheckThen(ctx context.Context, name string, fn func(*Record) error, done func() error) (Position, error)
	ResetMarker(ctx context.Context, name string) error

	// Export writes the log as the plain-text world.log: every complete
	// line as written, each with its newline.
	Export(ctx context.Context, w io.Writer) error
}

var _ Store = (*Log)(nil)

// Export writes the log's complete lines to w as they are in the file: a
// line still being written (or torn) at the end is left out.
func (l *Log) Export(ctx context.Context, w io.Writer) error {
	f, fi, err := l.open()
	if err != nil {
		return err
	}
	defer f.Close()
	end, err := completeEnd(f, fi.Size())
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	if _, err := io.Copy(bw, &ctxReader{ctx: ctx, r: io.NewSectionReader(f, 0, end)}); err != nil {
		return fmt.Errorf("export world log: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export world log: %w", err)
	}
	return nil
}

// ctxReader ends a long copy when ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// NewRecord parses raw, one line without its newline, into the record a
// reader of the log gets for it: line is its 1-based number, off the byte
// offset where it starts. A line over MaxLineBytes is malformed.
func NewRecord(raw []byte, line, off int64) Record {
	return parseRecord(raw, Position{Offset: off, Line: line - 1}, len(raw) > MaxLineBytes)
}

// Prefilter returns the test the readers run on a line as written before
// they parse it: it rejects only lines f cannot select (Select). A backend
// that selects lines by other means runs it too, so that both backends
// return the same lines, malformed ones among them.
func Prefilter(f Filter) func(raw []byte) bool { return newMatcher(f).pre }

// Selects reports whether f selects the parsed record r: malformed lines
// are selected once Prefilter let them through.
func Selects(f *Filter, r *Record) bool { return r.Err != nil || f.Match(r.Entry) }

// ErrNotFile is a Store that is not the file log, given to a reader that
// needs the file itself (its path, its markers' files): 'cra serve', the
// runs and the recycler do not run on PostgreSQL yet.
var ErrNotFile = errors.New("the world log is in PostgreSQL ([fleet] database_url_env), and this needs the file log: " +
	"'cra serve', the runs and the recycler do not run on PostgreSQL yet; to run them, remove database_url_env from [fleet] " +
	"in .clean_room/config.toml after 'cra fleet export --dir .clean_room'")

// AsFile returns s as the file log, or ErrNotFile.
func AsFile(s Store) (*Log, error) {
	if l, ok := s.(*Log); ok && l != nil {
		return l, nil
	}
	return nil, ErrNotFile
}
