package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/cra-dev/cra/internal/world"
)

// Message is one message of the event stream (GET /api/events), as JSON.
//
//	{"type":"entry","file":F,"offset":O,"end":E,"entry":{…}}  a line of the world log
//	{"type":"malformed","file":F,"offset":O,"end":E,"error":"…"}  a line that does not parse
//	{"type":"reset"}  the client's position means nothing any more (the log
//	                  was compacted or replaced): reload the snapshot and reconnect
//
// Offset is where the line starts in world.log and End where the next one
// starts; File names the file they are offsets in (its device and inode,
// fileID), which a compaction changes, since it renames a new file over
// world.log. A client's position is the pair: GET /api/tasks gives the
// first ("file" and "offset"), each message the next (File and End), and
// a client that reconnects with ?since=END&file=FILE gets every line
// after the last one it saw, once. A position in another file than the
// current one gets a reset, even when its offset falls on a line
// boundary of the new file. Without file the offset alone is checked,
// which a compaction can fool; the board always sends it.
type Message struct {
	Type   string       `json:"type"`
	File   string       `json:"file,omitempty"`
	Offset int64        `json:"offset"`
	End    int64        `json:"end"`
	Entry  *world.Entry `json:"entry,omitempty"`
	Error  string       `json:"error,omitempty"`
	// Skipped says why the log's fold skips the entry (the lifecycle
	// forbids it where it stands): it moved no task.
	Skipped string `json:"skipped,omitempty"`
}

// Position is where a client of the stream is: an offset in the file
// File names (Message).
type Position struct {
	File   string
	Offset int64
}

// The message types.
const (
	MsgEntry     = "entry"
	MsgMalformed = "malformed"
	MsgReset     = "reset"
)

// DefaultQueueLen bounds a client's queue of messages not yet written.
const DefaultQueueLen = 8192

// writeTimeout bounds one write to a client: a connection that takes
// longer is dead or hopeless, and its client reconnects.
const writeTimeout = 10 * time.Second

// Hub fans the world log out to WebSocket clients. One follower reads the
// log (world.Log.Follow) whatever the number of clients, and encodes each
// line once; each client has its own goroutine and a bounded queue. The
// hub never waits for a client: one whose queue is full is dropped (its
// connection closed), and it reconnects with the offset it reached.
//
// A client asks for every line from an offset on. Its goroutine first
// reads the lines already in the file from there (as the follower may be
// behind or ahead), then takes the hub's messages, skipping those it has
// sent and reading any gap from the file: so it misses nothing and sends
// nothing twice, whatever the timing of its connection (once Begin has
// fixed where the hub starts). Each line is tagged with the identity of
// the file at the log's path when the follower read it; once that
// changes (a compaction), every client gets a reset, those already on
// the new file too (one reload more, never a line from the wrong place).
//
// The world log in PostgreSQL (a Positioner) is followed the same way,
// through LISTEN/NOTIFY, on every host of the fleet: its lines have the
// file's offsets, a client resumes by the offset it reached (the store
// finds the line there), and it is one log for ever (no compaction), its
// File always StoreFile.
type Hub struct {
	// Log is the world log followed; required: the file (*world.Log) or
	// a store that is a Positioner (pgstore.Log).
	Log world.Store
	// QueueLen bounds each client's queue; 0 is DefaultQueueLen.
	QueueLen int
	// Logger gets the follower's errors; nil discards.
	Logger *slog.Logger

	mu      sync.Mutex
	clients map[*client]struct{}
	end     int64  // where the line after the last one broadcast starts
	line    int64  // the number of the last line broadcast (a store's id)
	file    string // the fileID of the log the follower reads
	begun   bool   // Begin fixed end
	closed  bool   // Run has ended: no client is served
}

type client struct {
	q       chan *frame
	dropped chan struct{}
	once    sync.Once
}

func (c *client) drop() { c.once.Do(func() { close(c.dropped) }) }

// frame is one message, encoded once for every client.
type frame struct {
	file        string
	offset, end int64
	reset       bool
	data        []byte
}

