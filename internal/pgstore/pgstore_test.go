package pgstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/pgtest"
	"github.com/cra-dev/cra/internal/world"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// clock is a fixed clock both backends share, moved by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(1500 * time.Millisecond)
	return c.t
}

// openPG returns a PostgreSQL world log on a new database of the test
// cluster, its schema made by Init.
func openPG(t testing.TB, now func() time.Time) *Log {
	t.Helper()
	ctx := context.Background()
	url := pgtest.DB(t)
	if _, _, err := Init(ctx, url); err != nil {
		t.Fatal(err)
	}
	l, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	if now != nil {
		l.Now = now
	}
	return l
}

func openFile(t testing.TB, now func() time.Time) *world.Log {
	t.Helper()
	l, err := world.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if now != nil {
		l.Now = now
	}
	return l
}

// pair is the two backends, written and read alike.
type pair struct {
	t     *testing.T
	file  *world.Log
	pg    *Log
	fileC *clock
	pgC   *clock
}

func newPair(t *testing.T) *pair {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p := &pair{t: t, fileC: &clock{t: start}, pgC: &clock{t: start}}
	p.file = openFile(t, p.fileC.now)
	p.pg = openPG(t, p.pgC.now)
	return p
}

// both runs op on each backend and fails unless both return the same.
func (p *pair) both(what string, op func(world.Store) any) any {
	p.t.Helper()
	a, b := op(p.file), op(p.pg)
	if !reflect.DeepEqual(a, b) {
		as, bs := clip(fmt.Sprintf("%#v", a)), clip(fmt.Sprintf("%#v", b))
		if x, y, ok := firstDiff(a, b); ok {
			as, bs = clip(x), clip(y)
		}
		p.t.Errorf("%s:\nfile       %s\npostgresql %s", what, as, bs)
	}
	return a
}

// firstDiff returns the first elements of two string lists that differ.
func firstDiff(a, b any) (string, string, bool) {
	x, ok1 := a.([]string)
	y, ok2 := b.([]string)
	if !ok1 || !ok2 {
		return "", "", false
	}
	for i := range max(len(x), len(y)) {
		var u, v string
		if i < len(x) {
			u = x[i]
		}
		if i < len(y) {
			v = y[i]
		}
		if u != v {
			return fmt.Sprintf("[%d] %s", i, u), fmt.Sprintf("[%d] %s", i, v), true
		}
	}
	return "", "", false
}

func clip(s string) string {
	if len(s) > 600 {
		return s[:300] + " … " + s[len(s)-300:]
	}
	return s
}

// records renders what a reader gets, all of it, for comparison.
func records(run func(fn func(*world.Record) error) error) []string {
	var out []string
	err := run(func(r *world.Record) error {
		s := fmt.Sprintf("%d@%d %q %+v", r.Line, r.Offset, r.Raw, r.Entry)
		if r.Err != nil {
			s += " malformed: " + r.Err.Error()
		}
		if r.Skipped != nil {
			s += " skipped: " + r.Skipped.Error()
		}
		out = append(out, s)
		return nil
	})
	if err != nil {
		out = append(out, "error: "+err.Error())
	}
	return out
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// oddOutputs are outputs that test the escaping: control bytes, invalid
// UTF-8, separators, brackets.
var oddOutputs = []string{
	"plain", "two\nlines\r\n\ttab", "nul \x00 del \x7f esc \x1b[2J", "bad utf8 \xff\xfe end",
	"pipe | need: not a need", "brackets [x] and \\ backslash", "c1 \u0085 and \u2028", "",
	strings.Repeat("long ", 2000),
}

// TestBackendsAgree: one series of appends, refused ones among them,
// through the file and PostgreSQL; every reader returns the same from
// both, and Export the same bytes.
func TestBackendsAgree(t *testing.T) {
	ctx := context.Background()
	p := newPair(t)
	appendAll := func(s world.Store) any {
		var out []string
		add := func(e world.Entry, err error) {
			out = append(out, fmt.Sprintf("%+v %s", e, errText(err)))
		}
		for i, o := range oddOutputs {
			add(s.Event(ctx, world.SourceBash, fmt.Sprintf("ev-%d", i), o))
		}
		add(s.Event(ctx, "nosuch", "x", "unknown source"))
		for _, id := range []string{"T-1", "T-2", "T\x00[3]\n"} {
			out = append(out, errText(s.Begin(ctx, id, "run 1 "+oddOutputs[1], "tests pass | really")))
		}
		add(s.Agent(ctx, world.StatusVerified, "T-1", "too early", ""))
		add(s.Agent(ctx, world.StatusFinish, "T-1", "done", ""))
		add(s.Verify(ctx, "T-1", "review ok", "verified"))
		add(s.Agent(ctx, world.StatusFailed, "T-2", "stuck", "a person must answer"))
		add(s.Agent(ctx, world.StatusRetry, "T-2", "again", ""))
		add(s.Event(ctx, world.SourceUser, "T-2", "answered"))
		add(s.Agent(ctx, world.StatusRetry, "T-2", "again", ""))
		add(s.Agent(ctx, world.StatusActive, "T-9", "never started", ""))
		add(s.Event(ctx, world.SourceReview, "T\x00[3]\n", "seen"))
		add(s.Append(ctx, world.Entry{Time: time.Date(2020, 5, 6, 7, 8, 9, 123456789, time.UTC), Kind: world.KindEvent, Source: world.SourceAPI, ID: "old", Output: "stamped"}))
		return out
	}
	p.both("appends", appendAll)

	var fileOut, pgOut bytes.Buffer
	if err := p.file.Export(ctx, &fileOut); err != nil {
		t.Fatal(err)
	}
	if err := p.pg.Export(ctx, &pgOut); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fileOut.Bytes(), pgOut.Bytes()) {
		t.Errorf("exports differ:\nfile\n%s\npostgresql\n%s", clip(fileOut.String()), clip(pgOut.String()))
	}
	if data, _ := os.ReadFile(p.file.Path()); !bytes.Equal(data, pgOut.Bytes()) {
		t.Errorf("the PostgreSQL export is not the file world.log")
	}
	if n := bytes.Count(pgOut.Bytes(), []byte("\n")); n < 20 {
		t.Fatalf("export holds %d lines: the appends did not land", n)
	}
	readAll(t, p)
}

