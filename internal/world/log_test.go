package world

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// clock is a settable time source for tests.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time                    { return c.now }
func (c *clock) advance(d time.Duration) time.Time { c.now = c.now.Add(d); return c.now }

func newTestLog(t *testing.T) (*Log, *clock) {
	t.Helper()
	l, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{now: t0}
	l.Now = c.Now
	l.Malformed = func(r *Record) { t.Errorf("malformed line %d: %v", r.Line, r.Err) }
	return l, c
}

// logStep logs status for agent id, with the review a verified needs
// before it.
func logStep(ctx context.Context, l *Log, status Status, id, output, need string) (Entry, error) {
	if status == StatusVerified {
		return l.Verify(ctx, id, "reviewed", output)
	}
	return l.Agent(ctx, status, id, output, need)
}

func readLines(t *testing.T, l *Log) []string {
	t.Helper()
	data, err := os.ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

func TestTransitionTable(t *testing.T) {
	legal := map[Status][]Status{
		"":             {StatusStart},
		StatusStart:    {StatusActive, StatusFailed},
		StatusActive:   {StatusFinish, StatusRetry, StatusFailed},
		StatusFinish:   {StatusVerified, StatusRetry, StatusFailed},
		StatusRetry:    {StatusActive, StatusFailed},
		StatusFailed:   {StatusRetry},
		StatusVerified: nil,
	}
	for from, next := range legal {
		for _, to := range Statuses() {
			for _, user := range []bool{false, true} {
				reviewed := !user // each of the two conditions met and not
				want := slices.Contains(next, to) && (from != StatusFailed || user) && (from != StatusFinish || to != StatusVerified || reviewed)
				t.Run(string(from)+"→"+string(to), func(t *testing.T) {
					err := checkTransition("T-1", from, user, reviewed, to)
					if got := err == nil; got != want {
						t.Fatalf("user answered %v, reviewed %v: got legal %v, want %v (err %v)", user, reviewed, got, want, err)
					}
					var te *TransitionError
					if err != nil && (!errors.As(err, &te) || te.From != from) {
						t.Errorf("got %v, want a *TransitionError from %q", err, from)
					}
					if err != nil && from != "" && !strings.Contains(err.Error(), "is "+string(from)) {
						t.Errorf("error %q does not name the current status %s", err, from)
					}
				})
			}
		}
	}
}

// TestLifecycleFlows runs seed 002's testing checklist through the log.
func TestLifecycleFlows(t *testing.T) {
	type step struct {
		kind    Kind // KindEvent: an [event:user] for the agent, or with status "review" an [event:review]
		status  Status
		wantErr string
	}
	review := step{KindEvent, "review", ""}
	tests := []struct {
		name  string
		steps []step
		want  Status
	}{
		{"verified", []step{{KindAgent, StatusStart, ""}, {KindAgent, StatusActive, ""}, {KindAgent, StatusFinish, ""}, review, {KindAgent, StatusVerified, ""}}, StatusVerified},
		{"no review, no verified", []step{{KindAgent, StatusStart, ""}, {KindAgent, StatusActive, ""}, review, {KindAgent, StatusFinish, ""},
			{KindAgent, StatusVerified, "is finish: verified needs an [event:review][T-1]"}}, StatusFinish},
		{"retry", []step{{KindAgent, StatusStart, ""}, {KindAgent, StatusActive, ""}, {KindAgent, StatusFinish, ""}, review, {KindAgent, StatusRetry, ""},
			{KindAgent, StatusActive, ""}, {KindAgent, StatusFinish, ""}, {KindAgent, StatusVerified, "needs an [event:review]"}, review, {KindAgent, StatusVerified, ""}}, StatusVerified},
		{"failure, answer, retry", []step{{KindAgent, StatusStart, ""}, {KindAgent, StatusActive, ""}, {KindAgent, StatusFailed, ""},
			{KindAgent, StatusRetry, "is failed: retry needs an [event:user][T-1]"}, {KindEvent, "", ""}, {KindAgent, StatusRetry, ""},
			{KindAgent, StatusActive, ""}, {KindAgent, StatusFinish, ""}, review, {KindAgent, StatusVerified, ""}}, StatusVerified},
		{"answer before the failure does not count", []step{{KindAgent, StatusStart, ""}, {KindEvent, "", ""}, {KindAgent, StatusActive, ""},
			{KindAgent, StatusFailed, ""}, {KindAgent, StatusRetry, "needs an [event:user]"}}, StatusFailed},
		{"no start", []step{{KindAgent, StatusActive, "has no entry yet"}}, ""},
		{"skipping a step", []step{{KindAgent, StatusStart, ""}, {KindAgent, StatusFinish, "is start: it cannot go to finish (allowed: active, failed)"}}, StatusStart},
		{"verified is the end", []step{{KindAgent, StatusStart, ""}, {KindAgent, StatusActive, ""}, {KindAgent, StatusFinish, ""},
			review, {KindAgent, StatusVerified, ""}, {KindAgent, StatusRetry, "is verified"}, {KindAgent, StatusStart, "is verified"}}, StatusVerified},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, c := newTestLog(t)
			ctx := context.Background()
			lines := 0
			for i, s := range tc.steps {
				c.advance(time.Second)
				var err error
				switch {
				case s.kind == KindEvent && s.status == "review":
					_, err = l.Event(ctx, SourceReview, "T-1", "run reviewed")
				case s.kind == KindEvent:
					_, err = l.Event(ctx, SourceUser, "T-1", "answered")
				default:
					_, err = l.Agent(ctx, s.status, "T-1", "step", "")
				}
				if s.wantErr == "" && err != nil {
					t.Fatalf("step %d (%s): %v", i, s.status, err)
				}
				if s.wantErr != "" && (err == nil || !strings.Contains(err.Error(), s.wantErr)) {
					t.Fatalf("step %d (%s): got %v, want an error containing %q", i, s.status, err, s.wantErr)
				}
				if err == nil {
					lines++
				}
			}
			if tc.want == "" {
				if data, _ := os.ReadFile(l.Path()); len(data) != 0 {
					t.Errorf("refused entries were written: %q", data)
				}
				return
			}
			if got := len(readLines(t, l)); got != lines {
				t.Errorf("got %d lines, want %d", got, lines)
			}
			a, ok, err := l.Lookup(ctx, "T-1")
			if err != nil || !ok {
				t.Fatalf("Lookup: %v, %v", ok, err)
			}
			if a.Status != tc.want {
				t.Errorf("got status %s, want %s", a.Status, tc.want)
			}
		})
	}
}