// Run follows the log from its current end until ctx ends, broadcasting
// each line. A log replaced by another file (not a compaction, which is
// followed across) sends every client a reset and following starts again
// at the new end.
func (h *Hub) Run(ctx context.Context) error {
	defer func() {
		h.mu.Lock()
		h.closed = true
		h.mu.Unlock()
		h.DropAll()
	}()
	h.mu.Lock()
	begun := h.begun
	h.mu.Unlock()
	for {
		if !begun {
			if err := h.Begin(ctx); err != nil {
				return err
			}
		}
		begun = false
		h.mu.Lock()
		from := world.Position{Offset: h.end, Line: h.line}
		h.mu.Unlock()
		err := h.Log.Follow(ctx, from, world.Filter{}, h.record)
		if ctx.Err() != nil {
			return nil
		}
		if !errors.Is(err, world.ErrReplaced) {
			return fmt.Errorf("event hub: %w", err)
		}
		if h.Logger != nil {
			h.Logger.Warn("event hub: the world log was replaced; clients reload", "err", err)
		}
		h.broadcast(&frame{reset: true, data: resetData()})
	}
}

// Begin fixes where the hub starts following: the log's end now. A
// server calls it before it takes its first client, so that every line
// after a client's reading of the file is broadcast; Run calls it when
// no one did.
func (h *Hub) Begin(ctx context.Context) error {
	src, err := h.source()
	if err != nil {
		return err
	}
	end, file, err := src.end(ctx)
	if err != nil {
		return fmt.Errorf("event hub: %w", err)
	}
	h.mu.Lock()
	h.end, h.line, h.file, h.begun = end.Offset, end.Line, file, true
	h.mu.Unlock()
	return nil
}

// currentID returns the identity of the log now: for the file, the
// fileID of the file at its path ("" when it cannot be read, mid-rename,
// which matches no position).
func (h *Hub) currentID() string {
	src, err := h.source()
	if err != nil {
		return ""
	}
	return src.id()
}

// Positioner is a world log other than the file that the hub follows
// (pgstore.Log): it finds where a client's offset falls, and is never
// compacted.
type Positioner interface {
	// End returns the position after the last line.
	End(ctx context.Context) (world.Position, error)
	// PositionAt returns the position of the line that starts at byte
	// offset off; false when none starts there and off is not the end.
	PositionAt(ctx context.Context, off int64) (world.Position, bool, error)
}

// StoreFile is the File of every message of a log in a store: it is one
// log for ever.
const StoreFile = "db"

// logSource is what the hub reads of its log beyond world.Store.
type logSource interface {
	id() string
	end(ctx context.Context) (world.Position, string, error)
	// at returns the position of the line starting at off, and false
	// when none does (and off is not the end).
	at(ctx context.Context, off int64) (world.Position, bool, error)
	// lineEnd returns the offset after the newline at or after from.
	lineEnd(from int64) (int64, error)
}

func (h *Hub) source() (logSource, error) { return sourceOf(h.Log) }

// sourceOf returns how the hub and the API read positions in log.
func sourceOf(log world.Store) (logSource, error) {
	switch l := log.(type) {
	case *world.Log:
		return fileSource{l}, nil
	case Positioner:
		return storeSource{l}, nil
	default:
		return nil, fmt.Errorf("a world log of type %T finds no line by offset: give the file log or pgstore's", log)
	}
}

type fileSource struct{ l *world.Log }

func (s fileSource) id() string {
	fi, err := os.Stat(s.l.Path())
	if err != nil {
		return ""
	}
	return fileID(fi)
}

func (s fileSource) end(ctx context.Context) (world.Position, string, error) {
	end, file, err := logEnd(s.l.Path())
	return world.Position{Offset: end}, file, err
}

func (s fileSource) at(ctx context.Context, off int64) (world.Position, bool, error) {
	ok, err := lineStart(s.l.Path(), off)
	return world.Position{Offset: off}, ok, err
}

func (s fileSource) lineEnd(from int64) (int64, error) { return lineEnd(s.l.Path(), from) }

