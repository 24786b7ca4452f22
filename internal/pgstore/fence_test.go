package pgstore

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/pgtest"
)

// TestKeeperFencesItself: a Keeper that cannot renew hands each held
// run to Lost once its lease, counted from when it asked for the last
// renewal that went through, passed by its own clock; a run it never
// renewed counts from its claim's time in the database, put on the
// host's clock (an hour ahead here) by the skew its heartbeat measured;
// a run goes to Lost once.
func TestKeeperFencesItself(t *testing.T) {
	ctx := context.Background()
	f, url := openFleet(t)
	kf, err := OpenFleet(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer kf.Close()
	held, err := f.Claim(ctx, "a", []string{"T-1"}, 1, time.Minute)
	if err != nil || len(held) != 1 {
		t.Fatalf("claimed %v (%v)", held, err)
	}
	base := time.Now().Add(time.Hour) // the host's clock
	now := base
	var mu sync.Mutex
	var lost []Lost
	k := &Keeper{Fleet: kf, Host: Host{Name: "a", Started: base, Slots: 2, Version: "test"}, Lease: time.Minute,
		Held: func() []Lease { return held }, Now: func() time.Time { return now },
		Lost: func(l Lost) { mu.Lock(); lost = append(lost, l); mu.Unlock() }}
	if err := k.Pass(ctx); err != nil || len(lost) != 0 {
		t.Fatalf("first pass: %v, lost %v", err, lost)
	}
	time.Sleep(10 * time.Millisecond) // T-2's claim is after the heartbeat
	more, err := f.Claim(ctx, "a", []string{"T-2"}, 1, time.Minute)
	if err != nil || len(more) != 1 {
		t.Fatalf("claimed %v (%v)", more, err)
	}
	held = append(held, more...)
	kf.Close() // cut off
	now = base.Add(30 * time.Second)
	if err := k.Pass(ctx); err == nil {
		t.Fatal("a pass on a closed pool went through")
	}
	check := func(at time.Duration, want ...string) {
		t.Helper()
		now = base.Add(at)
		k.Fence()
		mu.Lock()
		defer mu.Unlock()
		var got []string
		for _, l := range lost {
			got = append(got, l.TaskID)
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("at base+%v: lost %v, want %v", at, got, want)
		}
	}
	check(30*time.Second, []string{}...)
	check(time.Minute-time.Millisecond, []string{}...) // T-1 renewed at base: its deadline is base+1m
	check(time.Minute, "T-1")
	check(time.Minute+5*time.Second, "T-1", "T-2") // T-2 claimed after base, by the database's clock
	check(3*time.Hour, "T-1", "T-2")               // once each
	want := "host a could not renew its lease on run " + held[0].RunID + " of T-1 since " + base.UTC().Format(time.RFC3339)
	if !strings.HasPrefix(lost[0].Reason, want) || !strings.Contains(lost[0].Reason, "stop this copy") {
		t.Errorf("reason %q, want it to start %q and say to stop", lost[0].Reason, want)
	}
	if err := k.Pass(ctx); err == nil || len(lost) != 2 {
		t.Errorf("a pass after the fence: %v, lost %d; want an error and no new loss", err, len(lost))
	}
}

// cutProxy forwards connections on a Unix socket to a PostgreSQL socket
// until cut: then it forwards nothing more and holds every connection,
// old or new, open, as a network split does (a statement waits for an
// answer that never comes).
type cutProxy struct {
	dir   string
	ln    net.Listener
	cut   atomic.Bool
	mu    sync.Mutex
	conns []net.Conn
}

func newCutProxy(t *testing.T, upstream string) *cutProxy {
	t.Helper()
	dir, err := os.MkdirTemp("", "crapx") // short: a socket path fits in 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, ".s.PGSQL.5432"))
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{dir: dir, ln: ln}
	t.Cleanup(p.close)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.keep(c)
			if p.cut.Load() {
				go io.Copy(io.Discard, c)
				continue
			}
			up, err := net.Dial("unix", upstream)
			if err != nil {
				c.Close()
				continue
			}
			p.keep(up)
			go p.pipe(up, c)
			go p.pipe(c, up)
		}
	}()
	return p
}

