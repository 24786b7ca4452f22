package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/cra-dev/cra/internal/world"
)

func dial(t *testing.T, ctx context.Context, url string, since int64) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.Dial(ctx, fmt.Sprintf("ws%s/api/events?since=%d", strings.TrimPrefix(url, "http"), since), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(1 << 20)
	return c
}

func readMsg(t *testing.T, ctx context.Context, c *websocket.Conn) (Message, error) {
	t.Helper()
	_, data, err := c.Read(ctx)
	if err != nil {
		return Message{}, err
	}
	var m Message
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("not a message: %q", data)
	}
	return m, nil
}

// lines reads the log's lines as the stream must bring them.
func lines(t *testing.T, l world.Store, from int64) []Message {
	t.Helper()
	var out []Message
	_, err := l.Scan(context.Background(), world.Position{Offset: from}, func(r *world.Record) error {
		e := r.Entry
		out = append(out, Message{Type: MsgEntry, Offset: r.Offset, End: r.Offset + int64(len(r.Raw)) + 1, Entry: &e})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEvents: a client gets every line from its offset once, in order,
// while lines are appended as it connects; after the server drops it, it
// reconnects with the end of the last message and misses nothing and
// sees nothing twice.
func TestEvents(t *testing.T) {
	f := newFixture(t)
	f.add(t, "before", nil)
	ts, hub := f.serve(t, &Server{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, body := call(t, ts, "GET", "/api/tasks", nil)
	since := int64(body["offset"].(float64))

	// A writer in another "process" (a second board over the same files)
	// appends throughout.
	other := openBoard(t, f.state)
	const n = 60
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range n {
			other.Log.Event(ctx, world.SourceUser, "writer", fmt.Sprintf("event %d", i))
		}
	}()
	c := dial(t, ctx, ts.URL, since)
	var got []Message
	for len(got) < n/2 {
		m, err := readMsg(t, ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m)
	}
	hub.DropAll() // the server closes the connection
	for {
		if _, err := readMsg(t, ctx, c); err != nil {
			// Status 1013, or the connection cut when the drop
			// interrupted a write.
			if s := websocket.CloseStatus(err); s != -1 && s != websocket.StatusTryAgainLater {
				t.Errorf("the drop: %v, want status %d", err, websocket.StatusTryAgainLater)
			}
			break
		}
		// Messages already on the way may still come: they count.
	}
	wg.Wait()
	f.add(t, "after", nil)
	want := lines(t, f.b.Log, since)
	// A fresh read of what came before the drop: the client keeps what
	// it saw, and reconnects from the end of the last one.
	c.CloseNow()
	c = dial(t, ctx, ts.URL, got[len(got)-1].End)
	defer c.CloseNow()
	for len(got) < len(want) {
		m, err := readMsg(t, ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m)
	}
	for i := range want {
		if got[i].Offset != want[i].Offset || got[i].End != want[i].End || got[i].Entry.Output != want[i].Entry.Output {
			t.Fatalf("message %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	// Nothing more, until the next line: then exactly it.
	f.b.Log.Event(ctx, world.SourceSystem, "level1", "pass")
	m, err := readMsg(t, ctx, c)
	if err != nil || m.Offset != want[len(want)-1].End || m.Entry.Source != world.SourceSystem {
		t.Errorf("the next line: %+v %v", m, err)
	}
}

// TestEventsReset: an offset that is not the start of a line (a log
// compacted since) gets a reset, and the connection closes.
func TestEventsReset(t *testing.T) {
	f := newFixture(t)
	f.add(t, "one", nil)
	ts, _ := f.serve(t, &Server{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, since := range []int64{3, 1 << 40} {
		c := dial(t, ctx, ts.URL, since)
		m, err := readMsg(t, ctx, c)
		if err != nil || m.Type != MsgReset {
			t.Errorf("since=%d: %+v %v, want a reset", since, m, err)
		}
		if _, err := readMsg(t, ctx, c); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
			t.Errorf("since=%d: then %v, want the connection closed", since, err)
		}
		c.CloseNow()
	}
	for _, q := range []string{"", "?since=x", "?since=-1"} {
		if code, _ := call(t, ts, "GET", "/api/events"+q, nil); code != 400 {
			t.Errorf("/api/events%s: %d, want 400", q, code)
		}
	}
	// Another origin cannot open the stream.
	_, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ts.URL, "http")+"/api/events?since=0",
		&websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"http://evil.example"}}})
	if err == nil || resp == nil || resp.StatusCode != 403 {
		t.Errorf("a stream for another origin: %v %v, want 403", resp, err)
	}
}

// blockSender is a client that stops reading.
type blockSender struct {
	sent    chan []byte
	release chan struct{}
}

func (b *blockSender) send(ctx context.Context, data []byte) error {
	b.sent <- data
	select {
	case <-b.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// TestSlowClient: a client that does not read is dropped when its queue
// is full, and neither the hub nor the other clients wait for it.
func TestSlowClient(t *testing.T) {
	f := newFixture(t)
	hub := &Hub{Log: f.b.Log.(*world.Log), QueueLen: 4}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := hub.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	hubDone := make(chan error, 1)
	go func() { hubDone <- hub.Run(ctx) }()
	end, _, _ := logEnd(f.b.Log.(*world.Log).Path())
	slow := &blockSender{sent: make(chan []byte, 100), release: make(chan struct{})}
	streamed := make(chan error, 1)
	go func() { streamed <- hub.Stream(ctx, slow, Position{Offset: end}) }()
	for hub.Clients() == 0 {
		time.Sleep(time.Millisecond)
	}
	for i := range 50 {
		f.b.Log.Event(ctx, world.SourceUser, "x", fmt.Sprintf("event %d", i))
	}
	if err := <-streamed; !errors.Is(err, errDropped) {
		t.Errorf("the slow client: %v, want dropped", err)
	}
	if hub.Clients() != 0 {
		t.Errorf("clients: %d, want 0", hub.Clients())
	}
	cancel()
	if err := <-hubDone; err != nil {
		t.Errorf("hub: %v", err)
	}
}

// TestEventsCompaction: a compaction rewrites the log, so the offsets a
// client holds mean nothing: it gets a reset, and from a fresh snapshot
// it streams again.
func TestEventsCompaction(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	old := f.add(t, "old and done", nil)
	f.run(t, old.ID, 0, "done")
	f.decide(t, old.ID, world.StatusVerified, "full_complete", "verified", "")
	for i := range 20 {
		f.b.Log.Event(ctx, world.SourceBash, "noise", fmt.Sprintf("event %d", i))
	}
	ts, _ := f.serve(t, &Server{})
	_, body := call(t, ts, "GET", "/api/tasks", nil)
	c := dial(t, ctx, ts.URL, int64(body["offset"].(float64)))
	defer c.CloseNow()
	if _, err := f.b.Log.(*world.Log).Compact(ctx, world.CompactOptions{EventsBefore: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	f.b.Log.Event(ctx, world.SourceSystem, "level1", "after the compaction")
	m, err := readMsg(t, ctx, c)
	if err != nil || m.Type != MsgReset {
		t.Fatalf("after a compaction: %+v %v, want a reset", m, err)
	}
	_, body = call(t, ts, "GET", "/api/tasks", nil)
	end := int64(body["offset"].(float64))
	c2 := dial(t, ctx, ts.URL, end)
	defer c2.CloseNow()
	f.b.Log.Event(ctx, world.SourceSystem, "level1", "next")
	if m, err := readMsg(t, ctx, c2); err != nil || m.Offset != end || m.Entry.Output != "next" {
		t.Errorf("from the new snapshot: %+v %v", m, err)
	}
}

// TestEventsCompactionAligned: a position from before a compaction whose
// offset falls on a line boundary of the compacted file is still refused
// (reset): its file is gone, and the lines from that offset of the new
// file are not the ones after what the client saw.
func TestEventsCompactionAligned(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// history writes a verified task's lines, whose compaction drops
	// its active and finish entries, and returns the log's size.
	history := func(f *fixture) int64 {
		old := f.add(t, "old and done", nil)
		f.run(t, old.ID, 0, "done")
		f.decide(t, old.ID, world.StatusVerified, "full_complete", "verified", "")
		end, _, err := logEnd(world.Path(f.state))
		if err != nil {
			t.Fatal(err)
		}
		return end
	}
	// A dry run measures how many bytes the compaction drops.
	dry := newFixture(t)
	before := history(dry)
	if _, err := dry.b.Log.(*world.Log).Compact(ctx, world.CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	after, _, _ := logEnd(world.Path(dry.state))
	drop := before - after
	if drop <= 0 {
		t.Fatalf("the compaction dropped %d bytes", drop)
	}

	f := newFixture(t)
	history(f)
	// Events each exactly drop bytes long: every old line start after
	// the dropped lines is a line start of the compacted file too.
	f.b.Log.Event(ctx, world.SourceUser, "noise", "x")
	size, _, _ := logEnd(world.Path(f.state))
	var prefix int64
	f.b.Log.Scan(ctx, world.Position{}, func(r *world.Record) error {
		prefix = int64(len(r.Raw)) - 1 // the probe is the last line
		return nil
	})
	if drop <= prefix+1 {
		t.Skipf("dropped lines (%d bytes) shorter than an event", drop)
	}
	text := strings.Repeat("y", int(drop-prefix-1))
	for range 4 {
		f.b.Log.Event(ctx, world.SourceUser, "noise", text)
	}
	ts, hub := f.serve(t, &Server{})
	_, body := call(t, ts, "GET", "/api/tasks", nil)
	file, _ := body["file"].(string)
	if file == "" {
		t.Fatalf("the snapshot names no file: %v", body)
	}
	// The client saw up to the end of the second event.
	seen := size + 2*drop
	if _, err := f.b.Log.(*world.Log).Compact(ctx, world.CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	if ok, _ := lineStart(world.Path(f.state), seen); !ok {
		t.Fatalf("offset %d is not a line start of the compacted log: the test does not test", seen)
	}
	c, _, err := websocket.Dial(ctx, fmt.Sprintf("ws%s/api/events?since=%d&file=%s", strings.TrimPrefix(ts.URL, "http"), seen, file), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if m, err := readMsg(t, ctx, c); err != nil || m.Type != MsgReset {
		t.Errorf("a position in the log before its compaction: %+v %v, want a reset", m, err)
	}
	// Once the hub has followed the log across (its first line after the
	// compaction resets every client once), a fresh snapshot streams on.
	f.b.Log.Event(ctx, world.SourceSystem, "level1", "after the compaction")
	for {
		hub.mu.Lock()
		followed := hub.file != file
		hub.mu.Unlock()
		if followed {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, body = call(t, ts, "GET", "/api/tasks", nil)
	if body["file"] == file {
		t.Errorf("the compacted log has the same file %v", file)
	}
	end := int64(body["offset"].(float64))
	c2, _, err := websocket.Dial(ctx, fmt.Sprintf("ws%s/api/events?since=%d&file=%s", strings.TrimPrefix(ts.URL, "http"), end, body["file"]), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.CloseNow()
	f.b.Log.Event(ctx, world.SourceSystem, "level1", "next")
	if m, err := readMsg(t, ctx, c2); err != nil || m.Offset != end || m.Entry == nil || m.Entry.Output != "next" || m.File != body["file"] {
		t.Errorf("from the new snapshot: %+v %v", m, err)
	}
}