type storeSource struct{ p Positioner }

func (s storeSource) id() string { return StoreFile }

func (s storeSource) end(ctx context.Context) (world.Position, string, error) {
	end, err := s.p.End(ctx)
	return end, StoreFile, err
}

func (s storeSource) at(ctx context.Context, off int64) (world.Position, bool, error) {
	return s.p.PositionAt(ctx, off)
}

// lineEnd: a store keeps a line too long for the file's reader whole, so
// its newline is right after the record's bytes.
func (s storeSource) lineEnd(from int64) (int64, error) { return from + 1, nil }

// resetData is the reset message, marshalled on first use rather than at
// every cra command's start (the first json.Marshal of a type builds its
// encoder).
var resetData = sync.OnceValue(func() []byte {
	data, _ := json.Marshal(Message{Type: MsgReset})
	return data
})

// record broadcasts one line the follower read, as a line of the file
// at the log's path: once that file is another one (a compaction), or
// the offsets go back, every client gets a reset, since its position is
// in a file that is gone.
func (h *Hub) record(r *world.Record) error {
	id := h.currentID()
	f, err := h.encode(r, id)
	if err != nil {
		return err
	}
	h.mu.Lock()
	compacted := f.offset < h.end || id != h.file
	h.end, h.line, h.file = f.end, r.Line, id
	h.mu.Unlock()
	if compacted {
		// Compaction rewrote the file: positions before it mean nothing.
		h.broadcast(&frame{reset: true, data: resetData()})
		return nil
	}
	h.broadcast(f)
	return nil
}

// encode makes r's frame, a line of the file named file.
func (h *Hub) encode(r *world.Record, file string) (*frame, error) {
	m := message(r)
	m.File = file
	if r.Err != nil && len(r.Raw) >= world.MaxLineBytes {
		// A line too long comes cut short: find its true end.
		src, err := h.source()
		if err != nil {
			return nil, err
		}
		end, err := src.lineEnd(r.Offset + int64(len(r.Raw)))
		if err != nil {
			return nil, err
		}
		m.End = end
	}
	data, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode event: %w", err)
	}
	return &frame{file: file, offset: r.Offset, end: m.End, data: data}, nil
}

// message is the Message of a record, its entry copied out of it.
func message(r *world.Record) Message {
	m := Message{Type: MsgEntry, Offset: r.Offset, End: r.Offset + int64(len(r.Raw)) + 1}
	if r.Err != nil {
		m.Type, m.Error = MsgMalformed, r.Err.Error()
	} else {
		e := r.Entry
		m.Entry = &e
	}
	if r.Skipped != nil {
		m.Skipped = r.Skipped.Error()
	}
	return m
}

// lineEnd returns the offset after the newline at or after from.
func lineEnd(path string, from int64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for off := from; ; {
		n, err := f.ReadAt(buf, off)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return off + int64(i) + 1, nil
		}
		off += int64(n)
		if err != nil {
			return 0, fmt.Errorf("read world log: %w", err)
		}
	}
}

// broadcast queues f for every client, dropping those whose queue is full.
func (h *Hub) broadcast(f *frame) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.clients {
		select {
		case c.q <- f:
		default:
			c.drop()
			delete(h.clients, c)
		}
	}
}

func (h *Hub) add() *client {
	n := h.QueueLen
	if n <= 0 {
		n = DefaultQueueLen
	}
	c := &client{q: make(chan *frame, n), dropped: make(chan struct{})}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		c.drop()
		return c
	}
	if h.clients == nil {
		h.clients = map[*client]struct{}{}
	}
	h.clients[c] = struct{}{}
	return c
}

func (h *Hub) remove(c *client) {
	h.mu.Lock()
	delete(h.clients, c)
	h.mu.Unlock()
}

// Clients returns how many clients are connected.
func (h *Hub) Clients() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.clients)
}

// DropAll closes every client's connection, as a restart of the daemon
// would; each reconnects with its offset.
func (h *Hub) DropAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.clients {
		c.drop()
		delete(h.clients, c)
	}
}