func TestCurrentKeepsCriteria(t *testing.T) {
	l, c := newTestLog(t)
	ctx := context.Background()
	must := func(_ Entry, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(l.Agent(ctx, StatusStart, "T-1", "add a flag", "tests pass"))
	c.advance(time.Minute)
	must(l.Agent(ctx, StatusActive, "T-1", "running solve", ""))
	c.advance(time.Minute)
	must(l.Event(ctx, SourceBash, "T-1", "go test"))
	must(l.Agent(ctx, StatusStart, "T-2", "fix a bug", ""))
	c.advance(time.Minute)
	must(l.Agent(ctx, StatusFailed, "T-2", "captcha", "solve the captcha"))

	got, err := l.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []Agent{
		{ID: "T-1", Status: StatusActive, Since: t0.Add(time.Minute), Output: "running solve", Criteria: "tests pass", LastSeen: t0.Add(2 * time.Minute)},
		{ID: "T-2", Status: StatusFailed, Since: t0.Add(3 * time.Minute), Output: "captcha", Need: "solve the captcha", LastSeen: t0.Add(3 * time.Minute)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Current (-want +got):\n%s", diff)
	}
}

func TestLimbo(t *testing.T) {
	l, c := newTestLog(t)
	ctx := context.Background()
	steps := []struct {
		id     string
		status Status
		event  bool
	}{
		{"quiet", StatusStart, false}, // t0+1m, then silent
		{"done", StatusStart, false},  // settles
		{"busy", StatusStart, false},  // keeps logging events
		{"done", StatusActive, false},
		{"broken", StatusStart, false},
		{"done", StatusFinish, false},
		{"broken", StatusFailed, false}, // settled: failed is not limbo
		{"done", StatusVerified, false},
		{"waiting", StatusStart, false},
		{"waiting", StatusActive, false},
		{"waiting", StatusFinish, false}, // finished, never verified
		{"busy", "", true},               // an event counts as activity
		{"ahead", StatusStart, false},    // stamped an hour ahead: a clock stepped back
	}
	for _, s := range steps {
		c.advance(time.Minute)
		var err error
		switch {
		case s.event:
			_, err = l.Event(ctx, SourceBash, s.id, "still working")
		case s.id == "ahead":
			_, err = l.Append(ctx, Entry{Time: c.now.Add(time.Hour), Kind: KindAgent, Status: s.status, ID: s.id})
			c.advance(-time.Minute)
		default:
			_, err = logStep(ctx, l, s.status, s.id, "", "")
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// Now t0+12m. quiet last moved at t0+1m, waiting at t0+11m, busy at
	// t0+12m; ahead's entry is stamped t0+1h13m, in the future: how long it
	// has been silent cannot be told, so every --limbo lists it.
	tests := []struct {
		silent time.Duration
		want   []string
	}{
		{30 * time.Second, []string{"quiet", "waiting", "ahead"}},
		{5 * time.Minute, []string{"quiet", "ahead"}},
		{11 * time.Minute, []string{"ahead"}},
	}
	for _, tc := range tests {
		t.Run(tc.silent.String(), func(t *testing.T) {
			agents, err := l.Limbo(ctx, tc.silent)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range agents {
				got = append(got, a.ID)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Limbo(%v) (-want +got):\n%s", tc.silent, diff)
			}
		})
	}
}

func TestAppendRefuses(t *testing.T) {
	l, _ := newTestLog(t)
	ctx := context.Background()
	if _, err := l.Event(ctx, "slack", "x", "y"); err == nil || !strings.Contains(err.Error(), `unknown event source "slack"`) {
		t.Errorf("got %v, want an unknown-source error", err)
	}
	if _, err := l.Event(ctx, SourceBash, "", "y"); err == nil {
		t.Error("got nil, want an error for an empty identifier")
	}
	big := strings.Repeat("x", MaxLineBytes)
	if _, err := l.Event(ctx, SourceBash, "x", big); err == nil || !strings.Contains(err.Error(), "over the log's limit") {
		t.Errorf("got %v, want a size error", err)
	}
	if data, _ := os.ReadFile(l.Path()); len(data) != 0 {
		t.Errorf("refused entries were written: %d bytes", len(data))
	}
}

// TestTornLine: a writer that died mid-line leaves a piece without newline;
// the next append starts a new line, and readers report the piece.
func TestTornLine(t *testing.T) {
	l, _ := newTestLog(t)
	ctx := context.Background()
	if err := os.WriteFile(l.Path(), []byte("[2025-01-02T03:04:05.000Z][event:bash][x] fine\n[2025-01-02T03:0"), 0o644); err != nil {
		t.Fatal(err)
	}
	var malformed []int64
	l.Malformed = func(r *Record) { malformed = append(malformed, r.Line) }
	if _, err := l.Agent(ctx, StatusStart, "T-1", "go", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Event(ctx, SourceBash, "y", "after"); err != nil {
		t.Fatal(err)
	}
	var got []string
	if _, err := l.Scan(ctx, Position{}, func(r *Record) error {
		if r.Err != nil {
			got = append(got, "malformed "+r.Err.Error())
		} else {
			got = append(got, r.Entry.ID)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{"x", "malformed line 2: unterminated timestamp", "T-1", "y"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestIndexFollowsTheLog: the side index is a view; when the log changes
// under it, it is rebuilt from the log.
func TestIndexFollowsTheLog(t *testing.T) {
	l, _ := newTestLog(t)
	ctx := context.Background()
	for _, s := range []Status{StatusStart, StatusActive} {
		if _, err := l.Agent(ctx, s, "T-1", "", ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Current(ctx); err != nil {
		t.Fatal(err)
	}
	idx := filepath.Join(l.dir, indexName)
	if _, err := os.Stat(idx); err != nil {
		t.Fatalf("no side index after a replay: %v", err)
	}
	status := func(l *Log) Status {
		t.Helper()
		a, ok, err := l.Lookup(ctx, "T-1")
		if err != nil || !ok {
			t.Fatalf("Lookup: %v %v", ok, err)
		}
		return a.Status
	}
	tests := []struct {
		name string
		edit func()
		want Status
	}{
		{"appended by another process", func() {
			other, _ := Open(l.dir)
			if _, err := other.Agent(ctx, StatusFinish, "T-1", "", ""); err != nil {
				t.Fatal(err)
			}
		}, StatusFinish},
		{"rewritten by hand, same length", func() {
			data, _ := os.ReadFile(l.Path())
			data = []byte(strings.Replace(string(data), "agent:finish", "agent:failed", 1))
			if err := os.WriteFile(l.Path(), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}, StatusFailed},
		{"replaced by a shorter file", func() {
			line, _ := Format(Entry{Time: t0, Kind: KindAgent, Status: StatusStart, ID: "T-1"})
			if err := os.WriteFile(l.Path()+".new", []byte(line+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(l.Path()+".new", l.Path()); err != nil {
				t.Fatal(err)
			}
		}, StatusStart},
		{"index garbage", func() {
			if err := os.WriteFile(idx, []byte("{not json"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, StatusStart},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.edit()
			if got := status(l); got != tc.want {
				t.Errorf("same Log: got %s, want %s", got, tc.want)
			}
			fresh, _ := Open(l.dir)
			if got := status(fresh); got != tc.want {
				t.Errorf("new Log: got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestNoteEventWarns(t *testing.T) {
	var warn strings.Builder
	NoteEvent(context.Background(), &warn, filepath.Join(t.TempDir(), "missing"), SourceIndex, "repo", "indexed 3 files")
	if !strings.HasPrefix(warn.String(), "warning: not recorded in the world log: open world log:") {
		t.Errorf("got %q, want a warning", warn.String())
	}
	dir := t.TempDir()
	warn.Reset()
	NoteEvent(context.Background(), &warn, dir, SourceIndex, "repo", "indexed 3 files")
	data, _ := os.ReadFile(Path(dir))
	if warn.Len() != 0 || !strings.Contains(string(data), "][event:index][repo] indexed 3 files\n") {
		t.Errorf("got warning %q and log %q", warn.String(), data)
	}
}

func TestIndexRoundTrip(t *testing.T) {
	st := &state{Dev: 7, Ino: 42, Pos: Position{Offset: 1234, Line: 9}, Tail: []byte("end\n"), Current: true, Vouched: 99, SkipTotal: 1025,
		byID: map[string]*agentState{}}
	for i, id := range []string{"T-1", "with\ttab", "a [b] c", "ünï\\code", "x\n"} {
		st.byID[id] = &agentState{ID: id, Status: Statuses()[i], Since: int64(i), Off: int64(10 * i), StartOff: int64(i - 1), Seen: int64(100 + i),
			UserAfter: i%2 == 0, Reviewed: i%3 == 0, Retries: i}
	}
	st.Skips = []skipState{
		{Off: 5, Line: 2, Err: TransitionError{ID: "T-1", To: StatusVerified}},
		{Off: 50, Line: 7, Err: TransitionError{ID: "a [b]\tc", From: StatusFinish, To: StatusVerified, NeedsReview: true}},
		{Off: 60, Line: 8, Err: TransitionError{ID: "T-2", From: StatusFailed, To: StatusRetry, NeedsUser: true}},
	}
	path := filepath.Join(t.TempDir(), indexName)
	if err := st.save(path); err != nil {
		t.Fatal(err)
	}
	got := readIndex(path)
	if got == nil {
		t.Fatal("readIndex: nil")
	}
	// Each agent is found alone, its line parsed when asked for; an id
	// the index lacks, before, between or after theirs, is none.
	for id, want := range st.byID {
		a, err := got.get(id)
		if err != nil || a == nil || *a != *want {
			t.Errorf("get(%q) = %+v, %v; want %+v", id, a, err, want)
		}
	}
	for _, id := range []string{"A", "T-0", "T-2", "zz", "x", "ünï"} {
		if a, err := got.get(id); a != nil || err != nil {
			t.Errorf("get(%q) = %+v, %v; want none", id, a, err)
		}
	}
	again := readIndex(path)
	if _, err := again.all(); err != nil {
		t.Fatal(err)
	}
	if _, err := got.all(); err != nil {
		t.Fatal(err)
	}
	for _, read := range []*state{got, again} {
		if diff := cmp.Diff(st, read, cmp.AllowUnexported(state{})); diff != "" {
			t.Errorf("(-saved +read):\n%s", diff)
		}
	}
	// A state read in part saves what one read in full does: its unread
	// lines are copied, an agent changed since replaces its line.
	part := readIndex(path)
	changed, err := part.get("with\ttab")
	if err != nil || changed == nil {
		t.Fatalf("get: %+v, %v", changed, err)
	}
	changed.Status, changed.Retries = StatusFinish, 7
	part.byID["new"] = &agentState{ID: "new", Status: StatusStart, StartOff: 5}
	st.byID["with\ttab"].Status, st.byID["with\ttab"].Retries = StatusFinish, 7
	st.byID["new"] = &agentState{ID: "new", Status: StatusStart, StartOff: 5}
	fullPath, partPath := filepath.Join(t.TempDir(), indexName), filepath.Join(t.TempDir(), indexName)
	if err := st.save(fullPath); err != nil {
		t.Fatal(err)
	}
	if err := part.save(partPath); err != nil {
		t.Fatal(err)
	}
	full, _ := os.ReadFile(fullPath)
	if saved, _ := os.ReadFile(partPath); string(saved) != string(full) {
		t.Errorf("a state read in part saved\n%s\nwant\n%s", saved, full)
	}
	// An index cut short is not read.
	for _, n := range []int{len(full) - 1, len(full) - 60, strings.Index(string(full), "T-1") + 2} {
		if err := os.WriteFile(path, full[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		if st := readIndex(path); st != nil {
			if _, err := st.all(); err == nil {
				t.Errorf("an index cut to %d bytes was read whole", n)
			}
		}
	}
	// An empty log's state (no tail) reads back too.
	empty := &state{byID: map[string]*agentState{}}
	if err := empty.save(path); err != nil {
		t.Fatal(err)
	}
	if got := readIndex(path); got == nil || got.Pos.Offset != 0 || len(got.Tail) != 0 {
		t.Errorf("empty state: got %+v", got)
	}
}

func TestBegin(t *testing.T) {
	l, _ := newTestLog(t)
	ctx := context.Background()
	status := func() Status {
		a, _, err := l.Lookup(ctx, "T-1")
		if err != nil {
			t.Fatal(err)
		}
		return a.Status
	}
	if err := l.Begin(ctx, "T-1", "add a flag", "tests pass"); err != nil {
		t.Fatal(err)
	}
	if got := status(); got != StatusActive {
		t.Errorf("got %s, want active", got)
	}
	var te *TransitionError
	if err := l.Begin(ctx, "T-1", "again", ""); !errors.As(err, &te) || te.From != StatusActive {
		t.Errorf("got %v, want a TransitionError from active", err)
	}
	for _, s := range []Status{StatusFinish, StatusRetry} {
		if _, err := l.Agent(ctx, s, "T-1", "", ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Begin(ctx, "T-1", "retrying", ""); err != nil {
		t.Fatal(err)
	}
	a, _, _ := l.Lookup(ctx, "T-1")
	if a.Status != StatusActive || a.Criteria != "tests pass" || a.Retries != 1 {
		t.Errorf("got %+v, want active with its criteria and one retry", a)
	}
	if got := len(readLines(t, l)); got != 5 {
		t.Errorf("got %d lines, want 5", got)
	}
}

// TestIndexLookupLarge finds each of thousands of agents in the side index
// by its line alone (binary search over the file, lines of every length,
// ids escaped or not), and no agent for ids between theirs.
func TestIndexLookupLarge(t *testing.T) {
	st := &state{Dev: 1, Ino: 2, byID: map[string]*agentState{}}
	for i := range 3000 {
		id := fmt.Sprintf("t-%08x", i*7919)
		switch i % 5 {
		case 1:
			id += strings.Repeat("long", i%300) // lines up to some 1,200 bytes
		case 2:
			id += "\t[tab]\n"
		}
		st.byID[id] = &agentState{ID: id, Status: Statuses()[i%len(Statuses())], Since: int64(i), Off: int64(i * 10), StartOff: -1, Retries: i % 4}
	}
	path := filepath.Join(t.TempDir(), indexName)
	if err := st.save(path); err != nil {
		t.Fatal(err)
	}
	got := readIndex(path)
	if got == nil || got.rest == nil {
		t.Fatalf("readIndex: %+v", got)
	}
	defer got.release()
	for id, want := range st.byID {
		a, err := got.get(id)
		if err != nil || a == nil || *a != *want {
			t.Fatalf("get(%q) = %+v, %v; want %+v", id, a, err, want)
		}
		if a, err := got.get(id + "!"); a != nil || err != nil {
			t.Fatalf("get(%q) = %+v, %v; want none", id+"!", a, err)
		}
	}
	for _, id := range []string{"", "a", "t-", "t-00000000 ", "zzz"} {
		if a, err := got.get(id); a != nil || err != nil {
			t.Errorf("get(%q) = %+v, %v; want none", id, a, err)
		}
	}
}