// readAll compares every reader of the two backends.
func readAll(t *testing.T, p *pair) {
	ctx := context.Background()
	since := time.Date(2026, 1, 2, 3, 4, 20, 0, time.UTC)
	filters := map[string]world.Filter{
		"all":      {},
		"agents":   {Kind: world.KindAgent},
		"events":   {Kind: world.KindEvent},
		"statuses": {Statuses: []world.Status{world.StatusRetry, world.StatusFailed}},
		"sources":  {Sources: []world.Source{world.SourceUser, world.SourceReview}},
		"ids":      {IDs: []string{"T-2", "T\x00[3]\n", "ev-3"}},
		"since":    {Since: since},
		"until":    {Until: since},
		"window":   {Since: since, Until: since.Add(10 * time.Second)},
		"text":     {Text: `\xff`},
		"text2":    {Text: "need"},
		"nothing":  {Statuses: []world.Status{world.StatusStart}, Sources: []world.Source{world.SourceBash}},
		"mixed":    {Kind: world.KindAgent, IDs: []string{"T-1"}, Text: "verified"},
	}
	for name, f := range filters {
		p.both("select "+name, func(s world.Store) any {
			return records(func(fn func(*world.Record) error) error { return s.Select(ctx, f, fn) })
		})
		for _, n := range []int{0, 1, 3, 1000} {
			p.both(fmt.Sprintf("tail %d %s", n, name), func(s world.Store) any {
				var end world.Position
				recs := records(func(fn func(*world.Record) error) error {
					var err error
					end, err = s.Tail(ctx, n, f, fn)
					return err
				})
				return append(recs, fmt.Sprintf("end %+v", end))
			})
		}
	}
	// Scan from the middle, at the position a Tail returned.
	var mid world.Position
	if _, err := p.file.Tail(ctx, 0, world.Filter{}, nil); err != nil {
		t.Fatal(err)
	}
	records(func(fn func(*world.Record) error) error {
		return p.file.Select(ctx, world.Filter{}, func(r *world.Record) error {
			if r.Line == 10 {
				mid = world.Position{Offset: r.Offset, Line: r.Line - 1}
			}
			return nil
		})
	})
	p.both("scan from the middle", func(s world.Store) any {
		var end world.Position
		recs := records(func(fn func(*world.Record) error) error {
			var err error
			end, err = s.Scan(ctx, mid, fn)
			return err
		})
		return append(recs, fmt.Sprintf("end %+v", end))
	})
	p.both("current", func(s world.Store) any { a, err := s.Current(ctx); return fmt.Sprintf("%+v %v", a, err) })
	p.both("current in", func(s world.Store) any {
		a, err := s.CurrentIn(ctx, world.StatusRetry, world.StatusActive)
		return fmt.Sprintf("%+v %v", a, err)
	})
	p.both("answered failed", func(s world.Store) any { a, err := s.AnsweredFailed(ctx); return fmt.Sprintf("%+v %v", a, err) })
	p.both("statuses", func(s world.Store) any { a, err := s.Statuses(ctx); return fmt.Sprintf("%v %v", a, err) })
	for _, silent := range []time.Duration{0, time.Second, time.Hour} {
		p.both(fmt.Sprint("count ", silent), func(s world.Store) any {
			n, err := s.CountAgents(ctx, silent, func(e world.Entry) bool { return e.Status != world.StatusVerified })
			return fmt.Sprint(n, err)
		})
	}
	for _, id := range []string{"T-1", "T-2", "T\x00[3]\n", "none"} {
		p.both("lookup "+id, func(s world.Store) any { a, ok, err := s.Lookup(ctx, id); return fmt.Sprintf("%+v %v %v", a, ok, err) })
	}
	p.both("skipped", func(s world.Store) any {
		sk, n, err := s.Skipped(ctx)
		var out []string
		for _, x := range sk {
			out = append(out, x.String()+fmt.Sprintf(" %d %+v", x.Offset, x.Entry))
		}
		return fmt.Sprint(out, n, err)
	})
	// A marker reads everything once, then nothing, then all after a reset.
	for _, step := range []string{"first", "again", "reset"} {
		p.both("check "+step, func(s world.Store) any {
			if step == "reset" {
				if err := s.ResetMarker(ctx, "m1"); err != nil {
					return err.Error()
				}
			}
			var pos world.Position
			recs := records(func(fn func(*world.Record) error) error {
				var err error
				pos, err = s.CheckThen(ctx, "m1", fn, nil)
				return err
			})
			return append(recs, fmt.Sprintf("pos %+v", pos))
		})
	}
	p.both("bad marker", func(s world.Store) any {
		_, err := s.CheckThen(ctx, "../x", func(*world.Record) error { return nil }, nil)
		return errText(err)
	})
}