// errDropped closes a client whose queue overflowed.
var errDropped = errors.New("dropped: too far behind; reconnect with ?since=<the end of the last message>")

// sender writes messages to one client.
type sender interface {
	send(ctx context.Context, data []byte) error
}

type wsSender struct{ c *websocket.Conn }

func (s wsSender) send(ctx context.Context, data []byte) error {
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	return s.c.Write(ctx, websocket.MessageText, data)
}

// Stream sends one client every line from position since on, live,
// until ctx ends or the client is dropped (errDropped). A since in
// another file than the current one, or that is not the start of a line
// of it, gets a reset message.
func (h *Hub) Stream(ctx context.Context, out sender, since Position) error {
	c := h.add()
	defer h.remove(c)
	// A drop interrupts a write in progress too.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.dropped:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := h.stream(ctx, c, out, since)
	select {
	case <-c.dropped:
		return errDropped
	default:
		return err
	}
}

func (h *Hub) stream(ctx context.Context, c *client, out sender, since Position) error {
	file := since.File
	if file == "" {
		file = h.currentID() // an offset alone: checked by its line start only
	}
	next, err := h.replay(ctx, out, file, since.Offset, -1)
	if err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.dropped:
			return errDropped
		case f := <-c.q:
			if f.reset || f.file != file {
				return h.sendReset(ctx, out)
			}
			if f.end <= next {
				continue // read from the file already
			}
			if f.offset > next {
				// Lines the queue did not bring (the client connected
				// while they were broadcast): read them from the file.
				if next, err = h.replay(ctx, out, file, next, f.offset); err != nil {
					return err
				}
			}
			if f.offset != next {
				return h.sendReset(ctx, out) // the file changed under us
			}
			if err := out.send(ctx, f.data); err != nil {
				return err
			}
			next = f.end
		}
	}
}

// errReset ends a stream after a reset message.
var errReset = errors.New("reset: the client's offset is not in the current log")

func (h *Hub) sendReset(ctx context.Context, out sender) error {
	if err := out.send(ctx, resetData()); err != nil {
		return err
	}
	return errReset
}

// errStop ends a replay at its bound.
var errStop = errors.New("stop")

// replay sends the lines of the file named file from offset from, up to
// the line starting at until (to the end of the complete lines when
// until < 0), and returns where the next line starts. When the log is
// another file, before or after, it sends a reset instead of going on.
func (h *Hub) replay(ctx context.Context, out sender, file string, from, until int64) (int64, error) {
	src, err := h.source()
	if err != nil {
		return 0, err
	}
	if src.id() != file {
		return 0, h.sendReset(ctx, out)
	}
	start, ok, err := src.at(ctx, from)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, h.sendReset(ctx, out)
	}
	next := from
	pos, err := h.Log.Scan(ctx, start, func(r *world.Record) error {
		if until >= 0 && r.Offset >= until {
			return errStop
		}
		f, err := h.encode(r, file)
		if err != nil {
			return err
		}
		if err := out.send(ctx, f.data); err != nil {
			return err
		}
		next = f.end
		return nil
	})
	switch {
	case errors.Is(err, errStop):
	case err != nil:
		return 0, err
	}
	if h.currentID() != file {
		// Replaced while it was read: what was sent may be of the new
		// file, under the old name.
		return 0, h.sendReset(ctx, out)
	}
	if errors.Is(err, errStop) {
		return until, nil // empty lines before until are covered too
	}
	return max(next, pos.Offset), nil
}

// lineStart reports whether off is where a line of the log starts (or
// its end): 0, or just after a newline.
func lineStart(path string, off int64) (bool, error) {
	if off < 0 {
		return false, nil
	}
	if off == 0 {
		return true, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("open world log: %w", err)
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], off-1); err != nil {
		if errors.Is(err, io.EOF) {
			return false, nil // past the end: another, shorter file
		}
		return false, fmt.Errorf("read world log: %w", err)
	}
	return b[0] == '\n', nil
}
