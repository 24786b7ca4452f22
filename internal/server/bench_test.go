package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/world"
)

// BenchmarkEvents: b.N world-log events appended by another writer
// reach each of 0, 1 or 50 WebSocket clients of the real daemon, each
// once; events/s counts the lines, deliveries/s the messages read, and
// reconnects the clients dropped for falling behind.
//
//	go test ./internal/server -run '^$' -bench Events -benchtime 5000x
func BenchmarkEvents(b *testing.B) {
	for _, n := range []int{0, 1, 50} {
		b.Run(fmt.Sprintf("clients=%d", n), func(b *testing.B) { benchEvents(b, n) })
	}
}

func benchEvents(b *testing.B, clients int) {
	f := newFixture(b)
	f.b.Log.(*world.Log).Sync = world.SyncNever
	url, _ := startDaemon(b, f)
	ws := "ws" + strings.TrimPrefix(url, "http") + "/api/events?since="
	start, _, err := logEnd(world.Path(f.state))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var reconnects atomic.Int64
	var wg sync.WaitGroup
	ready := make(chan struct{}, clients)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			since, got, announced := start, 0, false
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
						break // dropped: go on from since
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
		}()
	}
	for range clients {
		<-ready
	}
	writer := openBoard(b, f.state)
	writer.Log.(*world.Log).Sync = world.SyncNever
	b.ResetTimer()
	t0 := time.Now()
	for i := range b.N {
		if _, err := writer.Log.Event(ctx, world.SourceBoard, "bench", fmt.Sprintf("event %d", i)); err != nil {
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

// fill puts n tasks on f's board, spread over the six columns as a busy
// board has them.
func fill(b testing.TB, f *fixture, n int) {
	b.Helper()
	f.b.Log.(*world.Log).Sync = world.SyncNever
	for i := range n {
		t := f.add(b, fmt.Sprintf("task %d: make the thing number %d work", i, i), func(t *board.Task) {
			t.Type = []string{"bug", "feature", "docs"}[i%3]
			t.Priority = board.Priorities()[i%4]
		})
		switch i % 6 {
		case 1:
			f.start(b, t.ID)
		case 2:
			f.run(b, t.ID, 0, "ok")
		case 3:
			f.run(b, t.ID, 1, "FAIL")
		case 4:
			f.run(b, t.ID, 0, "ok")
			f.decide(b, t.ID, world.StatusVerified, "full_complete", "verified", "")
		case 5:
			f.run(b, t.ID, 1, "FAIL")
			f.decide(b, t.ID, world.StatusFailed, "", "blocked", "a person decides")
		}
	}
}

// BenchmarkFirstPaint1000: from opening the board of 1,000 tasks in a
// fresh tab to its cards being in the DOM, in headless Chromium.
//
//	go test ./internal/server -run '^$' -bench FirstPaint -benchtime 10x
func BenchmarkFirstPaint1000(b *testing.B) {
	browser := newBrowser(b)
	f := newFixture(b)
	url, _ := startDaemon(b, f) // first: its start would restart the runs shown going
	fill(b, f, 1000)
	var painted float64
	b.ResetTimer()
	for range b.N {
		ctx, cancel := chromedp.NewContext(browser)
		err := chromedp.Do(ctx, chromedp.Navigate(url),
			chromedp.Poll[chromedp.Void](`window.cra && window.cra.ready && document.querySelectorAll(".card").length >= 300`,
				chromedp.WithPollingInterval(5*time.Millisecond)))
		if err != nil {
			cancel()
			b.Fatal(err)
		}
		b.StopTimer()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`Number(document.querySelector("#counts").textContent.split(" ")[0])`))
		if err != nil || n != 1000 {
			b.Fatalf("the page counts %d tasks (%v), want 1000", n, err)
		}
		ms, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`window.cra.paintedAt`))
		if err != nil {
			b.Fatal(err)
		}
		painted += ms
		cancel()
		b.StartTimer()
	}
	b.ReportMetric(painted/float64(b.N), "ms-in-page")
}