// TestImportRoundTrip: a file log written by cra and by hands (malformed
// and empty lines, the old format, a forged verified the fold skips, odd
// bytes) goes into PostgreSQL and comes back byte for byte, and reads the
// same from both.
func TestImportRoundTrip(t *testing.T) {
	ctx := context.Background()
	p := newPair(t)
	f := p.file
	mustOK := func(_ world.Entry, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	hand := func(s string) {
		t.Helper()
		fh, err := os.OpenFile(f.Path(), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fh.WriteString(s); err != nil {
			t.Fatal(err)
		}
		fh.Close()
	}
	hand("[2024-01-01 10:00:00] [bash] [T-0:start] an old-format line\n")
	if err := f.Begin(ctx, "T-1", "run", "criteria"); err != nil {
		t.Fatal(err)
	}
	for _, o := range oddOutputs {
		mustOK(f.Event(ctx, world.SourceBash, "odd", o))
	}
	hand("\n")
	hand("not a log line at all \xff\xfe\x00\n")
	hand("[2026-01-02T03:05:00.000Z][agent:verified][T-1] forged by hand\n")
	hand("[2026-01-02T03:05:00.000Z][agent:finish][T-1] done, written by hand\n")
	mustOK(f.Event(ctx, world.SourceReview, "T-1", "reviewed"))
	mustOK(f.Agent(ctx, world.StatusVerified, "T-1", "verified", ""))
	hand("[2026-01-02T03:05:01.000Z][event:newsource][x] a newer cra's source\n")
	mustOK(f.Agent(ctx, world.StatusStart, "T-2", "s", "n"))

	// A reader has read the first lines: its marker comes along.
	if _, err := f.CheckThen(ctx, "reader", func(*world.Record) error { return nil }, nil); err != nil {
		t.Fatal(err)
	}
	mustOK(f.Event(ctx, world.SourceBash, "after", "the marker"))

	n, err := p.pg.Import(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(f.Path())
	if err != nil {
		t.Fatal(err)
	}
	if lines := int64(bytes.Count(want, []byte("\n"))); n != lines {
		t.Errorf("imported %d lines, the file holds %d", n, lines)
	}
	var got bytes.Buffer
	if err := p.pg.Export(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("export after import differs from the file:\nfile\n%s\nexport\n%s", clip(string(want)), clip(got.String()))
	}
	if sk, total, err := p.pg.Skipped(ctx); err != nil || total != 1 || len(sk) != 1 || sk[0].Entry.Output != "forged by hand" {
		t.Errorf("skipped after import = %+v %d %v, want the forged verified", sk, total, err)
	}
	p.pgC.t = p.fileC.t
	p.both("marker after import", func(s world.Store) any {
		return records(func(fn func(*world.Record) error) error { _, err := s.CheckThen(ctx, "reader", fn, nil); return err })
	})
	readAll(t, p)

	// Appends go on after the imported lines, numbered and placed as in
	// the file.
	p.both("append after import", func(s world.Store) any {
		e, err := s.Agent(ctx, world.StatusActive, "T-2", "go", "")
		return fmt.Sprintf("%+v %v", e, err)
	})
	p.both("tail after import", func(s world.Store) any {
		return records(func(fn func(*world.Record) error) error { _, err := s.Tail(ctx, 2, world.Filter{}, fn); return err })
	})

	if _, err := p.pg.Import(ctx, f); err == nil || !strings.Contains(err.Error(), "already holds") {
		t.Errorf("a second import = %v, want a refusal: the log is not empty", err)
	}
}

// TestImportRefusesTornTail: a log that ends mid-line is not imported
// (the line is being written, or torn), and nothing is written.
func TestImportRefusesTornTail(t *testing.T) {
	ctx := context.Background()
	f := openFile(t, nil)
	if _, err := f.Event(ctx, world.SourceBash, "x", "whole"); err != nil {
		t.Fatal(err)
	}
	fh, _ := os.OpenFile(f.Path(), os.O_APPEND|os.O_WRONLY, 0)
	fh.WriteString("[2026-01-02T03:05:00.000Z][event:bash][x] torn")
	fh.Close()
	pg := openPG(t, nil)
	if _, err := pg.Import(ctx, f); err == nil || !strings.Contains(err.Error(), "after its last complete line") {
		t.Fatalf("import of a torn log = %v, want a refusal naming the torn tail", err)
	}
	var out bytes.Buffer
	if err := pg.Export(ctx, &out); err != nil || out.Len() != 0 {
		t.Fatalf("after a refused import the log holds %q (%v), want nothing", out.Bytes(), err)
	}
}

// TestMigrateTakesTurns: processes migrating one database at once all
// succeed, each migration is applied once, and the log opens; a database
// with no schema, or a newer one, is refused with the command that fixes it.
func TestMigrateTakesTurns(t *testing.T) {
	ctx := context.Background()
	url := pgtest.DB(t)
	if _, err := Open(ctx, url); err == nil || !strings.Contains(err.Error(), "cra fleet init") {
		t.Fatalf("Open before init = %v, want 'run cra fleet init'", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	tos := make([]int, 4)
	for i := range errs {
		wg.Go(func() { _, tos[i], errs[i] = Init(ctx, url) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil || tos[i] != SchemaVersion() {
			t.Errorf("Init %d = %d, %v; want %d", i, tos[i], err, SchemaVersion())
		}
	}
	l, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var rows int
	if err := l.pool.QueryRow(ctx, "SELECT count(*) FROM cra_schema").Scan(&rows); err != nil || rows != SchemaVersion() {
		t.Errorf("cra_schema holds %d rows (%v), want one per migration, %d", rows, err, SchemaVersion())
	}
	if from, to, err := Init(ctx, url); err != nil || from != to {
		t.Errorf("Init on a current schema = %d→%d, %v; want nothing to do", from, to, err)
	}
	if _, err := l.pool.Exec(ctx, "INSERT INTO cra_schema (version, name) VALUES (999, 'future')"); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, url); err == nil || !strings.Contains(err.Error(), "upgrade cra") {
		t.Errorf("Open of a newer schema = %v, want 'upgrade cra'", err)
	}
	if _, _, err := Init(ctx, url); err == nil || !strings.Contains(err.Error(), "upgrade cra") {
		t.Errorf("Init of a newer schema = %v, want 'upgrade cra'", err)
	}
}

// TestConcurrentAppendsAndFollow: writers on several connections append at
// once; the lines are numbered without a gap, at the offsets the export
// puts them, and a follower sees each once, in order, woken by the
// appends' notifications alone (it rereads only after an hour).
func TestConcurrentAppendsAndFollow(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l := openPG(t, nil)
	l.recheck = time.Hour
	const writers, each = 4, 40
	var (
		mu   sync.Mutex
		seen []string
	)
	followCtx, stopFollow := context.WithCancel(ctx)
	followed := make(chan error, 1)
	go func() {
		followed <- l.Follow(followCtx, world.Position{}, world.Filter{Kind: world.KindEvent}, func(r *world.Record) error {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, fmt.Sprintf("%d@%d %s", r.Line, r.Offset, r.Raw))
			if len(seen) == writers*each {
				stopFollow()
			}
			return nil
		})
	}()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if _, err := l.Event(ctx, world.SourceBash, fmt.Sprintf("w%d", w), fmt.Sprintf("line %d", i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := <-followed; !errors.Is(err, context.Canceled) {
		t.Fatalf("follow ended with %v", err)
	}
	var out bytes.Buffer
	if err := l.Export(ctx, &out); err != nil {
		t.Fatal(err)
	}
	var want []string
	off := 0
	for i, line := range bytes.SplitAfter(out.Bytes(), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		want = append(want, fmt.Sprintf("%d@%d %s", i+1, off, line[:len(line)-1]))
		off += len(line)
	}
	if len(want) != writers*each || !reflect.DeepEqual(seen, want) {
		t.Errorf("follower saw %d lines, export holds %d; they differ: %v", len(seen), len(want), !reflect.DeepEqual(seen, want))
	}
	// The file holding the same bytes reads them at the same places.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "world.log"), out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	fl, err := world.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	fileRecs := records(func(fn func(*world.Record) error) error { return fl.Select(ctx, world.Filter{}, fn) })
	pgRecs := records(func(fn func(*world.Record) error) error { return l.Select(ctx, world.Filter{}, fn) })
	if !reflect.DeepEqual(fileRecs, pgRecs) {
		t.Errorf("the file of the export reads otherwise than the database")
	}
}

// TestFollowAnotherHostsAppends: a follower on one host resumes after the
// line id it was given and gets, live, the lines another host appends,
// through LISTEN/NOTIFY (it rereads only after an hour).
func TestFollowAnotherHostsAppends(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := pgtest.DB(t)
	if _, _, err := Init(ctx, url); err != nil {
		t.Fatal(err)
	}
	open := func() *Log {
		l, err := Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
		return l
	}
	a, b := open(), open()
	b.recheck = time.Hour
	for i := range 3 {
		if _, err := a.Event(ctx, world.SourceBash, "T-1", fmt.Sprintf("before %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan *world.Record, 16)
	followCtx, stop := context.WithCancel(ctx)
	defer stop()
	followed := make(chan error, 1)
	go func() {
		followed <- b.Follow(followCtx, world.Position{Line: 2}, world.Filter{}, func(r *world.Record) error {
			got <- r
			return nil
		})
	}()
	next := func() *world.Record {
		t.Helper()
		select {
		case r := <-got:
			return r
		case <-ctx.Done():
			t.Fatal("no line came: the follower was not woken")
			return nil
		}
	}
	if r := next(); r.Line != 3 || r.Entry.Output != "before 2" {
		t.Fatalf("first line followed: %d %q, want line 3, 'before 2' (resumed after line 2)", r.Line, r.Entry.Output)
	}
	// An event of an ID with no agent entry notifies too.
	if _, err := a.Event(ctx, world.SourceBash, "X-9", "live"); err != nil {
		t.Fatal(err)
	}
	if r := next(); r.Line != 4 || r.Entry.Output != "live" {
		t.Fatalf("live line: %d %q, want line 4, 'live'", r.Line, r.Entry.Output)
	}
	var listeners int
	if err := a.pool.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE query = 'LISTEN "+notifyChannel+"'").Scan(&listeners); err != nil {
		t.Fatal(err)
	}
	if listeners != 1 {
		t.Errorf("%d connections listen on %s, want the follower's one", listeners, notifyChannel)
	}
	stop()
	if err := <-followed; !errors.Is(err, context.Canceled) {
		t.Fatalf("follow ended with %v, want context.Canceled", err)
	}
}

// HasMarker tells a marker that was never set from one at any line, the
// first line's included, and refuses a name no marker may have.
func TestHasMarker(t *testing.T) {
	ctx := context.Background()
	l := openPG(t, nil)
	if has, err := l.HasMarker(ctx, "notify"); err != nil || has {
		t.Fatalf("a new log has the marker: %v %v", has, err)
	}
	if _, err := l.CheckThen(ctx, "notify", func(*world.Record) error { return nil }, nil); err != nil {
		t.Fatal(err)
	}
	if has, err := l.HasMarker(ctx, "notify"); err != nil || !has {
		t.Errorf("a marker set on an empty log is missing: %v %v", has, err)
	}
	if has, err := l.HasMarker(ctx, "other"); err != nil || has {
		t.Errorf("another name has a marker: %v %v", has, err)
	}
	if _, err := l.HasMarker(ctx, "../x"); err == nil {
		t.Error("a marker name with a path was accepted")
	}
}