// close ends the proxy and its connections: the clients' next reads
// fail at once.
func (p *cutProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	os.RemoveAll(p.dir)
}

func (p *cutProxy) keep(c net.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
}

// pipe copies from src to dst until cut, then swallows what comes.
func (p *cutProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.cut.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// TestKeeperFencesWhenCutOff: a host whose connections to PostgreSQL
// hang (a network split: no error, no answer) hands its run to Lost by
// itself once its lease passed unrenewed, naming why, while its
// renewals hang; once only, though its passes go on failing.
func TestKeeperFencesWhenCutOff(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	direct, url := openFleet(t)
	c := pgtest.Shared(t)
	p := newCutProxy(t, filepath.Join(c.Dir(), ".s.PGSQL.5432"))
	proxied := strings.Replace(url, "host="+c.Dir(), "host="+p.dir, 1)
	if proxied == url {
		t.Fatalf("the URL %s names no host=%s", url, c.Dir())
	}
	f := fleetAt(t, proxied)
	const lease = 3 * time.Second
	held, err := f.Claim(ctx, "a", []string{"T-1"}, 1, lease)
	if err != nil || len(held) != 1 {
		t.Fatalf("claimed %v (%v)", held, err)
	}
	lost := make(chan Lost, 4)
	var lostAt atomic.Int64
	k := &Keeper{Fleet: f, Host: Host{Name: "a", Started: time.Now(), Slots: 1, Version: "test"}, Lease: lease,
		Held: func() []Lease { return held },
		Lost: func(l Lost) { lostAt.Store(time.Now().UnixNano()); lost <- l }}
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	// Wait for a renewal through the proxy, then cut it.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if leaseOf(t, direct, "T-1").Renewed.After(held[0].Renewed) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the keeper never renewed T-1's lease")
		}
	}
	cutAt := time.Now()
	p.cut.Store(true)
	var l Lost
	select {
	case l = <-lost:
	case <-time.After(time.Minute):
		t.Fatal("no run handed to Lost a minute after the cut, with a lease of 3s")
	}
	if l.TaskID != "T-1" || l.RunID != held[0].RunID || l.Holder != "" ||
		!strings.HasPrefix(l.Reason, "host a could not renew its lease on run "+held[0].RunID+" of T-1 since ") {
		t.Errorf("lost %+v: want T-1's run, that host a could not renew it", l)
	}
	if at := time.Unix(0, lostAt.Load()); at.Before(cutAt) {
		t.Errorf("handed to Lost at %v, before the cut at %v", at, cutAt)
	}
	// Its passes go on failing for two more leases: no second call.
	select {
	case l := <-lost:
		t.Errorf("handed to Lost again: %+v", l)
	case <-time.After(2 * lease):
	}
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
	p.close() // before the pool's Close, which would wait on its hung connections
}

// A Keeper's Margin brings the fence forward, so that a stopped copy has
// ended before its lease runs out in the database; never by more than
// half the lease.
func TestKeeperMargin(t *testing.T) {
	for _, tc := range []struct {
		lease, margin, want time.Duration
	}{
		{time.Minute, 0, time.Minute},
		{time.Minute, -time.Second, time.Minute},
		{time.Minute, 7 * time.Second, 53 * time.Second},
		{10 * time.Second, 7 * time.Second, 5 * time.Second},
		{2 * time.Minute, 7 * time.Second, 113 * time.Second},
	} {
		k := &Keeper{Lease: tc.lease, Margin: tc.margin}
		if got := k.fenceAfter(); got != tc.want {
			t.Errorf("lease %v, margin %v: fences after %v, want %v", tc.lease, tc.margin, got, tc.want)
		}
	}
}
