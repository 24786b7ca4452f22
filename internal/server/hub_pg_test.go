package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/cra-dev/cra/internal/pgstore"
	"github.com/cra-dev/cra/internal/pgtest"
	"github.com/cra-dev/cra/internal/world"
)

// chanSender hands a stream's messages to the test.
type chanSender chan Message

func (c chanSender) send(ctx context.Context, data []byte) error {
	var m Message
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	select {
	case c <- m:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// openPGLogs returns two hosts' world logs on one new database.
func openPGLogs(t testing.TB) (a, b *pgstore.Log) {
	t.Helper()
	ctx := context.Background()
	url := pgtest.DB(t)
	if _, _, err := pgstore.Init(ctx, url); err != nil {
		t.Fatal(err)
	}
	open := func() *pgstore.Log {
		l, err := pgstore.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
		return l
	}
	return open(), open()
}

// TestHubFollowsPostgres: the hub of one host follows the world log in
// PostgreSQL: a client gets the lines from its offset on, then, live,
// those another host appends; one that reconnects with the end of its
// last message gets the rest once; an offset that is no line's start, or
// a position in another log, gets a reset.
func TestHubFollowsPostgres(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hostA, hostB := openPGLogs(t)
	for i := range 3 {
		if _, err := hostA.Event(ctx, world.SourceBash, "T-1", fmt.Sprintf("before %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	hub := &Hub{Log: hostB}
	if err := hub.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	hubDone := make(chan error, 1)
	go func() { hubDone <- hub.Run(ctx) }()

	stream := func(since Position) (chanSender, context.CancelFunc, chan error) {
		out := make(chanSender, 64)
		sctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- hub.Stream(sctx, out, since) }()
		return out, stop, done
	}
	next := func(c chanSender) Message {
		t.Helper()
		select {
		case m := <-c:
			return m
		case <-ctx.Done():
			t.Fatal("no message came")
			return Message{}
		}
	}
	c1, stop1, done1 := stream(Position{File: StoreFile, Offset: 0})
	var seen []Message
	for range 3 {
		seen = append(seen, next(c1))
	}
	for i := range 2 {
		if _, err := hostA.Event(ctx, world.SourceBash, "T-2", fmt.Sprintf("live %d", i)); err != nil {
			t.Fatal(err)
		}
		seen = append(seen, next(c1))
	}
	want := lines(t, hostA, 0)
	if len(want) != 5 {
		t.Fatalf("the log holds %d lines, want 5", len(want))
	}
	for i, m := range seen {
		if m.Type != MsgEntry || m.File != StoreFile || m.Offset != want[i].Offset || m.End != want[i].End || m.Entry.Output != want[i].Entry.Output {
			t.Errorf("message %d: %s %s@%d-%d %v; want entry db@%d-%d %q", i, m.Type, m.File, m.Offset, m.End, m.Entry, want[i].Offset, want[i].End, want[i].Entry.Output)
		}
	}
	stop1()
	<-done1

	// A client that reconnects after the second message gets the rest,
	// then the next line live.
	c2, stop2, done2 := stream(Position{File: StoreFile, Offset: seen[1].End})
	for i := 2; i < 5; i++ {
		if m := next(c2); m.Offset != want[i].Offset {
			t.Errorf("resumed message at %d, want %d", m.Offset, want[i].Offset)
		}
	}
	if _, err := hostA.Event(ctx, world.SourceBash, "T-3", "after the reconnection"); err != nil {
		t.Fatal(err)
	}
	if m := next(c2); m.Offset != want[4].End || m.Entry == nil || m.Entry.Output != "after the reconnection" {
		t.Errorf("live message after the reconnection: %+v", m)
	}
	stop2()
	<-done2

	for _, since := range []Position{{File: StoreFile, Offset: seen[1].End + 1}, {File: "123:456", Offset: 0}} {
		c, stop, done := stream(since)
		if m := next(c); m.Type != MsgReset {
			t.Errorf("since %+v: got %s, want a reset", since, m.Type)
		}
		if err := <-done; !errors.Is(err, errReset) {
			t.Errorf("since %+v: the stream ended with %v, want errReset", since, err)
		}
		stop()
	}
	cancel()
	if err := <-hubDone; err != nil {
		t.Errorf("hub: %v", err)
	}
}

// BenchmarkEventsPostgres: b.N events appended by one host to the world
// log in PostgreSQL reach each of 0, 1 or 50 WebSocket clients of
// another host's hub (through LISTEN/NOTIFY), each once.
//
//	go test ./internal/server -run '^$' -bench EventsPostgres -benchtime 2000x
func BenchmarkEventsPostgres(b *testing.B) {
	for _, n := range []int{0, 1, 50} {
		b.Run(fmt.Sprintf("clients=%d", n), func(b *testing.B) { benchEventsPostgres(b, n) })
	}
}

func benchEventsPostgres(b *testing.B, clients int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	writer, reader := openPGLogs(b)
	hub := &Hub{Log: reader}
	if err := hub.Begin(ctx); err != nil {
		b.Fatal(err)
	}
	go hub.Run(ctx)
	s := &Server{Hub: hub}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		since, _ := strconv.ParseInt(r.URL.Query().Get("since"), 10, 64)
		s.serveEvents(w, r, Position{File: StoreFile, Offset: since})
	}))
	defer srv.Close()
	ws := "ws" + strings.TrimPrefix(srv.URL, "http") + "/?since="
	var reconnects atomic.Int64
	var wg sync.WaitGroup
	ready := make(chan struct{}, clients)
	for range clients {
		wg.Go(func() {
			since, got, announced := int64(0), 0, false
			for got < b.N {
				c, _, err := websocket.Dial(ctx, fmt.Sprintf("%s%d", ws, since), nil)
				if err != nil {
					b.Error(err)
					return
				}
				if !announced {
					ready <- struct{}{}
					announced = true
				}
				for got < b.N {
					_, data, err := c.Read(ctx)
					if err != nil {
						reconnects.Add(1)
						break
					}
					var m Message
					if err := json.Unmarshal(data, &m); err != nil || m.Offset != since {
						b.Errorf("message at %d after %d: %v", m.Offset, since, err)
						c.CloseNow()
						return
					}
					since = m.End
					got++
				}
				c.CloseNow()
			}
		})
	}
	for range clients {
		<-ready
	}
	b.ResetTimer()
	t0 := time.Now()
	for i := range b.N {
		if _, err := writer.Event(ctx, world.SourceBoard, "bench", fmt.Sprintf("event %d", i)); err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait()
	elapsed := time.Since(t0)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(b.N*clients)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(float64(reconnects.Load()), "reconnects")
}
